"""Histograms compiled with Numba: the NumPy override's loop where the ``cpu`` extra is installed."""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def count_band(pixels: np.ndarray, counts: np.ndarray, channels: int, start: int, stop: int) -> None:
    """``counts[c * 256 + v]`` = how many of pixels ``start:stop`` of the interleaved 1-D
    ``pixels`` have value ``v`` in channel ``c`` (int64 counts, written, not added to).

    One channel counts into four interleaved sub-histograms (pixel ``i`` into copy ``i % 4``),
    summed at the end, so runs of equal values (flat regions) do not wait on the store of the
    previous increment of the same counter; interleaved channels already spread over ``C``."""
    src = pixels[start * channels: stop * channels]
    if channels == 1:
        sub = np.zeros(4 * 256, np.int64)
        quads = src.shape[0] // 4
        for q in range(quads):
            sub[src[4 * q]] += 1
            sub[256 + src[4 * q + 1]] += 1
            sub[512 + src[4 * q + 2]] += 1
            sub[768 + src[4 * q + 3]] += 1
        for i in range(4 * quads, src.shape[0]):
            sub[src[i]] += 1
        for v in range(256):
            counts[v] = sub[v] + sub[256 + v] + sub[512 + v] + sub[768 + v]
    else:
        for i in range(channels * 256):
            counts[i] = 0
        for p in range(stop - start):
            for c in range(channels):
                counts[c * 256 + src[p * channels + c]] += 1
