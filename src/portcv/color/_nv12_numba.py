"""YUV 4:2:0 to RGB compiled with Numba: the NumPy override's loop where the ``cpu`` extra is installed.

The portable version's Q20 arithmetic (``_nv12.py``) in int32, one 2 x 2 block at a time: the
block's three chroma terms once, then its four pixels. The loops run over 1-D row views from 0 to
their length (which LLVM vectorizes); the chroma and channel orders are selections of values
(never of store or load offsets, which would keep LLVM from vectorizing the interleaved
accesses), so one compiled loop serves NV12/NV21/I420/YV12 to RGB and BGR.
"""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def _sat(x: np.int32, shift: np.int32) -> np.uint8:
    return np.uint8(min(max(x >> shift, np.int32(0)), np.int32(255)))


@numba.njit(**NUMBA_OPTIONS)
def _pixels(y0: np.ndarray, y1: np.ndarray, k: int, uu: np.int32, vv: np.int32, bgr: bool, q20: tuple,
            d0: np.ndarray, d1: np.ndarray) -> None:
    """The four pixels of block ``k`` (luma rows ``y0``, ``y1``; output rows ``d0``, ``d1``)."""
    cy, cub, cug, cvg, cvr = np.int32(q20[0]), np.int32(q20[1]), np.int32(q20[2]), np.int32(q20[3]), np.int32(q20[4])
    rounding, shift = np.int32(q20[5]), np.int32(q20[6])
    tr = rounding + cvr * vv
    tg = rounding + cvg * vv + cug * uu
    tb = rounding + cub * uu
    first, last = (tb, tr) if bgr else (tr, tb)
    for q in range(2):
        i = 2 * k + q
        a = max(np.int32(y0[i]) - np.int32(16), np.int32(0)) * cy
        d0[3 * i] = _sat(a + first, shift)
        d0[3 * i + 1] = _sat(a + tg, shift)
        d0[3 * i + 2] = _sat(a + last, shift)
        b = max(np.int32(y1[i]) - np.int32(16), np.int32(0)) * cy
        d1[3 * i] = _sat(b + first, shift)
        d1[3 * i + 1] = _sat(b + tg, shift)
        d1[3 * i + 2] = _sat(b + last, shift)


@numba.njit(**NUMBA_OPTIONS)
def _planar_blocks(y0: np.ndarray, y1: np.ndarray, first: np.ndarray, second: np.ndarray, swap: bool, bgr: bool,
                   q20: tuple, d0: np.ndarray, d1: np.ndarray) -> None:
    for k in range(first.shape[0]):
        a = np.int32(first[k]) - np.int32(128)
        b = np.int32(second[k]) - np.int32(128)
        _pixels(y0, y1, k, b if swap else a, a if swap else b, bgr, q20, d0, d1)


@numba.njit(**NUMBA_OPTIONS)
def _paired_blocks(y0: np.ndarray, y1: np.ndarray, pairs: np.ndarray, swap: bool, bgr: bool, q20: tuple,
                   d0: np.ndarray, d1: np.ndarray) -> None:
    for k in range(pairs.shape[0] // 2):
        a = np.int32(pairs[2 * k]) - np.int32(128)
        b = np.int32(pairs[2 * k + 1]) - np.int32(128)
        _pixels(y0, y1, k, b if swap else a, a if swap else b, bgr, q20, d0, d1)


@numba.njit(**NUMBA_OPTIONS)
def yuv420_block_rows(flat: np.ndarray, out: np.ndarray, h: int, w: int, frame: int, j0: int, j1: int, nv12: bool,
                      swap: bool, bgr: bool, q20: tuple) -> None:
    """Block rows ``j0:j1`` (luma rows ``2 j0 : 2 j1``) of frame ``frame`` of the C-contiguous
    ``(frames, 3H/2, W)`` uint8 frames ``flat`` (1-D) into the 1-D ``(frames, H, W, 3)`` ``out``.

    ``nv12``: the chroma rows hold U, V pairs (else the I420 planes, one after the other, read
    through the frame's bytes); ``swap``: V comes first (NV21, YV12); ``bgr``: blue first;
    ``q20``: the portable version's ``(CY, CUB, CUG, CVG, CVR, ROUND, SHIFT)`` (passed, so that
    this module does not import the one that imports it)."""
    base = frame * (3 * h // 2) * w
    dst = frame * h * w * 3
    half = w // 2
    quarter = (h // 2) * half
    for j in range(j0, j1):
        r0 = base + 2 * j * w
        o0 = dst + 6 * j * w
        y0, y1 = flat[r0: r0 + w], flat[r0 + w: r0 + 2 * w]
        d0, d1 = out[o0: o0 + 3 * w], out[o0 + 3 * w: o0 + 6 * w]
        if nv12:
            c = base + h * w + j * w
            _paired_blocks(y0, y1, flat[c: c + w], swap, bgr, q20, d0, d1)
        else:
            c = base + h * w + j * half
            _planar_blocks(y0, y1, flat[c: c + half], flat[c + quarter: c + quarter + half], swap, bgr, q20,
                           d0, d1)
