"""The direct 2-D filter compiled with Numba: the NumPy override's loop where the ``cpu`` extra is installed.

A band of output rows is one call. Each source row the band needs is padded once (its border
pixels by the portable border rule, from ``_border.border_indices``' table) into a ring of
``kh`` uint8 rows; an output row is the sum over the ring's rows of each row's 1-D correlation
with its row of taps, then the one rounding step of ``finish_accumulator``. The sums are computed
modulo 2**16 or 2**32 in the narrowest type that holds ``255 * sum|k|`` (so they are the exact
sums, the portable bits), in loops over 1-D views without branches.
"""

from __future__ import annotations

import numba
import numpy as np

from .._separable_pass_numba import finish_row, pad_row
from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def correlate_into(padded: np.ndarray, taps: np.ndarray, step: int, first: bool, out: np.ndarray) -> bool:
    """``out (=|+=) sum_t taps[t] * padded[t * step: t * step + len(out)]`` (modulo the type's
    width); zero taps are skipped. Returns whether ``out`` holds a sum now."""
    n = out.shape[0]
    k = taps.shape[0]
    if k == 3 or k == 5:  # one fused pass over the row (a row of zeros adds nothing: skipped)
        nonzero = False
        for t in range(k):
            nonzero = nonzero or taps[t] != 0
        if not nonzero:
            return not first
        if k == 3:
            _add3(padded[0:n], padded[step: step + n], padded[2 * step: 2 * step + n], taps, first, out)
        else:
            _add5(padded[0:n], padded[step: step + n], padded[2 * step: 2 * step + n], padded[3 * step: 3 * step + n],
                  padded[4 * step: 4 * step + n], taps, first, out)
        return True
    started = not first
    for t in range(taps.shape[0]):
        w = taps[t]
        if w == 0:
            continue
        src = padded[t * step: t * step + n]
        if started:
            for i in range(n):
                out[i] = out[i] + w * src[i]
        else:
            for i in range(n):
                out[i] = w * src[i]
            started = True
    return started


@numba.njit(**NUMBA_OPTIONS)
def _add3(a: np.ndarray, b: np.ndarray, c: np.ndarray, taps: np.ndarray, first: bool, out: np.ndarray) -> None:
    t0, t1, t2 = taps[0], taps[1], taps[2]
    if first:
        for i in range(out.shape[0]):
            out[i] = t0 * a[i] + t1 * b[i] + t2 * c[i]
    else:
        for i in range(out.shape[0]):
            out[i] = out[i] + t0 * a[i] + t1 * b[i] + t2 * c[i]


@numba.njit(**NUMBA_OPTIONS)
def _add5(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, e: np.ndarray, taps: np.ndarray, first: bool,
          out: np.ndarray) -> None:
    t0, t1, t2, t3, t4 = taps[0], taps[1], taps[2], taps[3], taps[4]
    if first:
        for i in range(out.shape[0]):
            out[i] = t0 * a[i] + t1 * b[i] + t2 * c[i] + t3 * d[i] + t4 * e[i]
    else:
        for i in range(out.shape[0]):
            out[i] = out[i] + t0 * a[i] + t1 * b[i] + t2 * c[i] + t3 * d[i] + t4 * e[i]


@numba.njit(**NUMBA_OPTIONS)
def convolve_band(img: np.ndarray, out: np.ndarray, plane: int, r0: int, r1: int, taps: np.ndarray,
                  xsrc: np.ndarray, ysrc: np.ndarray, channels: int, value: int, mode: int, p0: int, p1: int,
                  inv: float, lo: int, hi: int, ring: np.ndarray, acc: np.ndarray) -> None:
    """Output rows ``r0:r1`` of ``plane``: ``img`` and ``out`` are ``(planes, H, W * C)``, ``taps``
    ``(kh, kw)``; ``xsrc`` / ``ysrc`` the source column / row of each padded position (-1:
    ``value``); ``ring`` ``(kh, len(xsrc) * C)`` uint8 and ``acc`` ``W * C`` scratch."""
    kh, kw = taps.shape[0], taps.shape[1]
    before = kw // 2
    for q in range(r0, r1 + kh - 1):  # padded row q is source row ysrc[q]; output row y needs q = y .. y + kh - 1
        slot = ring[q % kh]
        s = ysrc[q]
        if s < 0:
            for i in range(slot.shape[0]):
                slot[i] = value
        else:
            pad_row(img[plane, s], xsrc, before, channels, value, slot)
        y = q - (kh - 1)
        if y < r0:
            continue
        started = False
        for j in range(kh):
            started = correlate_into(ring[(y + j) % kh], taps[j], channels, not started, acc)
        if not started:
            for i in range(acc.shape[0]):
                acc[i] = 0
        finish_row(acc, mode, p0, p1, inv, lo, hi, out[plane, y])
