"""Median filters compiled with Numba: the NumPy override's loops where the ``cpu`` extra is installed."""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS

@numba.njit(**NUMBA_OPTIONS)
def pad_plane(src: np.ndarray, padded: np.ndarray, xmap: np.ndarray, ymap: np.ndarray, value: int, before: int,
              p: int, height: int) -> None:
    """``padded[i, j]`` = plane ``p``'s pixel ``(ymap[i], xmap[j])`` of ``src`` (the planes' rows
    ``(planes * H, W)``), or ``value`` where either index is -1 (the border rule's indices,
    :func:`portcv._border.border_indices`; columns ``before`` to ``before + W`` are the source row
    itself, copied by one contiguous loop, the border columns looked up)."""
    fill = np.uint8(value)
    width = src.shape[1]
    for i in range(padded.shape[0]):
        dst = padded[i]
        sy = ymap[i]
        if sy < 0:
            for j in range(dst.shape[0]):
                dst[j] = fill
            continue
        row = src[p * height + sy]
        for j in range(before):
            sx = xmap[j]
            dst[j] = fill if sx < 0 else row[sx]
        inner = dst[before: before + width]
        for j in range(width):
            inner[j] = row[j]
        for j in range(before + width, dst.shape[0]):
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
