"""Cascade window evaluation (OpenCV's Haar and LBP cascades), exact on every backend.

The hot loops of :class:`portcv.detect.CascadeDetector`:

- ``cascade_integrals``: the sum, squared-sum and (for tilted Haar features) 45-degree integral
  images of the packed pyramid, in uint32 that wrap modulo 2**32. A rectangle inside one window
  sums to less than 2**32 (the loader bounds the window area), so the uint32 difference of its
  four corners is the true sum (widened to int64 for the variance, int32 in Haar features,
  whose weighted sums the loader bounds below 2**26.5).
- ``cascade_evaluate``: stages ``[stage_begin, stage_end)`` of the cascade at a list of windows
  (flat offsets ``y * (Wp + 1) + x`` of their top-left corners in the integral images).
  Status per window: ``1`` all stages passed, ``-s`` rejected at stage ``s`` (``0`` for stage 0),
  ``-1`` variance reject (as OpenCV's ``runAt``).
- ``cascade_candidates``: the survivors of the last stage, in the one small device -> host copy.

The kernels both detectors share (the packed pyramid, the compaction, the grouping) are in
``_scan/_kernels.py``.

The decisions are integer (``docs/opencv-arithmetic.md``, ``docs/detect.md``):

- variance: ``A = (W-2)(H-2)``, ``s, q`` = sum and squared sum over ``(1, 1, W-2, H-2)``,
  ``nf = A*q - s*s`` (int64, < 2**53); reject when ``nf <= 0`` or ``100*A*A >= nf`` -- OpenCV's
  ``A * float32(1/sqrt(nf)) >= 0.1`` without the square root (equal except at ties);
- Haar node: ``F = sum w_i S_i`` (int32, exact). OpenCV goes left iff
  ``float32(F) * float32(1/sqrt(nf)) < thr``; portcv decides ``F < thr * sqrt(nf)`` from signs
  and squares: ``thr > 0``: ``F < 0 or F*F < thr^2 * nf``; ``thr <= 0``: ``F < 0 and F*F >
  thr^2 * nf``, with ``F*F`` exact (float64, < 2**53) and ``thr^2 * nf`` one IEEE float64 multiply of exact
  operands (``thr^2`` is float64(thr)**2, exact for a float32 ``thr``);
- LBP node: 3x3 block sums, the 8-bit code, its bit in the node's 256-bit category set;
- stage: ``sum(leaf_fixed) < stage_threshold_fixed`` in int64, exactly OpenCV's double sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kernel import kernel
from ...backends.numpy import compiled
from .._scan._kernels import block_size, compact_kernel, jax_blocked, numpy_blocks


# --------------------------------------------------------------------------------------------
# JAX: blocks
# --------------------------------------------------------------------------------------------
#: Windows per block when JAX evaluates on the CPU: the portable evaluation's intermediates are
#: (corners x windows x trees), several GB for a whole frame's windows at once (12 GB for a
#: 512 x 512 frame), so there ``lax.map`` runs it block after block (one compiled body).
CPU_BLOCK = 2048
#: Bytes of the portable evaluation's temporaries per window and tree of a stage (corner
#: offsets and values, rect sums, float64 tests).
WINDOW_TREE_BYTES = 128


# --------------------------------------------------------------------------------------------
# Integral images
# --------------------------------------------------------------------------------------------
@kernel("cascade_integrals")
def integrals_kernel(xp: Any, packed: Any, *, tilted: bool) -> Any:
    """``(sum, sqsum, tilt)`` uint32 ``(H+1, W+1)`` of a uint8 ``(H, W)`` image, wrapping mod 2**32.

    ``tilt`` is OpenCV's ``integral3`` tilted sum, ``T[Y][X] = sum(I[y][x] for y < Y and
    |x - X + 1| <= Y - y - 1)``, built from row prefix sums ``R`` gathered along diagonals:
    ``T[Y][X] = P1[Y][X + Y - 1] - P2[Y][X - Y]`` with ``P1[Y][s] = sum_{y<Y} R[y][s - y]`` and
    ``P2[Y][d] = sum_{y<Y} R[y][d + y]`` (column indices clipped to ``[0, W]``: zero outside
    the image). Without ``tilted`` the third array is ``sum`` itself (unused).
    """
    h, w = packed.shape
    x = xp.astype(packed, xp.uint32)
    zrow = xp.zeros((1, w), dtype=xp.uint32)
    zcol = xp.zeros((h + 1, 1), dtype=xp.uint32)

    def table(v: Any) -> Any:
        padded = xp.concat([zcol, xp.concat([zrow, v], axis=0)], axis=1)
        return xp.cumulative_sum(xp.cumulative_sum(padded, axis=0, dtype=xp.uint32), axis=1, dtype=xp.uint32)

    sums = table(x)
    sqsums = table(x * x)  # 255^2 fits uint32; the running sums wrap mod 2**32 by design
    if not tilted:
        return sums, sqsums, sums
    rows = xp.concat([xp.zeros((h, 1), dtype=xp.uint32), xp.cumulative_sum(x, axis=1, dtype=xp.uint32)], axis=1)
    flat_rows = xp.reshape(rows, (-1,))
    y = xp.arange(h, dtype=xp.int64)[:, None]
    base = y * (w + 1)
    s = xp.arange(w + h + 1, dtype=xp.int64)[None, :]            # anti-diagonal x + y
    d = xp.arange(-h, w + 1, dtype=xp.int64)[None, :]            # diagonal x - y
    g1 = xp.take(flat_rows, xp.reshape(base + xp.clip(s - y, 0, w), (-1,)))
    g2 = xp.take(flat_rows, xp.reshape(base + xp.clip(d + y, 0, w), (-1,)))
    zero1 = xp.zeros((1, w + h + 1), dtype=xp.uint32)
    p1 = xp.concat([zero1, xp.cumulative_sum(xp.reshape(g1, (h, w + h + 1)), axis=0, dtype=xp.uint32)], axis=0)
    p2 = xp.concat([zero1, xp.cumulative_sum(xp.reshape(g2, (h, w + h + 1)), axis=0, dtype=xp.uint32)], axis=0)
    yy = xp.arange(h + 1, dtype=xp.int64)[:, None]
    xx = xp.arange(w + 1, dtype=xp.int64)[None, :]
    width1 = w + h + 1
    i1 = xp.reshape(yy * width1 + xp.clip(xx + yy - 1, 0, w + h), (-1,))
    i2 = xp.reshape(yy * width1 + (xx - yy + h), (-1,))
    tilt = xp.take(xp.reshape(p1, (-1,)), i1) - xp.take(xp.reshape(p2, (-1,)), i2)
    tilt = xp.reshape(tilt, (h + 1, w + 1))
    tilt = xp.where(yy == 0, xp.asarray(0, dtype=xp.uint32), tilt)
    return sums, sqsums, tilt


@integrals_kernel.override("numpy", supports="every input (tilted sums: the portable version)")
def _integrals_numpy(packed: Any, *, tilted: bool) -> Any:
    # Row prefix sums, then each row added to the one above in place: two passes and no padded
    # copies (the portable version's concatenations and column cumsum cost 3x more). uint32 sums
    # wrap modulo 2**32 whatever the order of the additions, so the bits are the portable's.
    if tilted:
        return integrals_kernel.portable(np, packed, tilted=True)
    if compiled():
        from ._cascade_numba import integral_rows

        x = np.ascontiguousarray(packed)
        h, w = x.shape
        sums, sqsums = np.empty((h + 1, w + 1), np.uint32), np.empty((h + 1, w + 1), np.uint32)
        sums[0] = sqsums[0] = 0
        integral_rows(x, sums, False)
        integral_rows(x, sqsums, True)
        return sums, sqsums, sums
    x = np.asarray(packed).astype(np.uint32)
    sums = _integral_numpy(x)
    np.multiply(x, x, out=x)  # 255^2 fits uint32 (any wider input wraps as the portable's x * x)
    return sums, _integral_numpy(x), sums


def _integral_numpy(x: np.ndarray) -> np.ndarray:
    h, w = x.shape
    out = np.zeros((h + 1, w + 1), np.uint32)
    np.cumsum(x, axis=1, dtype=np.uint32, out=out[1:, 1:])
    for r in range(2, h + 1):
        np.add(out[r], out[r - 1], out=out[r])
    return out


# --------------------------------------------------------------------------------------------
# Window evaluation
# --------------------------------------------------------------------------------------------
def _corner_offsets(xp: Any, feature_rect: Any, feature_tilted: Any, *, feature_type: str, stride: int,
                    tilt_base: int) -> Any:
    """Per feature, the flat offsets (relative to the window corner) of its corner lookups.

    Haar: ``(F, 12)``: rect r's corners ``4r .. 4r+3``, combined as ``c0 - c1 - c2 + c3``;
    tilted features index the tilted table, stored after the sum table (``+ tilt_base``).
    LBP: ``(F, 16)``: the 4x4 grid of block corners, row-major.
    """
    r = xp.astype(feature_rect, xp.int32)  # offsets < 2**31: the driver bounds the packed tables
    if feature_type == "lbp":
        x, y, w, h = r[:, 0:1], r[:, 1:2], r[:, 2:3], r[:, 3:4]
        cols = [x + i * w for i in range(4)]
        return xp.concat([(y + j * h) * stride + c for j in range(4) for c in cols], axis=1)
    x, y, w, h = r[..., 0], r[..., 1], r[..., 2], r[..., 3]  # (F, 3)
    up = [y * stride + x, y * stride + x + w, (y + h) * stride + x, (y + h) * stride + x + w]
    tl = [y * stride + x, (y + h) * stride + x - h, (y + w) * stride + x + w, (y + w + h) * stride + x + w - h]
    tflag = feature_tilted[:, None]
    corners = [xp.where(tflag, t + tilt_base, u) for u, t in zip(up, tl)]  # 4 x (F, 3)
    return xp.reshape(xp.stack(corners, axis=-1), (r.shape[0], 12))  # [rect][corner]


def _variance_term(xp: Any, sums: Any, sqsums: Any, win: Any, *, window: tuple[int, int], stride: int) -> Any:
    """``nf = A*q - s*s`` (int64) over the rect (1, 1, W-2, H-2) of each window."""
    W, H = window
    p = [stride + 1, stride + W - 1, (H - 1) * stride + 1, (H - 1) * stride + W - 1]

    def rect(img: Any) -> Any:
        g = [xp.take(img, win + o) for o in p]
        return xp.astype(g[0] - g[1] - g[2] + g[3], xp.int64)

    area = (W - 2) * (H - 2)
    s, q = rect(sums), rect(sqsums)
    return area * q - s * s


def _stage_sum(xp: Any, img: Any, win: Any, nf: Any, offs: Any, arrays: tuple, *, feature_type: str,
               t0: int, t1: int, depth: int) -> Any:
    """Sum of the fixed-point leaves of trees ``[t0, t1)`` at each window: int64 ``(K,)``."""
    (_, tree_node_start, tree_leaf_start, node_feature, node_left, node_right, node_threshold,
     node_threshold_sq, node_subset, leaf_fixed, _, feature_weight, _) = arrays
    ncorner = offs.shape[1]
    k = win.shape[0]
    ts = t1 - t0
    roots = tree_node_start[t0:t1]
    offs_t = xp.permute_dims(offs, (1, 0))
    nf64 = None if nf is None else xp.astype(nf, xp.float64)[:, None]

    def go_left(node: Any, uniform: bool) -> Any:
        """Node decision; ``node``: global node ids ``(Ts,)`` (same for every window) or ``(K, Ts)``."""
        feat = xp.take(node_feature, node)
        # one gather of every corner of every tree's node, corner-major: (C, K, Ts)
        o = xp.take(offs_t, xp.reshape(feat, (-1,)), axis=1)
        o = xp.reshape(o, (ncorner, 1, ts) if uniform else (ncorner, k, ts))
        values = xp.take(img, xp.reshape(win[None, :, None] + o, (-1,)))
        values = xp.reshape(values, (ncorner, k, ts))
        corner = [values[c] for c in range(ncorner)]
        if feature_type == "haar":
            # int32 throughout: the loader bounds sum |w_r| * (the rect's largest sum) below
            # 2**26.5, so every rect sum, term and partial sum of F fits (no int64 emulation on GPUs)
            wts = xp.astype(xp.take(feature_weight, feat, axis=0), xp.int32)  # (Ts,3) or (K,Ts,3)
            total = None
            for r in range(3):
                srect = xp.astype(corner[4 * r] - corner[4 * r + 1] - corner[4 * r + 2] + corner[4 * r + 3], xp.int32)
                term = (wts[None, :, r] if uniform else wts[..., r]) * srect
                total = term if total is None else total + term
            thr = xp.take(node_threshold, node)
            thr_sq = xp.take(node_threshold_sq, node)
            if uniform:
                thr, thr_sq = thr[None, :], thr_sq[None, :]
            f = xp.astype(total, xp.float64)
            f2 = f * f  # |F| < 2**26.5: F^2 < 2**53, exact in float64
            rhs = thr_sq * nf64
            neg = total < 0
            return xp.where(thr > 0, neg | (f2 < rhs), neg & (f2 > rhs))
        # LBP: block (bi, bj) = grid[bj][bi] - grid[bj][bi+1] - grid[bj+1][bi] + grid[bj+1][bi+1]
        def block(bi: int, bj: int) -> Any:
            a = 4 * bj + bi
            return corner[a] - corner[a + 1] - corner[a + 4] + corner[a + 5]

        centre = block(1, 1)
        code = xp.zeros(centre.shape, dtype=xp.int32)
        for bit, (bi, bj) in zip((128, 64, 32, 16, 8, 4, 2, 1),
                                 ((0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1))):
            code = code + xp.where(block(bi, bj) >= centre, bit, 0)
        node2 = node[None, :] if uniform else node
        word = xp.take(xp.reshape(node_subset, (-1,)), xp.reshape(node2 * 8 + (code >> 5), (-1,)))
        word = xp.reshape(word, code.shape)
        bit = xp.bitwise_and(xp.bitwise_right_shift(word, xp.astype(code & 31, xp.uint32)), xp.asarray(1, dtype=xp.uint32))
        return bit != 0

    left = go_left(roots, True)
    child = xp.where(left, xp.take(node_left, roots)[None, :], xp.take(node_right, roots)[None, :])
    for _ in range(depth - 1):
        inner = child > 0
        node = roots[None, :] + xp.where(inner, child, 0)
        left = go_left(node, False)
        nxt = xp.where(left, xp.take(node_left, node), xp.take(node_right, node))
        child = xp.where(inner, nxt, child)
    leaf = tree_leaf_start[t0:t1][None, :] - child  # child <= 0 is leaf -child
    values = xp.take(leaf_fixed, xp.reshape(leaf, (-1,)))
    return xp.sum(xp.reshape(values, (k, t1 - t0)), axis=1, dtype=xp.int64)


def _prepare(xp: Any, sums: Any, sqsums: Any, tilt: Any, arrays: tuple, *, feature_type: str,
             has_tilted: bool) -> tuple[Any, Any, int]:
    stride = sums.shape[1]
    flat = xp.reshape(sums, (-1,))
    img = xp.concat([flat, xp.reshape(tilt, (-1,))]) if has_tilted else flat
    offs = _corner_offsets(xp, arrays[10], arrays[12], feature_type=feature_type, stride=stride,
                           tilt_base=flat.shape[0])
    return img, offs, stride


def _check_variance(A: int, nf: Any) -> Any:
    return (nf <= 0) | (100 * A * A >= nf)


@kernel("cascade_evaluate")
def evaluate_kernel(xp: Any, sums: Any, sqsums: Any, tilt: Any, windows: Any, *arrays: Any, feature_type: str,
                    window: tuple[int, int], has_tilted: bool, stages: tuple, stage_begin: int, stage_end: int,
                    check_variance: bool) -> Any:
    """Status int32 ``(K,)`` of stages ``[stage_begin, stage_end)`` at ``windows`` (see the module docstring).

    ``arrays`` are :meth:`Cascade.arrays`; ``stages`` is :meth:`Cascade.stage_layout`.
    """
    img, offs, stride = _prepare(xp, sums, sqsums, tilt, arrays, feature_type=feature_type, has_tilted=has_tilted)
    win = xp.astype(windows, xp.int32)
    k = win.shape[0]
    status = xp.ones(k, dtype=xp.int32)
    alive = xp.ones(k, dtype=xp.bool)
    nf = None
    if feature_type == "haar":
        nf = _variance_term(xp, xp.reshape(sums, (-1,)), xp.reshape(sqsums, (-1,)), win, window=window, stride=stride)
        if check_variance:
            W, H = window
            bad = _check_variance((W - 2) * (H - 2), nf)
            status = xp.where(bad, xp.asarray(-1, dtype=xp.int32), status)
            alive = ~bad
    thr_fixed = arrays[0]
    for s in range(stage_begin, stage_end):
        t0, t1, depth = stages[s]
        acc = _stage_sum(xp, img, win, nf, offs, arrays, feature_type=feature_type, t0=t0, t1=t1, depth=depth)
        fail = alive & (acc < thr_fixed[s])
        status = xp.where(fail, xp.asarray(-s, dtype=xp.int32), status)
        alive = alive & ~fail
    return status


@evaluate_kernel.override("numpy")
def _evaluate_numpy(sums: Any, sqsums: Any, tilt: Any, windows: Any, *arrays: Any, feature_type: str,
                    window: tuple[int, int], has_tilted: bool, stages: tuple, stage_begin: int, stage_end: int,
                    check_variance: bool) -> Any:
    # The host schedule: each stage runs only on the windows still alive (compacted with
    # flatnonzero), in blocks of about NUMPY_BLOCK window-trees whose temporaries stay in a core's
    # cache, on the NumPy backend's workers (each writes only its own block's slice). Stump stages
    # (every shipped face cascade) take _NumpyStumps' arithmetic, deeper trees the portable
    # _stage_sum. numpy:readonly runs the portable version; the tests require equal bits.
    img, offs, stride = _prepare(np, sums, sqsums, tilt, arrays, feature_type=feature_type, has_tilted=has_tilted)
    img = np.ascontiguousarray(img)
    win_all = np.asarray(windows).astype(np.intp)
    k = win_all.shape[0]
    status = np.ones(k, dtype=np.int32)
    alive = np.arange(k)
    nf_all = None
    if feature_type == "haar" and k:
        W, H = window
        nf_all = np.empty(k, np.int64)
        corners = (stride + 1, stride + W - 1, (H - 1) * stride + 1, (H - 1) * stride + W - 1)
        flat_s, flat_q = np.reshape(sums, (-1,)), np.reshape(sqsums, (-1,))
        numpy_blocks(k, NUMPY_BLOCK // 8, lambda a, b: _variance_numpy(flat_s, flat_q, win_all[a:b], corners,
                                                                        (W - 2) * (H - 2), nf_all[a:b]))
        if check_variance:
            bad = _check_variance((W - 2) * (H - 2), nf_all)
            status[bad] = -1
            alive = np.flatnonzero(~bad)
    stumps = _NumpyStumps(arrays, offs, feature_type, stages, stage_begin, stage_end)
    thr_fixed = arrays[0]
    stump_stages = all(stages[s][2] == 1 for s in range(stage_begin, stage_end))
    if compiled() and alive.size and stage_end > stage_begin and stump_stages:
        _evaluate_compiled(stumps, img, win_all, nf_all, alive, status, thr_fixed, stage_begin, stage_end)
        return status
    first = stage_begin
    if feature_type == "haar" and first < stage_end and stages[first][2] == 1 and alive.size >= NUMPY_DENSE_MIN:
        # On the large rectangles of windows (a scan grid's levels) the first stage's lookups
        # are strided views of the tables instead of gathers (Haar: 1.7x faster; LBP's many
        # block differences cost as much on views as the gathers save, so it keeps them).
        passed_all = _dense_first_stage(stumps, first, img, stride, win_all, nf_all) >= thr_fixed[first]
        passed = passed_all[alive]
        status[alive[~passed]] = -first
        alive = alive[passed]
        first += 1
    for s in range(first, stage_end):
        if alive.size == 0:
            break
        t0, t1, depth = stages[s]
        win = win_all[alive]
        nf = None if nf_all is None else nf_all[alive]
        passed = np.empty(alive.size, bool)
        if depth == 1:
            def run(a: int, b: int, s: int = s) -> None:
                passed[a:b] = stumps.stage_sum(s, img, win[a:b], None if nf is None else nf[a:b]) >= thr_fixed[s]
        else:
            def run(a: int, b: int, s: int = s, t0: int = t0, t1: int = t1, depth: int = depth) -> None:
                acc = _stage_sum(np, img, win[a:b].astype(np.int32), None if nf is None else nf[a:b], offs, arrays,
                                 feature_type=feature_type, t0=t0, t1=t1, depth=depth)
                passed[a:b] = acc >= thr_fixed[s]
        per_block = NUMPY_BLOCK if feature_type == "haar" else NUMPY_BLOCK // 2  # LBP: 30 temporaries a block
        numpy_blocks(alive.size, max(1, per_block // max(1, t1 - t0)), run)
        status[alive[~passed]] = -s
        alive = alive[passed]
    return status


def _evaluate_compiled(stumps: "_NumpyStumps", img: np.ndarray, win_all: np.ndarray, nf_all: Any, alive: np.ndarray,
                       status: np.ndarray, thr_fixed: Any, begin: int, end: int) -> None:
    """Stump stages ``[begin, end)`` at the windows ``alive``, one window at a time through its
    stages (``_cascade_numba``), in blocks on the NumPy workers; writes ``status[alive]``."""
    from . import _cascade_numba

    layout = stumps.packed(begin, end)
    threshold = np.asarray(thr_fixed)[begin:end].astype(np.int64)
    win = win_all[alive].astype(np.int64)
    out = np.empty(alive.size, np.int32)
    if stumps.feature_type == "haar":
        img32, nf = img.view(np.int32), nf_all[alive]
        offsets, coefs, counts, signed, gains, right_sum, trees = layout

        def run(a: int, b: int) -> None:
            _cascade_numba.haar_windows(img32, win[a:b], nf[a:b], out[a:b], begin, trees, threshold, right_sum,
                                        offsets, coefs, counts, signed, gains)
    else:
        offsets, luts, trees = layout

        def run(a: int, b: int) -> None:
            _cascade_numba.lbp_windows(img, win[a:b], out[a:b], begin, trees, threshold, offsets, luts)

    numpy_blocks(alive.size, max(4096, -(-alive.size // 16)), run)
    status[alive] = out


#: Fewest windows for which the first stage looks for rectangles of windows (below: gathers),
#: and the fewest windows of a rectangle it evaluates through views: each band costs a few
#: hundred NumPy calls, worth it on large levels only (a plan's scattered survivors never are).
NUMPY_DENSE_MIN = 1 << 13
#: Shortest row of windows evaluated through views, and windows per band of a rectangle (a
#: band's (rows x columns) temporaries stay in a core's cache).
NUMPY_DENSE_COLS = 16
NUMPY_DENSE_BAND = 1 << 16


def _window_rects(win: np.ndarray) -> list:
    """Rectangles ``(a, R, C, rs, cs)`` of ``win``: ``win[a + i*C + j] = win[a] + i*rs + j*cs``
    for ``i < R``, ``j < C`` (rows of at least NUMPY_DENSE_COLS windows, ``cs > 0``, ``rs > 0``
    or 0 for a single row).

    A row is a run of equal differences (an arithmetic sequence, so exact by construction); a
    rectangle is a run of rows of equal length and step that follow each other in ``win`` and
    whose first windows step by one ``rs``. Windows in no rectangle are left to the gathers."""
    k = win.size
    if k < NUMPY_DENSE_COLS:
        return []
    d = np.diff(win)
    cut = np.flatnonzero(d[1:] != d[:-1]) + 1
    run_a = np.concatenate([[0], cut])            # runs of equal differences d[run_a : run_b]
    run_b = np.concatenate([cut, [k - 1]])
    step = d[run_a]
    row = (run_b - run_a + 1 >= NUMPY_DENSE_COLS) & (step > 0)
    a, b, cs = run_a[row], run_b[row], step[row]  # a row's windows: a .. b inclusive
    a[1:] += a[1:] == b[:-1]  # a window shared with the row before stays there
    c = b - a + 1
    keep = c >= NUMPY_DENSE_COLS
    a, c, cs = a[keep], c[keep], cs[keep]
    if a.size == 0:
        return []
    rs = np.zeros(a.size, np.int64)
    rs[1:] = win[a[1:]] - win[a[:-1]]
    link = np.zeros(a.size, bool)
    link[1:] = (c[1:] == c[:-1]) & (cs[1:] == cs[:-1]) & (a[1:] == a[:-1] + c[:-1]) & (rs[1:] > 0)
    new = ~link
    new[2:] |= link[1:-1] & (rs[2:] != rs[1:-1])  # a rectangle's rows all step by one rs
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], a.size)
    return [(int(a[i]), int(j - i), int(c[i]), int(rs[i + 1]) if j - i > 1 else 0, int(cs[i]))
            for i, j in zip(starts, ends)]


def _dense_first_stage(stumps: "_NumpyStumps", s: int, img: np.ndarray, stride: int, win: np.ndarray,
                       nf: Any) -> np.ndarray:
    """Stump stage ``s``'s int64 leaf sum at every window: views on the rectangles of
    :func:`_window_rects` (in bands), the gathers elsewhere; the same sums either way."""
    k = win.size
    acc = np.empty(k, np.int64)
    covered = np.zeros(k, bool)
    lo, hi = stumps.offset_range(s)
    tasks = []
    for a, R, C, rs, cs in _window_rects(win):
        if R * C < NUMPY_DENSE_MIN:
            continue
        rows = max(1, NUMPY_DENSE_BAND // C)
        for i0 in range(0, R, rows):
            i1 = min(R, i0 + rows)
            base = int(win[a]) + i0 * rs
            if base + lo >= 0 and base + (i1 - i0 - 1) * rs + (C - 1) * cs + hi < img.shape[0]:
                tasks.append((a + i0 * C, i1 - i0, C, base, rs, cs))
    views = _Views(img, stride)

    def band(j: int, _: int) -> None:
        at, R, C, base, rs, cs = tasks[j]
        part = slice(at, at + R * C)
        nfb = None if nf is None else np.maximum(nf[part], 0).astype(np.float64).reshape(R, C)
        acc[part] = stumps.dense_stage_sum(s, views, base, R, C, rs, cs, nfb).reshape(-1)
        covered[part] = True

    numpy_blocks(len(tasks), 1, band)
    rest = np.flatnonzero(~covered)
    if rest.size:
        block = max(1, NUMPY_BLOCK // max(1, stumps.trees(s)))

        def gather(a: int, b: int) -> None:
            idx = rest[a:b]
            acc[idx] = stumps.stage_sum(s, img, win[idx], None if nf is None else nf[idx])

        numpy_blocks(rest.size, block, gather)
    return acc


class _Views:
    """``view(p, R, C, rs, cs)``: the table entries ``img[p + i*rs + j*cs]`` as an (R, C) view
    (a 2-D slice of the tables when the rows neither wrap nor step between table rows, else
    ``as_strided``; the caller has checked the range)."""

    def __init__(self, img: np.ndarray, stride: int) -> None:
        self.flat = img.view(np.int32)  # Haar: sums modulo 2**32; LBP views it back as uint32
        self.stride = stride
        self.rows = self.flat[: img.shape[0] // stride * stride].reshape(-1, stride)

    def view(self, p: int, R: int, C: int, rs: int, cs: int) -> np.ndarray:
        y, x = divmod(p, self.stride)
        if rs % self.stride == 0 and x + (C - 1) * cs < self.stride and y + (R - 1) * (rs // self.stride) < \
                self.rows.shape[0]:
            ry = max(1, rs // self.stride)
            return self.rows[y : y + (R - 1) * ry + 1 : ry, x : x + (C - 1) * cs + 1 : cs]
        return np.lib.stride_tricks.as_strided(self.flat[p:], shape=(R, C), strides=(rs * 4, cs * 4),
                                               writeable=False)


#: Window-trees per block of the NumPy evaluation: a block's int32/float64 temporaries (a few
#: (trees x windows) arrays) stay within a core's L2 cache. Measured on the 2-core machine: 1.3-1.5x
#: faster than blocks of 2**20, whose temporaries went through memory.
NUMPY_BLOCK = 1 << 16


def _variance_numpy(flat_s: np.ndarray, flat_q: np.ndarray, win: np.ndarray, corners: tuple, area: int,
                    out: np.ndarray) -> None:
    """_variance_term's ``nf = A*q - s*s`` (int64) for the windows ``win``, into ``out``."""
    def rect(img: np.ndarray) -> np.ndarray:
        g = [img.take(win + o) for o in corners]
        return (g[0] - g[1] - g[2] + g[3]).astype(np.int64)  # uint32 wrap: the true sum (< 2**32)

    s = rect(flat_s)
    np.multiply(rect(flat_q), area, out=out)
    out -= s * s


