"""Naive per-pixel transcriptions of the webcam report's grayscale formulas (its section 7)."""

from __future__ import annotations

import numpy as np


def rgb_to_gray_weighted_float(rgb: np.ndarray) -> np.ndarray:
    """0.299 R + 0.587 G + 0.114 B in exact rationals, rounded half up, pixel by pixel."""
    from fractions import Fraction

    out = np.zeros(rgb.shape[:-1], dtype=np.int64)
    for idx in np.ndindex(*rgb.shape[:-1]):
        r, g, b = (int(v) for v in rgb[idx])
        y = Fraction(299, 1000) * r + Fraction(587, 1000) * g + Fraction(114, 1000) * b
        out[idx] = int(y + Fraction(1, 2))
    return out


def rgb_to_gray_average(rgb: np.ndarray) -> np.ndarray:
    """The report's loop: ``sum = R + G + B; gray = sum / 3`` with C integer division."""
    out = np.zeros(rgb.shape[:-1], dtype=np.int64)
    for idx in np.ndindex(*rgb.shape[:-1]):
        out[idx] = sum(int(v) for v in rgb[idx]) // 3
    return out
