"""The cascade detector's scan: OpenCV's window grid, the packed pyramid and its integrals, the
breadth-first stages and the compactions, the grouping, the read-back."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ... import _validate, backends
from ...backends import backend, to_numpy
from .._scan._group import CANDIDATE_LIMIT, GROUP_EPS, GROUP_READ, unpack_boxes
from .._scan._kernels import compact_kernel, group_kernel, pyramid_kernel, reciprocals
from .._scan._parameters import ScanParameters, check_min_neighbors, check_scale_factor, check_size_pair
from .._scan._pyramid import MIN_CAPACITY, level_rects, next_capacity, packed_pyramid_maps
from ._cascade import candidates_kernel, evaluate_kernel, integrals_kernel, plan_evaluate_kernel
from ._xml import Cascade

#: split_stage=None: stages run on every window before the first compaction, per backend (by
#: measurement, tools/cascade_schedule.py on the H100: CuPy's stage kernel skips finished
#: windows, so 2 costs little there; JAX, with static shapes, evaluates every slot, so it compacts
#: after stage 0).
def default_split(b: Any) -> int:
    return 1 if b.static_shapes else 2


# --------------------------------------------------------------------------------------------
# Scan geometry (host, cached per image size and parameters)
# --------------------------------------------------------------------------------------------
def scanned_rows(level_height: int, window_height: int, step: int, stripes: int) -> int:
    """How many window rows (``y = 0, step, ...``) OpenCV scans on a level.

    ``detectMultiScale`` splits each level's ``h - H + 1`` window positions into ``stripes``
    horizontal stripes of ``max(ceil(n / stripes), 1) * step`` rows, ``n = (h - H + 1) // step``,
    and scans ``y < min(stripes * stripe, h - H + 1)``. When ``stripes`` divides ``n`` and
    ``h - H + 1`` is not a multiple of ``step``, the last possible row (``y = n * step``) falls
    outside every stripe and is not scanned. ``stripes`` is ``ceil((w0 - W + 1) / 32)`` of the
    *first kept* level, so ``min_size`` (which drops the first levels) changes which rows exist.
    """
    positions = max(level_height - window_height + 1, 0)
    n = positions // step
    stripe = max((n + stripes - 1) // stripes, 1) * step
    limit = min(stripes * stripe, positions)
    return (limit + step - 1) // step


class ScanGrid:
    """Every window of every level on its step grid, as flat offsets into the packed integrals."""

    def __init__(self, levels: tuple, placements: tuple, window: tuple[int, int], stride: int) -> None:
        W, H = window
        offs, row_end, level_id, xs, ys = [], [], [], [], []
        # OpenCV's stripe count comes from the first kept level's window positions per row.
        stripes = max(-(-(placements[0][2] - W + 1) // 32), 1) if placements else 1
        for li, ((factor, _), (px, py, w, h)) in enumerate(zip(levels, placements)):
            step = 1 if factor >= 2 else 2
            gx = np.arange(0, w - W + 1, step, dtype=np.int64)
            gy = np.arange(0, scanned_rows(h, H, step, stripes) * step, step, dtype=np.int64)
            if gx.size == 0 or gy.size == 0:
                continue
            yy, xx = np.meshgrid(gy, gx, indexing="ij")
            offs.append(((py + yy) * stride + px + xx).reshape(-1))
            end = np.zeros(yy.shape, bool)
            end[:, -1] = True
            row_end.append(end.reshape(-1))
            level_id.append(np.full(yy.size, li, np.int32))
            xs.append(xx.reshape(-1))
            ys.append(yy.reshape(-1))
        cat = (lambda a, dt: np.concatenate(a).astype(dt)) if offs else (lambda a, dt: np.zeros(0, dt))
        self.windows = cat(offs, np.int32)
        self.row_end = cat(row_end, bool)
        self.level = cat(level_id, np.int32)
        self.x = cat(xs, np.int64)
        self.y = cat(ys, np.int64)
        self.factors = np.array([f for f, _ in levels], np.float32)
        self.size = int(self.windows.shape[0])


def candidates_to_rects(grid: ScanGrid, index: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Image rects of windows ``index``: ``rint(x * factor)`` etc. (OpenCV's mapping)."""
    return level_rects(grid.factors, grid.level[index], grid.x[index], grid.y[index], window)


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------
def check_params(scale_factor: Any, min_neighbors: Any, min_size: Any, max_size: Any, split_stage: Any,
                 n_stages: int) -> ScanParameters:
    """:meth:`CascadeDetector.detect`'s scan parameters, checked; ``split_stage=None`` becomes the
    active backend's default (:func:`default_split`)."""
    factor = check_scale_factor(scale_factor)
    neighbours = check_min_neighbors(min_neighbors)
    smallest = check_size_pair(min_size, "min_size", allow_none=False)
    largest = check_size_pair(max_size, "max_size", allow_none=True)
    if split_stage is None:
        split = min(default_split(backend()), max(1, n_stages))
    else:
        split = _validate.integer(split_stage, "split_stage", low=1, high=max(1, n_stages))
    return ScanParameters(scale_factor=factor, min_neighbors=neighbours, min_size=smallest, max_size=largest,
                          split_stage=split)


