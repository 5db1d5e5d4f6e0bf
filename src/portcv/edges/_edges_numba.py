"""Canny's candidates and hysteresis compiled with Numba: the NumPy overrides' loops where the
``cpu`` extra is installed.

The candidates are the portable version's int32 arithmetic (``canny_candidates_kernel``) one row
at a time over three magnitude rows (0 outside the image), branch-free so that LLVM vectorizes
the row; the hysteresis is a flood from the strong candidates over their weak 8-neighbours with
an explicit stack, sequential per frame: its result is the union of the candidates'
8-connected components that hold a strong pixel, whatever the order of the flood.
"""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def _magnitude_row(gx: np.ndarray, gy: np.ndarray, l2: bool, dst: np.ndarray) -> None:
    """``dst[1 + i]`` = the portable int32 magnitude of pixel ``i`` (``|gx| + |gy|``, or
    ``gx^2 + gy^2`` wrapped to int32 as the portable int32 sum); ``dst[0] = dst[-1] = 0``."""
    dst[0] = 0
    dst[dst.shape[0] - 1] = 0
    inner = dst[1: dst.shape[0] - 1]
    if l2:
        for i in range(inner.shape[0]):
            x, y = np.int64(gx[i]), np.int64(gy[i])
            inner[i] = np.int32(x * x + y * y)  # truncation: the portable int32 wrap
    else:
        for i in range(inner.shape[0]):
            inner[i] = np.int32(abs(np.int32(gx[i]))) + np.int32(abs(np.int32(gy[i])))


@numba.njit(**NUMBA_OPTIONS)
def _candidates_row(gx: np.ndarray, gy: np.ndarray, prev: np.ndarray, cur: np.ndarray, nxt: np.ndarray,
                    low: np.int32, high: np.int32, tg22: np.int32, out: np.ndarray) -> None:
    """One row of states: ``prev``, ``cur``, ``nxt`` are the magnitude rows above, at and below
    it, each ``W + 2`` long (0 at both ends).

    Every neighbour is loaded and the pair along the direction selected by value (selections of
    loaded values, where conditional loads would stop LLVM vectorizing the row); then
    ``m > a and m >= b`` horizontally and vertically, ``m > a and m > b`` diagonally."""
    w = out.shape[0]
    pl, pc, pr = prev[0:w], prev[1:w + 1], prev[2:w + 2]
    cl, cc, cr = cur[0:w], cur[1:w + 1], cur[2:w + 2]
    nl, nc, nr = nxt[0:w], nxt[1:w + 1], nxt[2:w + 2]
    for i in range(w):
        x = np.int32(gx[i])
        y = np.int32(gy[i])
        ax = np.int32(abs(x))
        q = np.int32(np.int32(abs(y)) << np.int32(15))
        tg22x = np.int32(ax * tg22)
        # tg22x + ax * 2**16 in int32: it wraps for |gx| > 27146, as the portable int32 sum does
        steep = np.int32(tg22x + np.int32(ax << np.int32(16)))
        m = cc[i]
        horizontal = q < tg22x
        vertical = q > steep  # the portable version tests it only where not horizontal
        positive = (x ^ y) >= np.int32(0)
        vpl, vpc, vpr, vcl, vcr, vnl, vnc, vnr = pl[i], pc[i], pr[i], cl[i], cr[i], nl[i], nc[i], nr[i]
        da = vpl if positive else vpr
        db = vnr if positive else vnl
        va = vpc if vertical else da
        vb = vnc if vertical else db
        a = vcl if horizontal else va
        b = vcr if horizontal else vb
        is_max = (m > a) & ((m > b) | ((horizontal | vertical) & (m == b)))
        candidate = is_max & (m > low)
        out[i] = np.uint8(candidate) + np.uint8(candidate & (m > high))


