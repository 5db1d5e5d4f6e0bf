"""Sobel/Scharr by naive loops with the taps written out from OpenCV's tables
(``shared/opencv-fixed-point.md``), independent of portcv's tap generator."""

from __future__ import annotations

import numpy as np

from .oracle_filters import correlate2d_plane, per_plane

#: (ksize, order) -> taps, as listed in the scouting notes (correlation taps).
TAPS = {
    (-1, 0): [3, 10, 3], (-1, 1): [-1, 0, 1],
    (1, 0): [1], (1, 1): [-1, 0, 1], (1, 2): [1, -2, 1],
    (3, 0): [1, 2, 1], (3, 1): [-1, 0, 1], (3, 2): [1, -2, 1],
    (5, 0): [1, 4, 6, 4, 1], (5, 1): [-1, -2, 0, 2, 1], (5, 2): [1, 0, -2, 0, 1],
    (7, 0): [1, 6, 15, 20, 15, 6, 1], (7, 1): [-1, -4, -5, 0, 5, 4, 1],
}


def sobel(img, dx, dy, ksize=3, border="reflect101", has_channels=False):
    """int16-saturated ``sum_j ky[j] sum_i kx[i] img[...]`` with a constant border of 0."""
    kx, ky = TAPS[(ksize, dx)], TAPS[(ksize, dy)]
    acc = per_plane(img, has_channels, lambda p: correlate2d_plane(p, kx, ky, border, 0))
    return np.clip(acc, -32768, 32767)