# --------------------------------------------------------------------------------------------
# Cached scan geometry: everything a detection needs that depends only on (image size, window,
# scale_factor, min/max size) -- computed once, uploaded once per device
# --------------------------------------------------------------------------------------------
#: Capacities learned per (frame geometry, cascade statics), shared by all detectors (64 kept).
LEARNED_CAPACITIES: dict = {}
#: Geometries kept (each holds its maps and window grid on the host and on each device used).
GEOMETRY_CACHE = 8


class ScanGeometry:
    """The host side of a detection for one frame size and set of parameters.

    ``levels`` (OpenCV's scale list), the packed layout (``transform.pack_pyramid``'s default
    width and shelves, gap 1), the pyramid maps of ``_scan._kernels.pyramid_kernel`` (``xmap``,
    ``ymap``: int32 per packed pixel; ``xtab``, ``ytab``: ``(n, 4)`` axis entries, row offsets
    premultiplied by the image width), and the window grid (:class:`ScanGrid`). Device copies
    are made once per device (:meth:`on`).
    """

    def __init__(self, width: int, height: int, window: tuple[int, int], scale_factor: float,
                 min_size: tuple[int, int], max_size: tuple[int, int]) -> None:
        from ..._resize_plans import pyramid_plan

        self.width, self.height = width, height
        # OpenCV's scale list with minSize / maxSize: [(float32 factor, (level w, level h)), ...]
        self.levels = pyramid_plan(width, height, scale_factor, window, min_size=min_size, max_size=max_size,
                                    name="scale_factor")
        self.grid: ScanGrid | None = None
        self._device: dict[Any, tuple] = {}
        if not self.levels:
            return
        self.packed_shape, self.placements, self.maps = packed_pyramid_maps(width, height,
                                                                             [wh for _, wh in self.levels])
        wp = self.packed_shape[1]
        self.grid = ScanGrid(tuple(self.levels), self.placements, window, wp + 1)

    def on(self, b: Any) -> tuple:
        """``(xmap, ymap, xtab, ytab, windows, row_end)`` on backend ``b`` (uploaded once per device)."""
        key = b.device_key()
        hit = self._device.get(key)
        if hit is None:
            hit = tuple(b.asarray(a) for a in self.maps + (self.grid.windows, self.grid.row_end))
            b.synchronize()  # uploaded before any stream (detect_video's) reads them
            self._device[key] = hit
        return hit

    def group_arrays(self, b: Any) -> tuple:
        """``(x, y, level, factors, recip)`` of the window grid on backend ``b``, group_kernel's
        inputs (int32, int32, int32, float32, float32 reciprocals); uploaded once per device."""
        key = (b.device_key(), "group")
        hit = self._device.get(key)
        if hit is None:
            g = self.grid
            host = (g.x.astype(np.int32), g.y.astype(np.int32), g.level, g.factors, reciprocals(CANDIDATE_LIMIT))
            hit = tuple(b.asarray(a) for a in host)
            b.synchronize()
            self._device[key] = hit
        return hit


@functools.lru_cache(maxsize=GEOMETRY_CACHE)
def scan_geometry(width: int, height: int, window: tuple[int, int], scale_factor: float, min_size: tuple[int, int],
                  max_size: tuple[int, int]) -> ScanGeometry:
    return ScanGeometry(width, height, window, scale_factor, min_size, max_size)


def cascade_arrays(cascade: Cascade, cache: dict) -> tuple:
    """``cascade.arrays()`` on the active backend, uploaded once per device (``cache``)."""
    b = backend()
    key = b.device_key()
    arrays = cache.get(key)
    if arrays is None:
        arrays = tuple(b.asarray(a) for a in cascade.arrays())
        b.synchronize()
        cache[key] = arrays
    return arrays


