"""CuPy overrides of the cascade's kernels (``cascade_evaluate``, ``cascade_evaluate_plan``,
``cascade_integrals``, ``cascade_candidates``) and of the scan kernels both detectors share
(``cascade_pyramid``, ``cascade_compact``, ``cascade_group``), running ``_cascade_cuda.cu``.
``_cascade.py`` and ``_scan/_kernels.py`` hold the portable versions (the reference); importing
this module (``portcv.detect`` does) registers the overrides.

Window evaluation: one thread per window, ``STAGES_BLOCK`` threads per block, a 1-D grid of
``ceil(K / STAGES_BLOCK)`` blocks; every scale of the packed pyramid is covered by one launch
(the thesis, section 3.1). On a plan, the stages from ``DEEP_STAGE`` on run on the windows
still alive with ``DEEP_LANES`` threads per window (a resident grid looping over them). The
cascade's arrays are read straight from global memory through the read-only cache: the threads
of a warp read the same node at the same time (a broadcast), so staging them in shared memory
would buy little. Depth-first evaluation is one launch with
stages ``[0, S)``; breadth-first is ``[0, split)`` over every window, ``cascade_compact``, then
``[split, S)`` on the plan. With ``count`` (a 0-d int32 device array: a plan's length, never
copied to the host) only the first ``count`` windows are evaluated and the rest get status 0.

Compaction (Pertsau and Uvarov's mask -> plan): three launches, no atomics, ascending order:
per-tile counts (tiles of ``COMPACT_BLOCK * COMPACT_ITEMS`` windows), one block scanning the tile
counts into offsets (and writing ``count = min(total, capacity)``), per-tile block scans and a
scatter; slots ``count..capacity-1`` hold zeros. OpenCV's stage-0 skip rule is evaluated in the
same kernels (see ``_cascade_cuda.cu``).

The rest of a detection (``portcv.detect._cascade._scan.run_scan``) is also a few launches with no
host synchronization: ``cascade_pyramid`` packs every pyramid level in one gather through
cached maps, ``cascade_integrals`` runs the tiled integral-image kernels of ``transform/_integral.cu``
(int64, then wrapped to uint32), ``cascade_evaluate_plan`` runs the later stages on the plan
with the device count (the plan indexes ``windows`` inside the stage kernel) and
``cascade_candidates`` compacts the final survivors into the one small array the host reads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._scan._kernels import compact_kernel, group_kernel, pyramid_kernel
from ._cascade import candidates_kernel, evaluate_kernel, integrals_kernel, plan_evaluate_kernel

#: Threads per block of the window-evaluation kernels.
STAGES_BLOCK = 128
#: On a plan, stages from DEEP_STAGE on run with DEEP_LANES threads per window (the few windows
#: that get that deep walk 100-200 trees per stage: one thread per window made their warps the
#: critical path of a frame). Chosen by measurement (tools/cascade_schedule.py --deep; H100,
#: frontalface_default: stage 4 best at 640x480, within 1 % of the best at 1080p; 32 lanes
#: beat 8 and 16 everywhere).
DEEP_STAGE = 4
DEEP_LANES = 32
#: Compaction tiles: COMPACT_ITEMS coalesced rounds of COMPACT_BLOCK windows per block.
COMPACT_BLOCK = 256
COMPACT_ITEMS = 8
COMPACT_TILE = COMPACT_BLOCK * COMPACT_ITEMS
#: Threads of the single-block scan over the per-tile counts.
COMPACT_SCAN_THREADS = 1024
#: Window counts the int32 indices of the kernels can address (with a tile of slack).
MAX_WINDOWS = 2**31 - 1 - COMPACT_TILE
#: Threads per block of the pyramid gather and the candidate copy (grid-stride loops).
GATHER_BLOCK = 256
#: Prepared (dtype-converted, contiguous) cascade arrays, by the identity of the arrays given.
_PREPARED: dict[tuple, tuple] = {}
_PREPARED_MAX = 16

#: ``Cascade.arrays()`` positions (the portable kernel's order) -> kernel argument dtypes.
_ARRAY_NAMES = ("stage_threshold_fixed", "tree_node_start", "tree_leaf_start", "node_feature", "node_left",
                "node_right", "node_threshold", "node_threshold_sq", "node_subset", "leaf_fixed", "feature_rect",
                "feature_weight", "feature_tilted")
_DTYPES = {
    "stage_threshold_fixed": "int64", "tree_node_start": "int32", "tree_leaf_start": "int32",
    "node_feature": "int32", "node_left": "int32", "node_right": "int32", "node_threshold": "float32",
    "node_threshold_sq": "float64", "node_subset": "uint32", "leaf_fixed": "int64", "feature_rect": "int32",
    "feature_weight": "int32", "feature_tilted": "uint8",
}
#: The kernels' argument order after stage_tree_start (which comes from the static stage layout).
_COMMON = ("stage_threshold_fixed", "tree_node_start", "tree_leaf_start", "node_feature", "node_left",
           "node_right", "leaf_fixed")
_HAAR = ("node_threshold", "node_threshold_sq", "feature_rect", "feature_weight", "feature_tilted")
_LBP = ("node_subset", "feature_rect")


def _device_array(cupy: Any, a: Any, dtype: str) -> Any:
    """``a`` as a C-contiguous CuPy array of ``dtype`` (bool reinterpreted as uint8, no copy)."""
    a = cupy.asarray(a)
    if dtype == "uint8" and a.dtype == cupy.bool_:
        a = a.view(cupy.uint8)
    return cupy.ascontiguousarray(a.astype(dtype, copy=False))


def _prepared(cupy: Any, arrays: dict[str, Any], haar: bool) -> list:
    """The kernel's cascade arguments, converted once per set of device arrays (the driver
    passes the same cached arrays every call, so this is a dictionary lookup)."""
    names = _COMMON + (_HAAR if haar else _LBP)
    given = tuple(arrays[k] for k in names)
    key = tuple(map(id, given))
    hit = _PREPARED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], given)):
        return hit[1]
    dev = [_device_array(cupy, a, _DTYPES[k]) for k, a in zip(names, given)]
    if len(_PREPARED) >= _PREPARED_MAX:
        _PREPARED.pop(next(iter(_PREPARED)))
    _PREPARED[key] = (given, dev)  # holds the arrays: their ids stay theirs while cached
    return dev


def launch_stages(sums: Any, sqsums: Any, tilt: Any, windows: Any, arrays: dict[str, Any], *, feature_type: str,
                  window: tuple[int, int], has_tilted: bool, stages: tuple, stage_begin: int, stage_end: int,
                  check_variance: bool, count: Any = None, plan: Any = None, sel: Any = None, lanes: int = 1,
                  status: Any = None) -> Any:
    """Status int32 ``(K,)`` of stages ``[stage_begin, stage_end)`` at ``windows`` (see _cascade_cuda.cu).

    ``sums``, ``sqsums``, ``tilt``: uint32 integral images ``(Hp+1, Wp+1)``; ``windows``: flat
    offsets ``y * (Wp+1) + x``; ``arrays``: the cascade's arrays by ``Cascade`` field name;
    ``stages``: ``Cascade.stage_layout()``; ``count``: see the module docstring; ``plan``: int32
    indices into ``windows`` (slot ``i`` evaluates ``windows[plan[i]]``; the status has
    ``plan``'s length, and with ``count`` only ``plan[:count]`` is read); ``sel``: int32 slots
    (work item ``w < count`` evaluates slot ``sel[w]`` and writes ``status[sel[w]]`` of the
    given ``status``, leaving its other slots alone); ``lanes``: threads per window (1, or a
    power of two up to 32 that splits each stage's trees; a grid of resident blocks then loops
    over the windows). The variance test applies to Haar cascades only (OpenCV's LBP evaluator
    has none), as in the portable version. Returns ``NotImplemented`` for inputs the kernels do
    not take.
    """
    import cupy

    from ...backends.cupy import cuda_function, device_constant

    haar = feature_type == "haar"
    if sums.ndim != 2 or sums.dtype != cupy.uint32 or sums.size > MAX_WINDOWS or windows.ndim != 1:
        return NotImplemented
    if haar and (sqsums.shape != sums.shape or sqsums.dtype != cupy.uint32):
        return NotImplemented
    if haar and has_tilted and (tilt.shape != sums.shape or tilt.dtype != cupy.uint32):
        return NotImplemented
    if not 0 <= stage_begin <= stage_end <= len(stages):
        return NotImplemented
    use_plan = plan is not None
    if use_plan and (plan.ndim != 1 or plan.dtype != cupy.int32):
        return NotImplemented
    n = plan.shape[0] if use_plan else windows.shape[0]
    use_sel = sel is not None
    if use_sel and (sel.ndim != 1 or sel.dtype != cupy.int32 or count is None or status is None
                    or status.shape != (n,) or status.dtype != cupy.int32):
        return NotImplemented
    if not use_sel:
        status = cupy.empty(n, dtype=cupy.int32)
    if n == 0:
        return status
    s = cupy.ascontiguousarray(sums)
    win = cupy.ascontiguousarray(windows.astype(cupy.int32, copy=False))  # offsets < sums.size < 2**31
    use_count = count is not None
    cnt = cupy.asarray(count, dtype=cupy.int32).reshape(()) if use_count else win  # not read without use_count
    idx = cupy.ascontiguousarray(plan) if use_plan else win  # not read without use_plan
    # stage_tree_start from the static layout: uploaded once per cascade (and stage count).
    starts = tuple(t0 for t0, _, _ in stages) + ((stages[-1][1],) if stages else (0,))
    stage_tree_start = device_constant(starts, "int32")
    dev = _prepared(cupy, arrays, haar)
    scalars = (np.int32(window[0]), np.int32(window[1]), np.int32(stage_begin), np.int32(stage_end))
    items = (sel.shape[0] if use_sel else n) * lanes
    blocks = (items + STAGES_BLOCK - 1) // STAGES_BLOCK
    if lanes > 1:  # a resident grid loops over the windows (count is on the device)
        blocks = max(1, min(blocks, resident_blocks(STAGES_BLOCK)))
    grid, block = (blocks,), (STAGES_BLOCK,)
    sel_arg = cupy.ascontiguousarray(sel) if use_sel else win  # not read without use_sel
    head = (np.int32(s.shape[1]), win, np.int32(n), cnt, np.int32(use_count), idx, np.int32(use_plan),
            sel_arg, np.int32(use_sel))
    if haar:
        q = cupy.ascontiguousarray(sqsums)
        t = cupy.ascontiguousarray(tilt) if has_tilted else s  # not read without TILTED
        tilted = "true" if has_tilted else "false"
        fn = cuda_function(__name__, f"portcv_cascade_stages_haar<{STAGES_BLOCK},{lanes},{tilted}>")
        fn(grid, block, (s, q, t, *head, *scalars, np.int32(bool(check_variance)), stage_tree_start, *dev, status))
    else:
        fn = cuda_function(__name__, f"portcv_cascade_stages_lbp<{STAGES_BLOCK},{lanes}>")
        # sqsum is read only with check_variance, which LBP never applies (the portable rule).
        fn(grid, block, (s, s, *head, *scalars, np.int32(0), stage_tree_start, *dev, status))
    return status


@evaluate_kernel.override("cupy")
def _evaluate_cupy(sums: Any, sqsums: Any, tilt: Any, windows: Any, *arrays: Any, feature_type: str,
                   window: tuple[int, int], has_tilted: bool, stages: tuple, stage_begin: int, stage_end: int,
                   check_variance: bool) -> Any:
    if len(arrays) != len(_ARRAY_NAMES):
        return NotImplemented
    return launch_stages(sums, sqsums, tilt, windows, dict(zip(_ARRAY_NAMES, arrays)), feature_type=feature_type,
                         window=window, has_tilted=has_tilted, stages=stages, stage_begin=stage_begin,
                         stage_end=stage_end, check_variance=check_variance)


def resident_blocks(block: int) -> int:
    """Blocks of ``block`` threads that fill the current device once (2,048 threads per SM)."""
    from ...backends.cupy import sm_count

    return sm_count() * max(1, 2048 // block)


@plan_evaluate_kernel.override("cupy")
def _plan_evaluate_cupy(sums: Any, sqsums: Any, tilt: Any, windows: Any, plan: Any, count: Any, *arrays: Any,
                        feature_type: str, window: tuple[int, int], has_tilted: bool, stages: tuple, stage_begin: int,
                        stage_end: int, check_variance: bool) -> Any:
    """Two launches when the cascade is deeper than ``DEEP_STAGE``: stages ``[stage_begin,
    DEEP_STAGE)`` one thread per plan window, then the windows still alive (compacted, the count
    on the device) through ``[DEEP_STAGE, stage_end)`` with ``DEEP_LANES`` threads each. The
    statuses are those of one pass (the later launch writes only its windows' slots)."""
    if len(arrays) != len(_ARRAY_NAMES):
        return NotImplemented
    run = dict(arrays=dict(zip(_ARRAY_NAMES, arrays)), feature_type=feature_type, window=window,
               has_tilted=has_tilted, stages=stages, check_variance=check_variance)
    mid = max(stage_begin, min(DEEP_STAGE, stage_end))
    if mid == stage_begin:  # the whole range is deep
        return launch_stages(sums, sqsums, tilt, windows, **run, stage_begin=stage_begin, stage_end=stage_end,
                             count=count, plan=plan, lanes=DEEP_LANES)
    status = launch_stages(sums, sqsums, tilt, windows, **run, stage_begin=stage_begin, stage_end=mid, count=count,
                           plan=plan)
    if status is NotImplemented or mid == stage_end or status.shape[0] == 0:
        return status
    kept = compact(status, None, capacity=status.shape[0])
    if kept is NotImplemented:
        return NotImplemented
    alive, n_alive = kept
    return launch_stages(sums, sqsums, tilt, windows, **run, stage_begin=mid, stage_end=stage_end, count=n_alive,
                         plan=plan, sel=alive, lanes=DEEP_LANES, status=status)


@pyramid_kernel.override("cupy")
def _pyramid_cupy(gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, *, shape: tuple[int, int]) -> Any:
    """One launch: ``portcv_cascade_pyramid`` (a thread per packed pixel, grid-stride)."""
    import cupy

    from ...backends.cupy import cuda_function, launch_1d

    n = int(shape[0]) * int(shape[1])
    if (gray.dtype != cupy.uint8 or gray.ndim != 2 or xmap.shape != (n,) or ymap.shape != (n,)
            or xtab.ndim != 2 or xtab.shape[1] != 4 or ytab.ndim != 2 or ytab.shape[1] != 4 or n >= 2**31):
        return NotImplemented
    arrays = [cupy.ascontiguousarray(a.astype(cupy.int32, copy=False)) for a in (xmap, ymap, xtab, ytab)]
    out = cupy.empty(shape, dtype=cupy.uint8)
    if n == 0:
        return out
    grid, block = launch_1d(n, GATHER_BLOCK)
    fn = cuda_function(__name__, "portcv_cascade_pyramid")
    fn(grid, block, (cupy.ascontiguousarray(gray), *arrays, np.int32(n), out))
    return out


@integrals_kernel.override("cupy")
def _integrals_cupy(packed: Any, *, tilted: bool) -> Any:
    """Upright tables from ``transform/_integral.cu``'s tiled scan, stored modulo 2^32 (the portable
    version's wrapping sums: the int64 prefixes' residues); the tilted table stays portable (its
    cascades are rare)."""
    import cupy

    from ..._integral_launch import launch_integral

    if tilted or packed.ndim != 2 or packed.dtype != cupy.uint8:
        return NotImplemented
    sums, squares = launch_integral(packed, has_channels=False, squared=True, dtype="uint32", sq_dtype="uint32")
    return sums, squares, sums


@candidates_kernel.override("cupy")
def _candidates_cupy(plan: Any, count: Any, status: Any, *, limit: int) -> Any:
    """``compact`` (no skip rule) of the later-stage statuses, then one launch that writes
    ``[count, n, plan[keep[0]], ...]``."""
    import cupy

    from ...backends.cupy import cuda_function, launch_1d

    if plan.dtype != cupy.int32 or status.dtype != cupy.int32 or plan.shape != status.shape:
        return NotImplemented
    kept = compact(status, None, capacity=plan.shape[0])
    if kept is NotImplemented:
        return NotImplemented
    keep, n = kept
    out = cupy.empty(limit + 2, dtype=cupy.int32)
    grid, block = launch_1d(limit + 2, GATHER_BLOCK)
    fn = cuda_function(__name__, "portcv_cascade_candidates")
    cnt = cupy.asarray(count, dtype=cupy.int32).reshape(())
    fn(grid, block, (cupy.ascontiguousarray(plan), keep, cnt, n, np.int32(plan.shape[0]), np.int32(limit), out))
    return out


def compact(status: Any, row_end: Any = None, *, capacity: int) -> tuple[Any, Any]:
    """``(plan, count)``: ascending indices ``i`` with ``status[i] == 1`` (and, given
    ``row_end``, visited under OpenCV's stage-0 skip rule), at most ``capacity`` of them;
    ``count`` = min(number kept, capacity), a 0-d int32 device array; ``plan[count:]`` = 0.
    No host synchronization.
    """
    import cupy

    from ...backends.cupy import cuda_function

    status = cupy.ascontiguousarray(cupy.asarray(status).reshape(-1))
    n = status.shape[0]
    if status.dtype != cupy.int32 or n > MAX_WINDOWS:
        return NotImplemented
    skip_rule = row_end is not None
    if skip_rule:
        row_end = cupy.asarray(row_end).reshape(-1)
        if row_end.shape[0] != n:
            return NotImplemented
        row_end = cupy.ascontiguousarray(row_end.view(cupy.uint8) if row_end.dtype == cupy.bool_
                                         else (row_end != 0).view(cupy.uint8))
    plan = cupy.empty(capacity, dtype=cupy.int32)
    count = cupy.empty((), dtype=cupy.int32)
    if n == 0:
        plan.fill(0)
        count.fill(0)
        return plan, count
    ends = row_end if skip_rule else status  # not read without the skip rule
    rule = "true" if skip_rule else "false"
    tiles = math.ceil(n / COMPACT_TILE)
    tile_counts = cupy.empty(tiles, dtype=cupy.int32)  # per-tile counts, then exclusive offsets
    count_tiles = cuda_function(__name__, f"portcv_cascade_compact_count<{COMPACT_BLOCK},{COMPACT_ITEMS},{rule}>")
    scan = cuda_function(__name__, f"portcv_cascade_compact_offsets<{COMPACT_SCAN_THREADS}>")
    scatter = cuda_function(__name__, f"portcv_cascade_compact_scatter<{COMPACT_BLOCK},{COMPACT_ITEMS},{rule}>")
    n32, cap = np.int32(n), np.int32(capacity)
    count_tiles((tiles,), (COMPACT_BLOCK,), (status, ends, n32, tile_counts))
    scan((1,), (COMPACT_SCAN_THREADS,), (tile_counts, np.int32(tiles), cap, count))
    scatter((tiles,), (COMPACT_BLOCK,), (status, ends, n32, tile_counts, count, cap, plan))
    return plan, count


@compact_kernel.override("cupy")
def _compact_cupy(status: Any, row_end: Any, *, capacity: int) -> Any:
    return compact(status, row_end, capacity=capacity)


#: Threads of the one-block grouping kernel (portcv_cascade_group).
GROUP_BLOCK = 1024


@group_kernel.override("cupy")
def _group_cupy(cand: Any, win_x: Any, win_y: Any, win_level: Any, factors: Any, recip: Any, *,
                window: tuple[int, int], min_neighbors: int, eps: float, width: int, height: int,
                capacity: int) -> Any:
    """One CUDA block: components by hooking and pointer jumping instead of the portable
    version's reachability products (no C x C matrices), the same boxes; divisions by
    ``__fdiv_rn`` (correctly rounded, as ``recip``)."""
    import cupy

    from ...backends.cupy import cuda_function

    cand, win_x, win_y, win_level = (cupy.asarray(a) for a in (cand, win_x, win_y, win_level))
    factors = cupy.asarray(factors)
    if (cand.dtype != cupy.int32 or cand.shape[0] < capacity + 2 or factors.dtype != cupy.float32
            or any(a.dtype != cupy.int32 for a in (win_x, win_y, win_level))):
        return NotImplemented
    scratch = cupy.empty(16 * capacity, dtype=cupy.int32)
    res = cupy.empty(2 + 5 * capacity, dtype=cupy.int32)
    fn = cuda_function(__name__, f"portcv_cascade_group<{GROUP_BLOCK}>")
    fn((1,), (GROUP_BLOCK,), (cand, np.int32(capacity), win_x, win_y, win_level, factors, np.int32(window[0]),
                              np.int32(window[1]), np.int32(min_neighbors), np.float64(eps), np.int32(width),
                              np.int32(height), scratch, res))
    return res
