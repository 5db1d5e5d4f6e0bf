"""The image gradients (gx, gy) compiled with Numba: the NumPy override's loop where the ``cpu`` extra is installed.

Both separable passes in one sweep over the rows (``_separable_pass_numba``'s loops): per output
row the smoothing and the derivative taps run down the same uint8 rows (read once from memory),
then across, each into its int16 output; the sums are computed modulo the width of the
narrowest type that holds them, so they are the portable version's exact sums.
"""

from __future__ import annotations

import numba
import numpy as np

from ._separable_pass_numba import correlate_row, finish_row, pad_borders, vertical_pass
from .backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def gradients_band(img: np.ndarray, gx: np.ndarray, gy: np.ndarray, plane: int, r0: int, r1: int,
                   smooth: np.ndarray, deriv: np.ndarray, xsrc_s: np.ndarray, xsrc_d: np.ndarray,
                   ysrc_s: np.ndarray, ysrc_d: np.ndarray, channels: int, outside: np.ndarray,
                   down_s: np.ndarray, down_d: np.ndarray, acc: np.ndarray) -> None:
    """Rows ``r0:r1`` of ``plane`` of ``gx`` (``deriv`` across, ``smooth`` down) and ``gy``
    (``smooth`` across, ``deriv`` down), saturated to int16; ``img``, ``gx``, ``gy`` are
    ``(planes, H, W * C)``; ``xsrc_*`` / ``ysrc_*`` the border index tables of each tap length
    (-1: 0); ``outside`` a zero uint8 row; ``down_s`` / ``down_d`` the vertical sums padded for
    the horizontal taps that follow them (``deriv`` / ``smooth``), ``acc`` a row of sums."""
    n = img.shape[2]
    width = n // channels
    bs, bd = deriv.shape[0] // 2, smooth.shape[0] // 2  # where each padded column's inside starts
    inner_s = down_s[bs * channels: bs * channels + n]
    inner_d = down_d[bd * channels: bd * channels + n]
    for y in range(r0, r1):
        vertical_pass(img, plane, ysrc_s, y, smooth, outside, inner_s)
        pad_borders(down_s, xsrc_d, bs, width, channels, 0)
        correlate_row(down_s, deriv, channels, acc)
        finish_row(acc, 0, 0, 0, 0.0, -32768, 32767, gx[plane, y])
        vertical_pass(img, plane, ysrc_d, y, deriv, outside, inner_d)
        pad_borders(down_d, xsrc_s, bd, width, channels, 0)
        correlate_row(down_d, smooth, channels, acc)
        finish_row(acc, 0, 0, 0, 0.0, -32768, 32767, gy[plane, y])