#: JAX's first guess of the share of windows alive after ``b`` stages: ``SURVIVAL ** (b - 1) / 2``.
#: Measured with the frontal-face cascades (Haar default, alt, alt2; LBP) on scikit-image's
#: astronaut, coffee, chelsea and rocket and a mosaic of 36 LFW faces (the densest): after 2, 3,
#: 5, 8, 12 and 18 stages at most 41, 28, 12, 4.3, 1.6 and 0.8 % of the windows were alive.
SURVIVAL = 0.8


def plan_capacities(b: Any, grid_size: int, bounds: tuple[int, ...]) -> tuple[int, ...]:
    """First plan capacity of each level: every window on CuPy and NumPy (the count stays on the
    device; NumPy reads it for free). JAX evaluates every slot of a static shape, so there level
    k starts at the guess ``SURVIVAL`` gives for ``bounds[k]`` stages (rarely too few: an
    overflow is seen at the end, counted and redone) and is learned from the counts
    (``run_scan``). A plan the size of the first one at every level made JAX's first 1080p
    frame 30 times slower than the next."""
    levels = len(bounds) - 1
    if not b.static_shapes:
        return (grid_size,) * levels
    caps: list[int] = []
    for k in range(levels):
        guess = int(grid_size * SURVIVAL ** (bounds[k] - 1) / 2) + 1
        caps.append(next_capacity(guess, caps[-1] if caps else grid_size))
    return tuple(caps)