class _NumpyStumps:
    """Per-stage tables of the stump stages for the NumPy evaluation (built per call: ~1 ms).

    Haar: each feature's corner lookups with equal offsets merged (their weights added) and the
    zero ones dropped -- 6 to 9 lookups instead of 12 for the shipped cascades -- trees sorted by
    lookup count so lookup ``c`` runs on the first ``count[c]`` trees only. ``F = sum coef *
    I[win + off]`` is computed in int32 that wraps: every step is exact modulo 2**32 and the
    true ``F`` fits int32 (the loader's bound), so it equals the portable ``total`` bit for bit.
    LBP: per tree the 16 corner offsets and a 256-entry table of the leaf each code picks.
    """

    def __init__(self, arrays: tuple, offs: Any, feature_type: str, stages: tuple, begin: int, end: int) -> None:
        (_, tree_node_start, tree_leaf_start, node_feature, node_left, node_right, _, node_threshold_sq,
         node_subset, leaf_fixed, _, feature_weight, _) = arrays
        node_threshold = arrays[6]
        self.feature_type = feature_type
        self.tables: dict[int, tuple] = {}
        trees = [(s, stages[s][0], stages[s][1]) for s in range(begin, end) if stages[s][2] == 1]
        if not trees:
            return
        tree_ids = np.concatenate([np.arange(t0, t1) for _, t0, t1 in trees]).astype(np.intp)
        node = np.asarray(tree_node_start)[tree_ids].astype(np.intp)
        feat = np.asarray(node_feature)[node].astype(np.intp)
        leaf_start = np.asarray(tree_leaf_start)[tree_ids].astype(np.int64)
        # a stump's children are leaves (<= 0): leaf -child of its tree
        leaf_l = np.asarray(leaf_fixed)[leaf_start - np.asarray(node_left)[node]]
        leaf_r = np.asarray(leaf_fixed)[leaf_start - np.asarray(node_right)[node]]
        offs = np.asarray(offs).astype(np.intp)[feat]
        if feature_type == "haar":
            w = np.asarray(feature_weight).astype(np.int32)[feat]
            coef = (w[:, :, None] * np.array([1, -1, -1, 1], np.int32)).reshape(-1, 12)
            order = np.argsort(offs, axis=1, kind="stable")
            so = np.take_along_axis(offs, order, axis=1)
            sc = np.take_along_axis(coef, order, axis=1)
            first = np.ones(so.shape, bool)
            first[:, 1:] = so[:, 1:] != so[:, :-1]
            group = np.cumsum(first, axis=1) - 1
            merged = np.zeros(so.shape, np.int32)
            np.add.at(merged, (np.arange(so.shape[0])[:, None], group), sc)
            moff = np.zeros(so.shape, np.intp)
            moff[np.arange(so.shape[0])[:, None].repeat(12, 1)[first], group[first]] = so[first]
            keep = merged != 0
            pack = np.argsort(~keep, axis=1, kind="stable")  # the kept lookups first
            moff = np.take_along_axis(moff, pack, axis=1)
            merged = np.take_along_axis(merged, pack, axis=1)
            count = keep.sum(axis=1)
            thr = np.asarray(node_threshold)[node]
            thr_sq = np.asarray(node_threshold_sq)[node].astype(np.float64)
            signed = np.where(thr > 0, thr_sq, -thr_sq)
        else:
            subset = np.asarray(node_subset).astype(np.uint32).reshape(-1, 8)[node]  # (T, 8) words
            code = np.arange(256)
            bit = (subset[:, code >> 5] >> (code & 31).astype(np.uint32)) & 1  # (T, 256)
            lut = np.where(bit != 0, leaf_l[:, None], leaf_r[:, None]).astype(np.int64)
        a = 0
        for s, t0, t1 in trees:
            part = slice(a, a + t1 - t0)
            a += t1 - t0
            if feature_type == "haar":
                order = np.argsort(-count[part], kind="stable")
                cnt = count[part][order]
                lookups = tuple(int((cnt > c).sum()) for c in range(int(cnt.max(initial=0))))
                self.tables[s] = (moff[part][order], merged[part][order], lookups, signed[part][order][:, None],
                                  int(leaf_r[part].sum()), (leaf_l[part] - leaf_r[part])[order].astype(np.float64))
            else:
                self.tables[s] = (offs[part], np.ascontiguousarray(lut[part]).reshape(-1),
                                  (np.arange(t1 - t0, dtype=np.intp) * 256)[:, None])

    def trees(self, s: int) -> int:
        return self.tables[s][0].shape[0]

    def packed(self, begin: int, end: int) -> tuple:
        """Stages ``[begin, end)``'s tables concatenated for the compiled loops: tree arrays in
        stage order and ``trees`` (int64 ``(S + 1,)``), stage ``s``'s trees ``trees[s - begin]:
        trees[s - begin + 1]``. Haar: ``(offsets (T, 12) int64, coefs (T, 12) int32, counts (T,),
        signed thr^2 (T,) float64, left-minus-right gains (T,) int64, right sums (S,) int64,
        trees)``; LBP: ``(offsets (T, 16) int64, leaf tables (T, 256) int64, trees)``."""
        tables = [self.tables[s] for s in range(begin, end)]
        trees = np.zeros(len(tables) + 1, np.int64)
        trees[1:] = np.cumsum([t[0].shape[0] for t in tables])
        if self.feature_type == "haar":
            counts = []
            for off, _, lookups, *_ in tables:
                count = np.zeros(off.shape[0], np.int64)
                for n in lookups:
                    count[:n] += 1
                counts.append(count)
            return (np.concatenate([t[0] for t in tables]).astype(np.int64),
                    np.concatenate([t[1] for t in tables]).astype(np.int32),
                    np.concatenate(counts),
                    np.concatenate([t[3][:, 0] for t in tables]).astype(np.float64),
                    np.concatenate([t[5] for t in tables]).astype(np.int64),  # exact integers
                    np.array([t[4] for t in tables], np.int64), trees)
        return (np.concatenate([t[0] for t in tables]).astype(np.int64),
                np.concatenate([t[1].reshape(-1, 256) for t in tables]).astype(np.int64), trees)

    def offset_range(self, s: int) -> tuple[int, int]:
        """Smallest and largest corner offset stage ``s`` reads."""
        off = self.tables[s][0]
        if self.feature_type == "haar":
            lookups = self.tables[s][2]
            used = np.concatenate([off[:n, c] for c, n in enumerate(lookups)]) if lookups else np.zeros(1, np.intp)
            return int(used.min()), int(used.max())
        return int(off.min()), int(off.max())

    def dense_stage_sum(self, s: int, views: "_Views", base: int, R: int, C: int, rs: int, cs: int,
                        nf: Any) -> np.ndarray:
        """Haar stage ``s``'s int64 leaf sum (R, C) at the windows ``base + i*rs + j*cs``: the
        arithmetic of :meth:`stage_sum` one tree at a time on views of the tables."""
        off, coef, lookups, signed, right_sum, left_gain = self.tables[s]
        count = np.zeros(off.shape[0], np.intp)
        for n in lookups:
            count[:n] += 1
        gains = np.zeros((R, C))
        for t in range(off.shape[0]):
            total = None
            for c in range(count[t]):
                v = views.view(base + int(off[t, c]), R, C, rs, cs)
                w = int(coef[t, c])
                if total is None:
                    total = v * np.int32(w)
                elif w == 1:
                    total += v
                elif w == -1:
                    total -= v
                else:
                    total += v * np.int32(w)
            f = total.astype(np.float64)
            f *= np.abs(f)
            gains += left_gain[t] * (f < signed[t, 0] * nf)  # as _haar (nf clamped at 0)
        return right_sum + gains.astype(np.int64)

    def stage_sum(self, s: int, img: np.ndarray, win: np.ndarray, nf: Any) -> np.ndarray:
        """The stump stage ``s``'s int64 leaf sum at windows ``win`` (intp flat offsets)."""
        if self.feature_type == "haar":
            return self._haar(s, img, win, nf)
        return self._lbp(s, img, win)

    def _haar(self, s: int, img: np.ndarray, win: np.ndarray, nf: np.ndarray) -> np.ndarray:
        off, coef, lookups, signed, right_sum, left_gain = self.tables[s]
        img32 = img.view(np.int32)  # the same bits: sums modulo 2**32
        total = None
        for c, n in enumerate(lookups):
            v = img32.take(off[:n, c : c + 1] + win[None, :])
            v *= coef[:n, c : c + 1]
            if total is None:
                total = v
            else:
                total[:n] += v
        # The portable decision is: thr > 0: F < 0 or F^2 < thr^2 nf; thr <= 0: F < 0 and F^2 >
        # thr^2 nf. With g = F |F| (exact in float64: |F| < 2**26.5) and nf >= 0 both are
        # g < sign(thr) * fl(thr^2 * nf) (IEEE rounding is symmetric in sign). nf < 0 (a window
        # whose rows wrap; never a real one: A q >= s^2) and nf = 0 both make the portable
        # decision F < 0, which is g < +-0: so nf is clamped at 0 first.
        f = total.astype(np.float64)
        t = np.abs(f)
        f *= t
        np.multiply(signed, np.maximum(nf, 0).astype(np.float64)[None, :], out=t)
        np.less(f, t, out=t)  # left: 1.0, right: 0.0
        # The sum of the chosen leaves = sum(right leaves) + sum over left trees of (left - right),
        # the second as one float64 sum of products (einsum: no BLAS threads beside ours): every
        # term and partial sum is an integer below 2**53 (the loader bounds sum |leaf| of a stage
        # below 2**52), so exact in any order of additions, with or without FMA.
        return right_sum + np.einsum("t,tk->k", left_gain, t).astype(np.int64)

    def _lbp(self, s: int, img: np.ndarray, win: np.ndarray) -> np.ndarray:
        off, lut, rows = self.tables[s]
        corner = [img.take(off[:, c : c + 1] + win[None, :]) for c in range(16)]  # uint32, as the portable
        index = _lbp_code(corner).astype(np.intp)
        index += rows  # the tree's row of the leaf table
        return lut.take(index).sum(axis=0)


