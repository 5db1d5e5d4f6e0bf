"""The separable pass compiled with Numba: the NumPy override's loops where the ``cpu`` extra is installed.

A band of output rows is one call. Each source row the band needs is padded once into a 1-D
int32 row (its border pixels by the portable border rule, from the index table of
``_border.border_indices``), correlated with the horizontal taps into a ring of ``len(ky)``
int32 rows, and each output row is the vertical taps' sum over the ring's rows, then the one
rounding step of ``finish_accumulator``. Every sum is computed modulo 2**32 (each operation cast
back to int32), so it equals the portable int32 arithmetic bit for bit whatever the order; the
bounds ``check_accumulator`` enforces make it the exact sum. The inner loops run over 1-D views
from 0 to their length, without branches (LLVM vectorizes them); 3-, 5- and 7-tap passes are
fused into one loop per row.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from .backends.numpy import NUMBA_OPTIONS

#: Finish modes (``finish[0]`` of ``finish_accumulator``) as the loops' integer codes.
FINISH_CODE = {"shift": 0, "floor_div": 1, "box_multiply": 2, "box_float32": 3}


@intrinsic
def shift_right32(typingctx, x, s):  # noqa: ARG001 (numba's intrinsic signature)
    """``x >> s`` in int32 (arithmetic, ``0 <= s < 32``). Numba types ``int32 >> int32`` as int64,
    and LLVM cannot narrow a shift by a variable count back to 32 bits: the vectorized loop
    ran in 64-bit lanes, 2.5x slower."""
    def codegen(context, builder, signature, args):
        return builder.ashr(args[0], args[1])
    return types.int32(types.int32, types.int32), codegen


@numba.njit(**NUMBA_OPTIONS)
def pad_row(row: np.ndarray, xsrc: np.ndarray, before: int, channels: int, value: int, padded: np.ndarray) -> None:
    """``padded[q * C + c] = row[xsrc[q] * C + c]`` as int32 (``value`` where ``xsrc[q] < 0``): the
    row ``row`` (``width * C`` uint8) extended by the border, ``len(xsrc)`` pixels of ``C`` channels."""
    n = row.shape[0]
    width = n // channels
    mid = padded[before * channels: before * channels + n]
    for i in range(n):
        mid[i] = np.int32(row[i])
    for q in range(before):
        _pad_pixel(row, xsrc[q], q, channels, value, padded)
    for q in range(before + width, xsrc.shape[0]):
        _pad_pixel(row, xsrc[q], q, channels, value, padded)


@numba.njit(**NUMBA_OPTIONS)
def _pad_pixel(row: np.ndarray, s: int, q: int, channels: int, value: int, padded: np.ndarray) -> None:
    for c in range(channels):
        padded[q * channels + c] = np.int32(value) if s < 0 else np.int32(row[s * channels + c])


@numba.njit(**NUMBA_OPTIONS)
def sum3(a: np.ndarray, b: np.ndarray, c: np.ndarray, taps: np.ndarray, out: np.ndarray) -> None:
    """``out = taps . (a, b, c)`` (int32, modulo 2**32); (anti)symmetric pairs share a multiply
    (the same sum modulo 2**32)."""
    t0, t1, t2 = taps[0], taps[1], taps[2]
    n = out.shape[0]
    if t0 == t2:
        for i in range(n):
            out[i] = np.int32(t0 * (a[i] + c[i]) + t1 * b[i])
    elif t0 == -t2:
        for i in range(n):
            out[i] = np.int32(t0 * (a[i] - c[i]) + t1 * b[i])
    else:
        for i in range(n):
            out[i] = np.int32(t0 * a[i] + t1 * b[i] + t2 * c[i])


@numba.njit(**NUMBA_OPTIONS)
def sum5(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, e: np.ndarray, taps: np.ndarray,
         out: np.ndarray) -> None:
    """``out = taps . (a, b, c, d, e)`` (int32, modulo 2**32), as :func:`sum3`."""
    t0, t1, t2, t3, t4 = taps[0], taps[1], taps[2], taps[3], taps[4]
    n = out.shape[0]
    if t0 == t1 == t2 == t3 == t4:
        for i in range(n):
            out[i] = np.int32(t0 * (a[i] + b[i] + c[i] + d[i] + e[i]))
    elif t0 == t4 and t1 == t3:
        for i in range(n):
            out[i] = np.int32(t0 * (a[i] + e[i]) + t1 * (b[i] + d[i]) + t2 * c[i])
    elif t0 == -t4 and t1 == -t3:
        for i in range(n):
            out[i] = np.int32(t0 * (a[i] - e[i]) + t1 * (b[i] - d[i]) + t2 * c[i])
    else:
        for i in range(n):
            out[i] = np.int32(t0 * a[i] + t1 * b[i] + t2 * c[i] + t3 * d[i] + t4 * e[i])


@numba.njit(**NUMBA_OPTIONS)
def correlate_row(padded: np.ndarray, taps: np.ndarray, step: int, out: np.ndarray) -> None:
    """``out[i] = sum_t taps[t] * padded[i + t * step]`` (int32, modulo 2**32) for ``i < len(out)``."""
    n = out.shape[0]
    k = taps.shape[0]
    if k == 3:
        sum3(padded[0:n], padded[step: step + n], padded[2 * step: 2 * step + n], taps, out)
        return
    if k == 5:
        sum5(padded[0:n], padded[step: step + n], padded[2 * step: 2 * step + n], padded[3 * step: 3 * step + n],
             padded[4 * step: 4 * step + n], taps, out)
        return
    a = padded[0:n]
    t0 = taps[0]
    for i in range(n):
        out[i] = np.int32(t0 * a[i])
    for t in range(1, k):
        w = taps[t]
        if w == 0:
            continue
        a = padded[t * step: t * step + n]
        for i in range(n):
            out[i] = np.int32(out[i] + w * a[i])


@numba.njit(**NUMBA_OPTIONS)
def finish_row(acc: np.ndarray, mode: int, p0: int, p1: int, inv: float, lo: int, hi: int, out: np.ndarray) -> None:
    """``finish_accumulator`` of one row of int32 sums into ``out`` (uint8, int16 or int32)."""
    n = out.shape[0]
    low, high = np.int32(lo), np.int32(hi)  # int32 bounds: 64-bit compares ran 6x slower
    if mode == 0:  # shift: round half up, >> (arithmetic), saturate to [lo, hi]
        if p0 > 0:
            add, right = np.int32(1 << (p0 - 1)), np.int32(p0)
            for i in range(n):
                v = shift_right32(np.int32(acc[i] + add), right)
                out[i] = min(max(v, low), high)
        else:
            for i in range(n):
                out[i] = min(max(np.int32(acc[i]), low), high)
    elif mode == 1:  # floor_div: floor(acc / p0), saturated
        for i in range(n):
            out[i] = min(max(np.int32(acc[i] // p0), low), high)
    elif mode == 2:  # box_multiply: ((acc + dd) * ds) >> 23 in uint32, the low byte stored
        dd, ds = np.int32(p0), np.uint32(p1)
        for i in range(n):
            s = np.uint32(np.int32(acc[i] + dd))
            out[i] = np.uint8(np.uint32(s * ds) >> np.uint32(23))
    else:  # box_float32: rint_even(float32(acc) * float32(1 / A))
        scale = np.float32(inv)
        for i in range(n):
            out[i] = np.uint8(np.rint(np.float32(acc[i]) * scale))


@numba.njit(**NUMBA_OPTIONS)
def _box_scale(v: int, dd: np.int32, ds: np.uint32) -> np.uint8:
    return np.uint8(np.uint32(np.uint32(np.int32(v + dd)) * ds) >> np.uint32(23))


@numba.njit(**NUMBA_OPTIONS)
def horizontal_finish(column: np.ndarray, taps: np.ndarray, step: int, mode: int, p0: int, p1: int, inv: float,
                      lo: int, hi: int, acc: np.ndarray, out: np.ndarray) -> None:
    """``finish_row(correlate_row(column, taps))`` into ``out``; fused into one loop (no row of
    sums stored) for 3 and 5 taps with the ``box_multiply`` finish (OpenCV's blur), the same
    arithmetic element by element: 5x5 box 0.71 -> 0.55 ms a frame on one thread. (Fusing the
    ``shift`` finish too made Sobel's int16 loop 1.5x slower.)"""
    n = out.shape[0]
    k = taps.shape[0]
    if (k != 3 and k != 5) or mode != 2:
        correlate_row(column, taps, step, acc)
        finish_row(acc, mode, p0, p1, inv, lo, hi, out)
        return
    dd, ds = np.int32(p0), np.uint32(p1)
    a, b, c = column[0:n], column[step: step + n], column[2 * step: 2 * step + n]
    if k == 3:
        t0, t1, t2 = taps[0], taps[1], taps[2]
        for i in range(n):
            out[i] = _box_scale(t0 * a[i] + t1 * b[i] + t2 * c[i], dd, ds)
        return
    d, e = column[3 * step: 3 * step + n], column[4 * step: 4 * step + n]
    t0, t1, t2, t3, t4 = taps[0], taps[1], taps[2], taps[3], taps[4]
    if t0 == t1 == t2 == t3 == t4:
        for i in range(n):
            out[i] = _box_scale(t0 * (a[i] + b[i] + c[i] + d[i] + e[i]), dd, ds)
    else:
        for i in range(n):
            out[i] = _box_scale(t0 * a[i] + t1 * b[i] + t2 * c[i] + t3 * d[i] + t4 * e[i], dd, ds)


@numba.njit(**NUMBA_OPTIONS)
def accumulate(src: np.ndarray, w: int, first: bool, out: np.ndarray) -> None:
    """``out (=|+=) w * src`` (int32, modulo 2**32)."""
    if first:
        for i in range(out.shape[0]):
            out[i] = np.int32(w * src[i])
    elif w != 0:
        for i in range(out.shape[0]):
            out[i] = np.int32(out[i] + w * src[i])


@numba.njit(**NUMBA_OPTIONS)
def source_row(img: np.ndarray, plane: int, s: int, outside: np.ndarray) -> np.ndarray:
    """Row ``s`` of ``plane`` (a 1-D view), or the constant border's row where ``s < 0``."""
    return img[plane, s] if s >= 0 else outside


@numba.njit(**NUMBA_OPTIONS)
def pad_borders(column: np.ndarray, xsrc: np.ndarray, before: int, width: int, channels: int, value: int) -> None:
    """The border pixels of ``column`` (``len(xsrc)`` pixels of ``C`` channels, its ``width``
    inside pixels from ``before``) from its inside by the index table ``xsrc`` (``value`` where -1)."""
    for q in range(before):
        _border_pixel(column, xsrc[q], q, before, channels, value)
    for q in range(before + width, xsrc.shape[0]):
        _border_pixel(column, xsrc[q], q, before, channels, value)


@numba.njit(**NUMBA_OPTIONS)
def _border_pixel(column: np.ndarray, s: int, q: int, before: int, channels: int, value: int) -> None:
    for c in range(channels):
        column[q * channels + c] = np.int32(value) if s < 0 else column[(before + s) * channels + c]


@numba.njit(**NUMBA_OPTIONS)
def vertical_pass(img: np.ndarray, plane: int, ysrc: np.ndarray, y: int, ky: np.ndarray, outside: np.ndarray,
                  out: np.ndarray) -> None:
    """``out = sum_j ky[j] * row(ysrc[y + j])`` over the uint8 rows of ``plane`` (``outside`` for
    -1), modulo ``out``'s width."""
    kh = ky.shape[0]
    if kh == 3:
        sum3(source_row(img, plane, ysrc[y], outside), source_row(img, plane, ysrc[y + 1], outside),
             source_row(img, plane, ysrc[y + 2], outside), ky, out)
    elif kh == 5:
        sum5(source_row(img, plane, ysrc[y], outside), source_row(img, plane, ysrc[y + 1], outside),
             source_row(img, plane, ysrc[y + 2], outside), source_row(img, plane, ysrc[y + 3], outside),
             source_row(img, plane, ysrc[y + 4], outside), ky, out)
    else:
        for j in range(kh):
            accumulate(source_row(img, plane, ysrc[y + j], outside), ky[j], j == 0, out)


@numba.njit(**NUMBA_OPTIONS)
def rolling_update(entering: np.ndarray, leaving: np.ndarray, w: int, out: np.ndarray) -> None:
    """``out += w * (entering - leaving)`` (modulo ``out``'s width): a box's vertical sums moved
    down one row, exact as the sums fit their type."""
    for i in range(out.shape[0]):
        out[i] = out[i] + w * (np.int32(entering[i]) - np.int32(leaving[i]))


@numba.njit(**NUMBA_OPTIONS)
def separable_band(img: np.ndarray, out: np.ndarray, plane: int, r0: int, r1: int, kx: np.ndarray, ky: np.ndarray,
                   xsrc: np.ndarray, ysrc: np.ndarray, channels: int, value: int, mode: int, p0: int, p1: int,
                   inv: float, lo: int, hi: int, outside: np.ndarray, column: np.ndarray, acc: np.ndarray) -> None:
    """Output rows ``r0:r1`` of ``plane``: ``img`` and ``out`` are ``(planes, H, W * C)``; ``xsrc`` /
    ``ysrc`` the source column / row of each padded position (-1: ``value``); ``outside`` a uint8
    row of ``W * C`` values ``value``; ``column`` (``len(xsrc) * C``) and ``acc`` (``W * C``) int32
    scratch.

    The vertical taps run first, on the uint8 rows (read once, no padded copy), into the
    inside of ``column``; its border pixels are then the border rule applied to those sums (the
    vertical sums of the padded image's border columns; a constant border's are ``value *
    sum(ky)``), and the horizontal taps run over ``column``: the same sum of products as the
    portable horizontal-then-vertical order, modulo 2**32."""
    kh = ky.shape[0]
    before = kx.shape[0] // 2
    n = img.shape[2]
    inner = column[before * channels: before * channels + n]
    edge = np.int32(0)  # a constant border's columns after the vertical pass: value * sum(ky)
    for t in range(kh):
        edge = np.int32(edge + ky[t] * value)
    equal = True  # equal vertical taps (a box): each row's sums are the last row's plus the row entering less the row leaving
    for t in range(kh):
        equal = equal and ky[t] == ky[0]
    for y in range(r0, r1):
        if equal and y > r0:
            rolling_update(source_row(img, plane, ysrc[y + kh - 1], outside), source_row(img, plane, ysrc[y - 1], outside),
                           ky[0], inner)
        else:
            vertical_pass(img, plane, ysrc, y, ky, outside, inner)
        pad_borders(column, xsrc, before, n // channels, channels, edge)
        horizontal_finish(column, kx, channels, mode, p0, p1, inv, lo, hi, acc, out[plane, y])