def plan_levels(b: Any, split: int, n_stages: int) -> tuple[int, ...]:
    """Stage bounds ``(split, ..., S)`` of the later phase: one segment on CuPy and NumPy, whose
    kernels skip finished windows themselves. JAX evaluates every slot of its static plan in
    every stage, so there the survivors are compacted again after each segment into a smaller
    plan; each segment ends about 1.5 times further than it starts (1, 2, 3, 5, 8, 12, 18, 25:
    most windows leave in the first few stages, and each level is a compilation)."""
    if not b.static_shapes or split >= n_stages:
        return (split, n_stages)
    bounds = [split]
    while bounds[-1] < n_stages:
        bounds.append(min(n_stages, max(bounds[-1] + 1, (3 * bounds[-1] + 1) // 2)))
    return tuple(bounds)


def _scan_tables(b: Any, static: dict, packed_shape: tuple[int, int], gray: Any, xmap: Any, ymap: Any, xtab: Any,
                 ytab: Any) -> tuple:
    """The pyramid and its integrals: ``(sums, sqsums, tilt)``."""
    packed = pyramid_kernel(gray, xmap, ymap, xtab, ytab, shape=packed_shape)
    return integrals_kernel(packed, tilted=static["has_tilted"])


def _scan_first(b: Any, static: dict, split: int, sums: Any, sqsums: Any, tilt: Any, windows: Any, row_end: Any,
                *arrays: Any, cap: int) -> tuple:
    """Stages ``[0, split)`` on every window, the skip rule and the compaction into ``cap``
    slots: ``(plan, count)``."""
    status = evaluate_kernel(sums, sqsums, tilt, windows, *arrays, stage_begin=0, stage_end=split,
                             check_variance=True, **static)
    return compact_kernel(status, row_end, capacity=cap)


def _scan_level(b: Any, static: dict, begin: int, end: int, sums: Any, sqsums: Any, tilt: Any, windows: Any,
                plan: Any, count: Any, *arrays: Any, cap: int | None) -> tuple:
    """Stages ``[begin, end)`` on the plan's windows: ``(status, plan, count)``, the plan and
    count of the survivors compacted into ``cap`` slots (``None``: the last level, not compacted)."""
    status = plan_evaluate_kernel(sums, sqsums, tilt, windows, plan, count, *arrays, stage_begin=begin,
                                  stage_end=end, check_variance=False, **static)
    if cap is None:
        return status, plan, count
    keep, count = compact_kernel(status, None, capacity=cap)
    return status, b.xp.take(plan, keep), count


def _scan_tail(b: Any, static: dict, plan: Any, count: Any, status: Any, win_x: Any, win_y: Any, win_level: Any,
               factors: Any, recip: Any, *, limit: int, group: tuple | None) -> tuple:
    """The candidates (``limit``) and, given ``group = (min_neighbors, capacity, width,
    height)``, their grouping: ``(grouped or None, candidates)``."""
    cand = candidates_kernel(plan, count, status, limit=limit)
    grouped = None
    if group is not None:
        min_neighbors, capacity, width, height = group
        grouped = group_kernel(cand, win_x, win_y, win_level, factors, recip, window=static["window"],
                               min_neighbors=min_neighbors, eps=GROUP_EPS, width=width, height=height,
                               capacity=capacity)
    return grouped, cand


@functools.lru_cache(maxsize=32)
def scan_program(backend_name: str, bounds: tuple[int, ...], static_items: tuple, packed_shape: tuple[int, int]) -> Any:
    """The whole scan of one frame after its upload, compiled with the backend's ``jit`` (one
    JAX program per capacity set; CuPy and NumPy run it as it is, launch by launch). Cached per
    process, not per detector: a new detector of the same cascade and frame geometry reuses
    the compilations (``static_items``: the cascade's static parameters, sorted items).

    ``program(gray, xmap, ymap, xtab, ytab, windows, row_end, win_x, win_y, win_level, factors,
    recip, *arrays, caps, limit, group)``: :func:`_scan_tables`, :func:`_scan_first` (stages
    ``[0, bounds[0])``),
    each level ``[bounds[k], bounds[k+1])`` on the plan, compacted again between levels (into
    ``caps[k + 1]`` slots), then :func:`_scan_tail`. Returns ``(grouped or None, candidates,
    level counts)``, or with ``pack`` (JAX) the three concatenated into one int32 vector: one
    device -> host copy.
    """
    b = backends.get(backend_name)
    static = dict(static_items)
    levels = len(bounds) - 1

    def program(gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, windows: Any, row_end: Any, win_x: Any,
                win_y: Any, win_level: Any, factors: Any, recip: Any, *arrays: Any, caps: tuple[int, ...], limit: int,
                group: tuple | None, pack: bool) -> Any:
        xp = b.xp
        sums, sqsums, tilt = _scan_tables(b, static, packed_shape, gray, xmap, ymap, xtab, ytab)
        plan, count = _scan_first(b, static, bounds[0], sums, sqsums, tilt, windows, row_end, *arrays, cap=caps[0])
        counts = [count]
        for k in range(levels):
            status, plan, count = _scan_level(b, static, bounds[k], bounds[k + 1], sums, sqsums, tilt, windows,
                                              plan, count, *arrays, cap=caps[k + 1] if k + 1 < levels else None)
            if k + 1 < levels:
                counts.append(count)
        grouped, cand = _scan_tail(b, static, plan, count, status, win_x, win_y, win_level, factors, recip,
                                   limit=limit, group=group)
        if pack:
            parts = ([] if grouped is None else [grouped]) + [cand, xp.stack(counts)]
            return xp.concat(parts)
        return grouped, cand, counts

    return b.jit(program, static_argnames=("caps", "limit", "group", "pack"))


@functools.lru_cache(maxsize=32)
def host_scan_parts(backend_name: str, bounds: tuple[int, ...], static_items: tuple,
                    packed_shape: tuple[int, int]) -> tuple:
    """:func:`scan_program`'s parts compiled one by one, for a static-shape backend whose arrays
    live on the host (JAX on the CPU): ``(tables, first, levels, tail)``. Reading a count back costs
    nothing there, so each level's plan gets the capacity its count needs (no overflow, no
    redo), and XLA compiles small programs: the whole scan as one program needed 0.85 GB to
    compile for a 1080p frame, more than the scan itself."""
    b = backends.get(backend_name)
    static = dict(static_items)
    tables = b.jit(functools.partial(_scan_tables, b, static, packed_shape))
    first = b.jit(functools.partial(_scan_first, b, static, bounds[0]), static_argnames=("cap",))
    levels = tuple(
        b.jit(functools.partial(_scan_level, b, static, bounds[k], bounds[k + 1]), static_argnames=("cap",))
        for k in range(len(bounds) - 1)
    )
    tail = b.jit(functools.partial(_scan_tail, b, static), static_argnames=("limit", "group"))
    return tables, first, levels, tail


def run_scan(cascade: Cascade, gray: Any, params: ScanParameters, *, device_cache: dict, state: dict) -> tuple | None:
    """One gray frame through the whole scan: ``(grid, candidate window indices, None)``, or
    ``(grid, None, (rects, neighbours))`` when the candidates were grouped (``params.min_neighbors
    > 0``) and clipped on the device (CuPy, JAX), or ``None`` when no window fits the frame.

    The device work is :func:`scan_program`; nothing is read back before its end. Launches on
    CuPy (a Haar cascade without tilted features): the pyramid gather (1), the integral images
    (3), stages ``[0, split)`` on every window (1), the skip rule and compaction (3), stages
    ``[split, S)`` on the plan with the count on the device (1, or 5 with the deep stages:
    ``_cascade_cuda``), the compaction of the survivors and the candidate copy (3 + 1), the
    grouping (1), then one small device -> host copy (the first ``GROUP_READ`` boxes, or
    ``CANDIDATE_LIMIT + 2`` int32 candidates). On JAX it is one program whose later phase has
    several levels (``plan_levels``); their plan counts come back in the same copy, and
    ``state`` (per detector, seeded from ``LEARNED_CAPACITIES``) holds the capacities learned
    from them. JAX on the CPU runs the same parts as separate programs and reads each level's
    count on the way (:func:`scan_on_host`).
    """
    c = cascade
    height, width = gray.shape
    scale_factor, min_neighbors = params.scale_factor, params.min_neighbors
    min_size, max_size = tuple(params.min_size), params.max_size_for(width, height)
    geo = scan_geometry(width, height, c.window, scale_factor, min_size, max_size)
    grid = geo.grid
    if grid is None or grid.size == 0:
        return None
    b = backend()
    arrays = cascade_arrays(c, device_cache)
    layout = device_cache.get("stage_layout")
    if layout is None:
        layout = device_cache["stage_layout"] = c.stage_layout()  # static: computed once per detector
    static = dict(feature_type=c.feature_type, window=c.window, has_tilted=c.has_tilted, stages=layout)
    split = min(params.split_stage, c.n_stages)
    bounds = plan_levels(b, split, c.n_stages)
    levels = len(bounds) - 1
    static_key = tuple(sorted(static.items()))
    inputs = (gray,) + geo.on(b) + geo.group_arrays(b)

    key = (width, height, scale_factor, min_size, max_size, split, b.device_key())
    # A new detector of the same cascade starts from what an earlier one learned (JAX: its
    # capacities are compiled programs; starting from scratch costs a slow first frame).
    shared_key = (key, static_key)
    caps, group_cap = state.get(key) or LEARNED_CAPACITIES.get(shared_key, (None, None))
    if caps is None or len(caps) != levels:
        caps = plan_capacities(b, grid.size, bounds)  # a later level holds at most its predecessor's plan
    group_cap = group_capacity(b, group_cap) if min_neighbors > 0 else None
    limit = CANDIDATE_LIMIT
    level_counts = None
    if b.static_shapes and b.runs_on_host:
        group = None if group_cap is None else (min_neighbors, group_cap, width, height)
        grouped, cand, caps = scan_on_host(host_scan_parts(b.name, bounds, static_key, geo.packed_shape), inputs,
                                           arrays, caps, group=group)
    else:
        program = scan_program(b.name, bounds, static_key, geo.packed_shape)
        while True:
            group = None if group_cap is None else (min_neighbors, group_cap, width, height)
            result = program(*inputs, *arrays, caps=caps, limit=limit, group=group, pack=b.static_shapes)
            grouped, cand, level_counts = read_back(result, group, limit, levels)
            if cand is None:  # grouped on CuPy: nothing can have overflowed
                return grid, None, unpack_boxes(grouped)
            # Level k may have overflowed when its count reached its capacity and more windows
            # could have been there (every window, for the first level; the previous level's plan
            # after it). A level after an overflowed one gets its predecessor's capacity: the redo
            # cannot overflow there again. Only JAX starts below every window (plan_capacities).
            full = [k for k in range(levels) if level_counts[k] >= caps[k] and caps[k] < (grid.size if k == 0 else caps[k - 1])]
            if full:
                k = full[0]
                caps = caps[:k] + ((grid.size if k == 0 else caps[k - 1]),) * (levels - k)
            elif int(cand[1]) > limit:  # rare: more candidates than the copy holds; all of them, then
                limit = max(caps[-1], limit + 1)
            else:
                break
    n = int(cand[1])
    if b.static_shapes:
        # The next frame of this geometry: a capacity shrinks to its count plus a quarter when
        # that is under half of it (hysteresis: each new capacity is a JAX compilation); the
        # grouping's capacity also grows so when the candidates overflowed it. CuPy and NumPy
        # keep room for every window (no redo).
        if level_counts is not None:  # scan_on_host has chosen them already
            caps = tuple(next_capacity(int(m) + int(m) // 4 + 1, cap) if 2 * int(m) < cap else cap
                         for m, cap in zip(level_counts, caps))
        if group_cap is not None and (n > group_cap or 2 * n < group_cap):
            group_cap = next_capacity(n + n // 4 + 1, CANDIDATE_LIMIT)
    entry = (caps, group_cap if group_cap is not None else state.get(key, (None, None))[1])
    for table, k in ((state, key), (LEARNED_CAPACITIES, shared_key)):
        if len(table) >= 64:
            table.pop(next(iter(table)))
        table[k] = entry
    if grouped is not None and int(grouped[1]) >= 0:
        return grid, None, unpack_boxes(grouped)
    return grid, cand[2 : 2 + n].astype(np.int64), None  # the host groups them (NumPy, or an overflow)


def host_capacity(count: int, previous: int | None, limit: int) -> int:
    """A plan capacity for ``count`` windows on the host path: the previous one while it holds
    them and is at most twice their number (each new capacity is a compilation), else the count
    plus a quarter (:func:`next_capacity`); never above ``limit``, the plan it is cut from."""
    if previous is not None and count <= previous <= min(limit, 2 * count + MIN_CAPACITY):
        return previous
    return next_capacity(count + count // 4 + 1, limit)


def scan_on_host(parts: tuple, inputs: tuple, arrays: tuple, caps: tuple[int, ...], *, group: tuple | None) -> tuple:
    """The scan through :func:`host_scan_parts`: each compaction keeps every slot of its plan
    (it cannot overflow), the count is read, and the next level runs on a plan cut to
    :func:`host_capacity` of it. ``(grouped or None, candidates, capacities used)``, on the host."""
    tables, first, level_fns, tail = parts
    gray, xmap, ymap, xtab, ytab, windows, row_end, win_x, win_y, win_level, factors, recip = inputs
    sums, sqsums, tilt = tables(gray, xmap, ymap, xtab, ytab)
    plan, count = first(sums, sqsums, tilt, windows, row_end, *arrays, cap=windows.shape[0])
    used = []
    status = None
    for k, level in enumerate(level_fns):
        cap = host_capacity(int(count), caps[k] if k < len(caps) else None, plan.shape[0])
        used.append(cap)
        plan = plan[:cap]  # the survivors come first
        last = k + 1 == len(level_fns)
        status, plan, count = level(sums, sqsums, tilt, windows, plan, count, *arrays, cap=None if last else cap)
    limit = CANDIDATE_LIMIT
    while True:
        grouped, cand = tail(plan, count, status, win_x, win_y, win_level, factors, recip, limit=limit, group=group)
        n = int(cand[1])
        if n <= limit:
            break
        limit = n  # rare: more candidates than the copy holds; all of them, then
    return (None if grouped is None else to_numpy(grouped)), to_numpy(cand), tuple(used)


def read_back(result: Any, group: tuple | None, limit: int, levels: int) -> tuple:
    """``(grouped, candidates, level counts)`` on the host from :func:`scan_program`'s result, in
    one device -> host copy: the packed vector (JAX); the boxes' head when they were grouped on
    the device, with ``candidates = None`` (CuPy); else the candidates, whose first entry is the
    one level's plan count (CuPy, NumPy: one level)."""
    if not isinstance(result, tuple):
        out = to_numpy(result)
        g = 0 if group is None else 2 + 5 * group[1]
        return (out[:g] if group else None), out[g : g + limit + 2], out[g + limit + 2 :]
    grouped, cand, counts = result
    if grouped is not None:
        head = to_numpy(grouped[: 2 + 5 * GROUP_READ])
        m = int(head[1])
        if m >= 0:
            return (head if m <= GROUP_READ else to_numpy(grouped)), None, None
    cand = to_numpy(cand)
    level_counts = cand[:1] if levels == 1 else np.array([int(to_numpy(n)) for n in counts])
    return None, cand, level_counts


def group_capacity(b: Any, learned: int | None) -> int | None:
    """Candidates grouped on the device: all of them on CuPy (one CUDA block, no C x C
    matrices), a learned capacity on JAX (its portable grouping is C x C; overflow: the host
    groups that frame), none on NumPy (the host's grouping is its fastest)."""
    if group_kernel.has_override(b):
        return CANDIDATE_LIMIT
    if b.static_shapes:
        return learned or MIN_CAPACITY
    return None