@numba.njit(**NUMBA_OPTIONS)
def canny_candidate_rows(gx: np.ndarray, gy: np.ndarray, out: np.ndarray, h: int, w: int, plane: int, r0: int,
                         r1: int, low: int, high: int, l2: bool, tg22: int, mag: np.ndarray) -> None:
    """Rows ``r0:r1`` of plane ``plane`` of the C-contiguous int16 ``(planes, H, W)`` gradients
    (1-D ``gx``, ``gy``) into the 1-D uint8 states ``out``; ``tg22``: ``CANNY_TG22`` (passed, so
    that this module does not import the one that imports it); ``mag``: a work buffer of at
    least ``3 (W + 2)`` int32, holding the magnitude rows ``r - 1``, ``r``, ``r + 1`` in turn."""
    stride = w + 2
    base = plane * h * w
    lo, hi, tg = np.int32(low), np.int32(high), np.int32(tg22)
    # slot (r - r0 + 1) % 3 holds the magnitude of row r
    for r in range(r0 - 1, r0 + 1):
        s = (r - r0 + 1) % 3
        row = mag[s * stride: (s + 1) * stride]
        if 0 <= r < h:
            _magnitude_row(gx[base + r * w: base + (r + 1) * w], gy[base + r * w: base + (r + 1) * w], l2, row)
        else:
            row[:] = 0
    for r in range(r0, r1):
        s = (r - r0 + 2) % 3
        row = mag[s * stride: (s + 1) * stride]
        if r + 1 < h:
            a = base + (r + 1) * w
            _magnitude_row(gx[a: a + w], gy[a: a + w], l2, row)
        else:
            row[:] = 0
        p, c, n = (r - r0) % 3, (r - r0 + 1) % 3, (r - r0 + 2) % 3
        a = base + r * w
        _candidates_row(gx[a: a + w], gy[a: a + w], mag[p * stride: (p + 1) * stride],
                        mag[c * stride: (c + 1) * stride], mag[n * stride: (n + 1) * stride], lo, hi, tg, out[a: a + w])


@numba.njit(**NUMBA_OPTIONS)
def _holds_strong(chunk: np.ndarray, strong: np.uint8) -> bool:
    found = False
    for i in range(chunk.shape[0]):  # no early exit: LLVM vectorizes the whole chunk's test
        found |= chunk[i] == strong
    return found


@numba.njit(**NUMBA_OPTIONS)
def _push(state: np.ndarray, out: np.ndarray, q: int, c: int, stack: np.ndarray, top: int) -> int:
    """Mark candidate ``q`` (column ``c``) an edge and push it, unless it is none or one already."""
    if state[q] != 0 and out[q] == 0:
        out[q] = 255
        stack[top] = q
        stack[top + 1] = c
        return top + 2
    return top


@numba.njit(**NUMBA_OPTIONS)
def _flood(state: np.ndarray, out: np.ndarray, h: int, w: int, start: int, stack: np.ndarray) -> None:
    """Every candidate 8-connected to ``start`` (already marked) marked 255, depth first."""
    last_row = (h - 1) * w
    stack[0] = start
    stack[1] = start % w
    top = 2
    while top > 0:
        top -= 2
        p = stack[top]
        c = stack[top + 1]
        left, right = c > 0, c < w - 1
        if p >= w:
            q = p - w
            top = _push(state, out, q, c, stack, top)
            if left:
                top = _push(state, out, q - 1, c - 1, stack, top)
            if right:
                top = _push(state, out, q + 1, c + 1, stack, top)
        if left:
            top = _push(state, out, p - 1, c - 1, stack, top)
        if right:
            top = _push(state, out, p + 1, c + 1, stack, top)
        if p < last_row:
            q = p + w
            top = _push(state, out, q, c, stack, top)
            if left:
                top = _push(state, out, q - 1, c - 1, stack, top)
            if right:
                top = _push(state, out, q + 1, c + 1, stack, top)


#: Pixels whose states are tested for a strong one at once before they are visited one by one.
STRONG_CHUNK = 64


@numba.njit(**NUMBA_OPTIONS)
def hysteresis_frame(state: np.ndarray, out: np.ndarray, h: int, w: int, strong: int, stack: np.ndarray) -> None:
    """Edges (255) of one frame: 1-D ``state`` (0 none, ``strong`` (``CANDIDATE_STRONG``), any
    other value weak) and ``out`` of ``H W`` pixels, ``out`` all 0 on entry; ``stack``: int64
    room for at least ``2 H W`` entries.

    Every strong pixel not yet an edge starts a flood: a pixel popped marks each candidate
    8-neighbour that is not an edge yet as one and pushes it (with its column). A pixel is
    pushed once (marked when pushed), so the stack never holds more than the frame's pixels."""
    n = state.shape[0]
    s = np.uint8(strong)
    for k0 in range(0, n, STRONG_CHUNK):
        chunk = state[k0: k0 + STRONG_CHUNK]
        if not _holds_strong(chunk, s):
            continue
        for i in range(chunk.shape[0]):
            if chunk[i] == s and out[k0 + i] == 0:
                out[k0 + i] = 255
                _flood(state, out, h, w, k0 + i, stack)
