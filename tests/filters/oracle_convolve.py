"""Naive loop transcriptions of the direct 2-D filter and of the webcam report's mean and
Gaussian filters (its sections 6.2-6.4): per output pixel, per tap, explicit border rule.

Deliberately slow and obvious; the vectorized NumPy path must equal these on small inputs.
"""

from __future__ import annotations

import math

import numpy as np

from .oracle_filters import border_index, per_plane


def correlate2d_plane(plane: np.ndarray, kernel, border: str, value: int) -> np.ndarray:
    """Exact ``sum_j sum_i kernel[j][i] * plane[y + j - kh//2, x + i - kw//2]`` (Python ints)."""
    h, w = plane.shape
    kh, kw = len(kernel), len(kernel[0])
    out = np.zeros((h, w), dtype=np.int64)
    for y in range(h):
        for x in range(w):
            acc = 0
            for j in range(kh):
                yy = border_index(y + j - kh // 2, h, border)
                for i in range(kw):
                    xx = border_index(x + i - kw // 2, w, border)
                    pixel = value if yy is None or xx is None else int(plane[yy, xx])
                    acc += int(kernel[j][i]) * pixel
            out[y, x] = acc
    return out


def convolve2d(img, kernel, shift, border="reflect101", value=0, has_channels=False):
    """The direct filter before saturation: round half up of ``acc / 2**shift`` (int64)."""
    acc = per_plane(img, has_channels, lambda p: correlate2d_plane(p, kernel, border, value))
    if shift:
        acc = (acc + (1 << (shift - 1))) >> shift
    return acc


def report_mean(img, k, border="constant", value=0, has_channels=False):
    """The report's mean filter: window sum (zero padding by default) over k*k, truncated."""
    ones = [[1] * k for _ in range(k)]
    s = per_plane(img, has_channels, lambda p: correlate2d_plane(p, ones, border, value))
    return s // (k * k)


def report_gaussian_float(sigma: float, k: int) -> np.ndarray:
    """The report's ``computeGaussianKernel(s, K)``, line by line, in float64."""
    kern = np.zeros((k, k))
    total = 0.0
    for i in range(k):
        for j in range(k):
            x = i - (k - 1) / 2.0
            y = j - (k - 1) / 2.0
            kern[i, j] = (1.0 / (2.0 * math.pi * sigma * sigma)) * math.exp(-((x * x + y * y) / (2.0 * sigma * sigma)))
            total += kern[i, j]
    for i in range(k):
        for j in range(k):
            kern[i, j] /= total
    return kern


def filter_float(img, kernel: np.ndarray, border="reflect101", value=0, has_channels=False) -> np.ndarray:
    """``sum kernel[j, i] * pixel`` in float64 (no rounding): the real-valued filter output."""
    h_k, w_k = kernel.shape

    def plane_fn(p):
        h, w = p.shape
        out = np.zeros((h, w))
        for y in range(h):
            for x in range(w):
                acc = 0.0
                for j in range(h_k):
                    yy = border_index(y + j - h_k // 2, h, border)
                    for i in range(w_k):
                        xx = border_index(x + i - w_k // 2, w, border)
                        acc += kernel[j, i] * (value if yy is None or xx is None else float(p[yy, xx]))
                out[y, x] = acc
        return out

    return per_plane(img, has_channels, plane_fn)
