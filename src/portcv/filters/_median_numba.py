"""Median filters compiled with Numba: the NumPy override's loops where the ``cpu`` extra is installed."""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS

_M32 = np.uint64(0x00000000FFFFFFFF)
_M16 = np.uint64(0x0000FFFF0000FFFF)
_M8 = np.uint64(0x00FF00FF00FF00FF)


@numba.njit(**NUMBA_OPTIONS)
def _swap(a: np.uint64, b: np.uint64, shift: np.uint64, mask: np.uint64) -> tuple:
    t = ((a >> shift) ^ b) & mask
    return a ^ (t << shift), b ^ t


@numba.njit(**NUMBA_OPTIONS)
def _t8(w0: np.uint64, w1: np.uint64, w2: np.uint64, w3: np.uint64, w4: np.uint64, w5: np.uint64,
        w6: np.uint64, w7: np.uint64) -> tuple:
    """The transpose of the 8 x 8 byte matrix whose row ``i`` is the little-endian word ``wi``
    (byte ``i`` of word ``j`` out = byte ``j`` of word ``i`` in): three rounds of masked swaps."""
    s32, s16, s8 = np.uint64(32), np.uint64(16), np.uint64(8)
    w0, w4 = _swap(w0, w4, s32, _M32)
    w1, w5 = _swap(w1, w5, s32, _M32)
    w2, w6 = _swap(w2, w6, s32, _M32)
    w3, w7 = _swap(w3, w7, s32, _M32)
    w0, w2 = _swap(w0, w2, s16, _M16)
    w1, w3 = _swap(w1, w3, s16, _M16)
    w4, w6 = _swap(w4, w6, s16, _M16)
    w5, w7 = _swap(w5, w7, s16, _M16)
    w0, w1 = _swap(w0, w1, s8, _M8)
    w2, w3 = _swap(w2, w3, s8, _M8)
    w4, w5 = _swap(w4, w5, s8, _M8)
    w6, w7 = _swap(w6, w7, s8, _M8)
    return w0, w1, w2, w3, w4, w5, w6, w7


