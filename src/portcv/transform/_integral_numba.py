"""Integral images compiled with Numba: the NumPy override's loop where the ``cpu`` extra is installed."""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def integral_band(src: np.ndarray, sums: np.ndarray, squares: np.ndarray, width: int, channels: int,
                  start: int, stop: int, squared: bool) -> None:
    """Output rows ``start + 1 : stop + 1`` of one plane's integral (row 0 too when ``start`` is
    0): ``sums`` (and, with ``squared``, the int64 ``squares``) are the flat ``(H+1) x (W+1) x C``
    tables, ``src`` the flat ``H x W x C`` plane.

    Per row, two passes over L1-resident rows: the column sums of the rows so far (``col +=
    row``, vectorized), then their running sum along x (one add per pixel, in a register), which
    is the output row: O(1) per pixel and no read of the row above. A band that does not start at
    row 0 first sums the columns of the rows above it (the same vectorized pass, without the
    running sums), so bands run on several threads without waiting for each other. Exact integer
    additions: the caller's bound (255 * H * W < 2**31 for int32 sums) covers every partial sum,
    int64 the squares (255**2 * H * W < 2**63)."""
    row_in = width * channels
    row_out = (width + 1) * channels
    col = np.zeros(row_in, sums.dtype)
    col2 = np.zeros(row_in if squared else 1, np.int64)
    if start == 0:
        first = sums[0:row_out]
        for i in range(row_out):
            first[i] = 0
        if squared:
            first2 = squares[0:row_out]
            for i in range(row_out):
                first2[i] = 0
    for r in range(start):
        _add_row(src[r * row_in: (r + 1) * row_in], col, col2, squared)
    for r in range(start, stop):
        _add_row(src[r * row_in: (r + 1) * row_in], col, col2, squared)
        _running_sums(col, sums[(r + 1) * row_out: (r + 2) * row_out], width, channels)
        if squared:
            _running_sums(col2, squares[(r + 1) * row_out: (r + 2) * row_out], width, channels)


@numba.njit(**NUMBA_OPTIONS)
def _add_row(line: np.ndarray, col: np.ndarray, col2: np.ndarray, squared: bool) -> None:
    """``col += line`` (and ``col2 += line**2`` in int64)."""
    for i in range(line.shape[0]):
        col[i] += line[i]
    if squared:
        for i in range(line.shape[0]):
            v = np.int64(line[i])
            col2[i] += v * v


@numba.njit(**NUMBA_OPTIONS)
def _running_sums(col: np.ndarray, out: np.ndarray, width: int, channels: int) -> None:
    """``out`` = a zero pixel, then the running sums along x of ``col`` (per channel)."""
    for c in range(channels):
        out[c] = 0
    if channels == 1:
        s = out[0]
        for x in range(width):
            s += col[x]
            out[x + 1] = s
    else:
        # out[x + 1, c] = out[x, c] + col[x, c], over the interleaved channels
        rest = out[channels:]
        for i in range(col.shape[0]):
            rest[i] = out[i] + col[i]