def _lbp_code(corner: list) -> np.ndarray:
    """The 8-bit LBP code (uint8) from the 16 uint32 corners of the 4x4 block grid (row-major).

    block (bi, bj) = c[a] - c[a+1] - c[a+4] + c[a+5] (a = 4 bj + bi) = across[bj+1][bi] -
    across[bj][bi] with across[j][i] = c[4j+i+1] - c[4j+i]: 21 subtractions instead of 27, the
    same residues modulo 2**32, hence the same (true, < 2**32) block sums as the portable's."""
    across = [[corner[4 * j + i + 1] - corner[4 * j + i] for i in range(3)] for j in range(4)]

    def block(bi: int, bj: int) -> np.ndarray:
        return across[bj + 1][bi] - across[bj][bi]

    centre = block(1, 1)
    code = None
    for shift, (bi, bj) in zip((7, 6, 5, 4, 3, 2, 1, 0),
                               ((0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1))):
        bit = np.greater_equal(block(bi, bj), centre).view(np.uint8)
        if code is None:
            code = bit << shift
        else:
            code |= bit << shift if shift else bit
    return code


@kernel("cascade_evaluate_plan")
def plan_evaluate_kernel(xp: Any, sums: Any, sqsums: Any, tilt: Any, windows: Any, plan: Any, count: Any,
                         *arrays: Any, feature_type: str, window: tuple[int, int], has_tilted: bool, stages: tuple,
                         stage_begin: int, stage_end: int, check_variance: bool) -> Any:
    """Status int32 ``(C,)`` of ``windows[plan[i]]`` for ``i < count``, 0 for the other slots.

    ``plan`` (int32 ``(C,)``) and ``count`` (0-d int32) come from :func:`compact_kernel` and stay
    on the device: the capacity ``C`` is static, so no host round trip is needed between the
    breadth-first stages and the plan (B's proposal; the CuPy override launches the stages with
    the device count and the plan as an index into ``windows``).
    """
    win = xp.take(windows, plan)
    # through the dispatcher: a backend's evaluation override (JAX's blocks) serves plans too
    status = evaluate_kernel(sums, sqsums, tilt, win, *arrays, feature_type=feature_type, window=window,
                             has_tilted=has_tilted, stages=stages, stage_begin=stage_begin, stage_end=stage_end,
                             check_variance=check_variance)
    live = xp.arange(plan.shape[0], dtype=xp.int32) < count
    return xp.where(live, status, xp.asarray(0, dtype=xp.int32))