@numba.njit(**NUMBA_OPTIONS)
def deinterleave_rows(src: np.ndarray, plane: np.ndarray, xmap: np.ndarray, ymap: np.ndarray, value: int,
                      before: int, planes: int, height: int, ty: int, span: int, p: int, y0: int,
                      y1: int) -> None:
    """Padded rows ``y0:y1`` of plane ``p`` into ``plane`` (uint64 words: the layout of
    :func:`load_lanes`, 8 tile phases; ``span`` a multiple of 8).

    ``src`` is the planes' rows ``(planes * H, W)``; padded row ``y`` is source row ``ymap[y]``
    and padded column ``x`` source column ``xmap[x]``, ``-1`` the constant ``value`` (the
    border rule's indices, :func:`portcv._border.border_indices`; columns ``before`` to
    ``before + W`` are the source row itself). Each padded row is built in a buffer of words
    (word ``c`` = tile column ``c``'s 8 phases), then each 8 words are transposed into 8 phase rows."""
    width = src.shape[1]
    words = np.empty(span, np.uint64)
    padded = words.view(np.uint8)
    fill = np.uint8(value)
    flat = plane.reshape(-1).view(np.uint64)
    row_words = plane.shape[1] // 8
    phase_step = planes * row_words  # words from phase a to a + 1
    for y in range(y0, y1):
        sy = ymap[y]
        if sy < 0:
            for i in range(padded.shape[0]):
                padded[i] = fill
        else:
            row = src[p * height + sy]
            for i in range(before):
                sx = xmap[i]
                padded[i] = fill if sx < 0 else row[sx]
            inner = padded[before: before + width]
            for i in range(width):
                inner[i] = row[i]
            for i in range(before + width, padded.shape[0]):
                sx = xmap[i]
                padded[i] = fill if sx < 0 else row[sx]
        b, r = y % ty, y // ty
        first = ((b * 8) * planes + p) * row_words + r * (span // 8)  # phase 0's word
        for c0 in range(0, span, 8):
            t = _t8(words[c0], words[c0 + 1], words[c0 + 2], words[c0 + 3], words[c0 + 4], words[c0 + 5],
                    words[c0 + 6], words[c0 + 7])
            at = first + c0 // 8
            for a in range(8):
                flat[at + a * phase_step] = t[a]


@numba.njit(**NUMBA_OPTIONS)
def load_lanes(plane: np.ndarray, w: np.ndarray, in_row: np.ndarray, offsets: np.ndarray, planes: int, p: int,
               at: int, lanes: int) -> None:
    """Footprint cell ``i`` of ``lanes`` consecutive tiles from tile ``at`` of plane ``p`` into
    ``w[i * lanes:]`` (the work buffer of the generated ``_median_tiles_numba.band_k*``).

    ``plane`` is the deinterleaved padded image as ``(ty * 8 * planes, depth * span + lanes)``
    bytes (``plane[(b * 8 + a) * planes + p, r * span + c]`` = padded pixel ``(r ty + b, 8 c + a)``),
    so cell ``i`` of consecutive tiles is the contiguous run from ``plane[in_row[i] * planes + p,
    at + offsets[i]]``; the last ``lanes`` columns are room for a last chunk's unused lanes."""
    row_len = plane.shape[1]
    flat = plane.reshape(-1)
    for i in range(in_row.shape[0]):
        start = (in_row[i] * planes + p) * row_len + at + offsets[i]
        src = flat[start: start + lanes]
        dst = w[i * lanes: (i + 1) * lanes]
        for q in range(lanes):
            dst[q] = src[q]


@numba.njit(**NUMBA_OPTIONS)
def store_lanes(w: np.ndarray, first: int, lanes: int, out: np.ndarray, ty: int, planes: int, span: int, cols: int,
                p: int, r0: int, l0: int, n: int) -> None:
    """The first ``n`` tiles of a chunk (lanes ``l0 ..`` of the band from tile row ``r0``) into
    ``out`` (``(planes * rows * ty, cols * 8)`` bytes): ``w[(first + oy * 8 + ox) * lanes + q]``
    is output ``(ox, oy)`` of lane ``q``; each 8 lanes' outputs are transposed into 8 words (one
    tile row of 8 pixels each); tiles past ``cols`` (padding) are not stored."""
    w64 = w.view(np.uint64)
    out64 = out.reshape(-1).view(np.uint64)
    lane_words = lanes // 8
    rows_total = out.shape[0] // (planes * ty)
    # Lane l0 + q is tile (r0 + (l0 + q) // span, (l0 + q) % span): runs of one tile row,
    # each starting at a multiple of 8 lanes (span and lanes are multiples of 8).
    q0 = 0
    while q0 < n:
        r, c0 = (l0 + q0) // span + r0, (l0 + q0) % span
        run = min(n - q0, span - c0)
        c1 = min(c0 + run, cols)
        base = (p * rows_total + r) * ty
        for oy in range(ty):
            orow = (base + oy) * cols
            row0 = (first + oy * 8) * lane_words
            c = c0
            while c + 8 <= c1:
                at = row0 + (q0 + c - c0) // 8  # lanes q .. q + 7 are word at of each output row
                t = _t8(w64[at], w64[at + lane_words], w64[at + 2 * lane_words], w64[at + 3 * lane_words],
                        w64[at + 4 * lane_words], w64[at + 5 * lane_words], w64[at + 6 * lane_words],
                        w64[at + 7 * lane_words])
                for j in range(8):
                    out64[orow + c + j] = t[j]
                c += 8
            while c < c1:
                q = q0 + c - c0
                row = out[base + oy, c * 8: c * 8 + 8]
                for ox in range(8):
                    row[ox] = w[(first + oy * 8 + ox) * lanes + q]
                c += 1
        q0 += run


@numba.njit(**NUMBA_OPTIONS)
def pad_plane(src: np.ndarray, padded: np.ndarray, xmap: np.ndarray, ymap: np.ndarray, value: int, p: int,
              height: int) -> None:
    """``padded[i, j]`` = plane ``p``'s pixel ``(ymap[i], xmap[j])`` of ``src`` (the planes' rows
    ``(planes * H, W)``), or ``value`` where either index is -1 (the border rule's indices)."""
    fill = np.uint8(value)
    for i in range(padded.shape[0]):
        dst = padded[i]
        sy = ymap[i]
        if sy < 0:
            for j in range(dst.shape[0]):
                dst[j] = fill
            continue
        row = src[p * height + sy]
        for j in range(dst.shape[0]):
            sx = xmap[j]
            dst[j] = fill if sx < 0 else row[sx]


@numba.njit(**NUMBA_OPTIONS)
def huang_rows(padded: np.ndarray, out: np.ndarray, ksize: int, y0: int, y1: int) -> None:
    """Rows ``y0:y1`` of one plane's ``ksize`` x ``ksize`` median (``out`` is ``H x W``) from its
    padded copy (``H + k - 1`` x ``W + k - 1``): Huang's sliding histogram along each row.

    The window's 256-bin histogram moves one column at a time (``k`` removals, ``k`` additions),
    with ``below`` = the count of values under the current median ``m``; the median of rank
    ``r = k*k // 2`` is the ``m`` with ``below <= r < below + hist[m]``, reached from the previous
    one by walking the bins (a few steps on natural images). Exact: the value of rank ``r``."""
    rank = ksize * ksize // 2
    width = out.shape[1]
    hist = np.zeros(256, np.int32)
    for y in range(y0, y1):
        for v in range(256):
            hist[v] = 0
        for dy in range(ksize):
            row = padded[y + dy]
            for dx in range(ksize):
                hist[row[dx]] += 1
        m = 0
        below = 0
        while below + hist[m] <= rank:
            below += hist[m]
            m += 1
        dst = out[y]
        dst[0] = m
        for x in range(1, width):
            for dy in range(ksize):
                row = padded[y + dy]
                v = row[x - 1]
                hist[v] -= 1
                if v < m:
                    below -= 1
                v = row[x + ksize - 1]
                hist[v] += 1
                if v < m:
                    below += 1
            if below > rank:
                while below > rank:
                    m -= 1
                    below -= hist[m]
            else:
                while below + hist[m] <= rank:
                    below += hist[m]
                    m += 1
            dst[x] = m
