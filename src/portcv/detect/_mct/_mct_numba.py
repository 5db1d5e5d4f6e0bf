"""The MCT kernels compiled with Numba: the NumPy overrides' loops where the ``cpu`` extra is
installed. The same comparisons and the same exact integer sums as the portable versions.

The segment loop takes one window through its stages and stops at the first position after
which its partial sum exceeds the stage's threshold minus the smallest sum the stage's
remaining positions can add (``limits``, as the vectorized segment's checks, here at every
position): such a window fails that stage whatever codes follow, so the flags are exactly the
portable version's.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def mct_rows(plane: np.ndarray, out: np.ndarray, r0: int, r1: int) -> None:
    """Codes of output rows ``r0:r1`` of one (H, W) uint8 plane into ``out`` (H-2, W-2) uint16:
    bit ``8 - k`` is ``9 I_k > S`` (raster index ``k`` of the 3x3, ``S`` its sum)."""
    ow = out.shape[1]
    for r in range(r0, r1):
        a, b, c, dst = plane[r], plane[r + 1], plane[r + 2], out[r]
        for x in range(ow):
            i0, i1, i2 = np.int32(a[x]), np.int32(a[x + 1]), np.int32(a[x + 2])
            i3, i4, i5 = np.int32(b[x]), np.int32(b[x + 1]), np.int32(b[x + 2])
            i6, i7, i8 = np.int32(c[x]), np.int32(c[x + 1]), np.int32(c[x + 2])
            s = i0 + i1 + i2 + i3 + i4 + i5 + i6 + i7 + i8
            code = ((9 * i0 > s) << 8) | ((9 * i1 > s) << 7) | ((9 * i2 > s) << 6) | ((9 * i3 > s) << 5) \
                | ((9 * i4 > s) << 4) | ((9 * i5 > s) << 3) | ((9 * i6 > s) << 2) | ((9 * i7 > s) << 1) | (9 * i8 > s)
            dst[x] = np.uint16(code)


@numba.njit(**NUMBA_OPTIONS)
def stage_sums(codes: np.ndarray, offsets: np.ndarray, position_offsets: np.ndarray, rows: np.ndarray, begin: int,
               end: int, out: np.ndarray) -> None:
    """``out[i] = sum_k rows[k, codes[offsets[i] + position_offsets[k]]]`` for ``k in [begin, end)``
    (int16 terms, an exact int32 sum: at most 484 terms below 2**15)."""
    for i in range(offsets.shape[0]):
        w = offsets[i]
        total = np.int32(0)
        for k in range(begin, end):
            total += np.int32(rows[k, codes[w + position_offsets[k]]])
        out[i] = total


@numba.njit(**NUMBA_OPTIONS)
def segment_alive(codes: np.ndarray, offsets: np.ndarray, plan: np.ndarray, position_offsets: np.ndarray,
                  rows: np.ndarray, stage_begin: np.ndarray, stage_end: np.ndarray, limits: np.ndarray,
                  limit_start: np.ndarray, alive: np.ndarray) -> None:
    """``alive[i] = 1`` when window ``offsets[plan[i]]`` passes every stage (positions
    ``stage_begin[j]:stage_end[j]``; its limit after position ``b + q`` is
    ``limits[limit_start[j] + q]``, the last of which is the threshold), else 0."""
    for i in range(plan.shape[0]):
        w = offsets[plan[i]]
        passed = 1
        for j in range(stage_begin.shape[0]):
            b, e, lim = stage_begin[j], stage_end[j], limit_start[j]
            total = np.int32(0)
            if e == b:  # no positions: a sum of 0 against the threshold
                if limits[lim] < 0:
                    passed = 0
                    break
                continue
            for k in range(b, e):
                total += np.int32(rows[k, codes[w + position_offsets[k]]])
                if total > limits[lim + k - b]:
                    passed = 0
                    break
            if passed == 0:
                break
        alive[i] = passed