@plan_evaluate_kernel.override("numpy")
def _plan_evaluate_numpy(sums: Any, sqsums: Any, tilt: Any, windows: Any, plan: Any, count: Any, *arrays: Any,
                         **params: Any) -> Any:
    # The host knows count for free: the host schedule on the live slots only.
    plan = np.asarray(plan)
    n = max(0, min(int(count), plan.shape[0]))
    status = np.zeros(plan.shape[0], np.int32)
    if n:
        status[:n] = _evaluate_numpy(sums, sqsums, tilt, np.asarray(windows)[plan[:n]], *arrays, **params)
    return status


@evaluate_kernel.override("jax", supports="every input (in blocks of windows)")
def _evaluate_jax(sums: Any, sqsums: Any, tilt: Any, windows: Any, *arrays: Any, **params: Any) -> Any:
    from ...backends import backend

    xp = backend().xp
    stages = params["stages"][params["stage_begin"] : params["stage_end"]]
    trees = max([t1 - t0 for t0, t1, _ in stages] or [1])
    corners = 16 if params["feature_type"] == "lbp" else 12
    block = block_size(CPU_BLOCK, WINDOW_TREE_BYTES * corners // 12 * trees)
    return jax_blocked(lambda w: evaluate_kernel.portable(xp, sums, sqsums, tilt, w, *arrays, **params), windows,
                        block=block)


@kernel("cascade_candidates")
def candidates_kernel(xp: Any, plan: Any, count: Any, status: Any, *, limit: int) -> Any:
    """The one small device -> host transfer of a detection: int32 ``(limit + 2,)``.

    ``[count, n, idx_0, ..., idx_{limit-1}]``: ``count`` the plan's length, ``n`` the number of
    plan slots whose later-stage ``status`` is 1 (all of them, not capped by ``limit``), and
    ``idx`` their window indices ``plan[i]`` in ascending order (zeros after ``min(n, limit)``).
    """
    capacity = plan.shape[0]
    keep, n = compact_kernel.portable(xp, status, None, capacity=capacity)
    idx = xp.take(plan, keep[:limit]) if limit <= capacity else xp.concat(
        [xp.take(plan, keep), xp.zeros(limit - capacity, dtype=xp.int32)])
    head = xp.stack([xp.astype(count, xp.int32), xp.astype(n, xp.int32)])
    return xp.concat([head, xp.where(xp.arange(limit, dtype=xp.int32) < n, idx, 0)])


@candidates_kernel.override("numpy")
def _candidates_numpy(plan: Any, count: Any, status: Any, *, limit: int) -> Any:
    plan, status = np.asarray(plan), np.asarray(status)
    found = np.flatnonzero(status == 1)
    out = np.zeros(limit + 2, np.int32)
    out[0], out[1] = int(count), found.size  # n: every survivor, not capped by limit
    m = min(found.size, limit)
    out[2 : 2 + m] = plan[found[:m]]
    return out
