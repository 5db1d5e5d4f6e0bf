"""Naive loop transcriptions of the filters: per output pixel, per tap, explicit border rule.

Deliberately slow and obvious; the vectorized NumPy path must equal these on small inputs.
"""

from __future__ import annotations

import numpy as np


def border_index(i: int, n: int, border: str) -> int | None:
    """Source index of padded position ``i``; None means the constant value."""
    if 0 <= i < n:
        return i
    if border == "replicate":
        return 0 if i < 0 else n - 1
    if border == "constant":
        return None
    # reflect101: mirror about the edge pixel (without repeating it) until inside.
    if n == 1:
        return 0
    while not 0 <= i < n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def correlate2d_plane(plane: np.ndarray, kx, ky, border: str, value: int) -> np.ndarray:
    """Exact integer sum_j ky[j] * sum_i kx[i] * plane[y + j - ay, x + i - ax] (Python ints)."""
    h, w = plane.shape
    ax, ay = len(kx) // 2, len(ky) // 2
    out = np.zeros((h, w), dtype=np.int64)
    for y in range(h):
        for x in range(w):
            acc = 0
            for j, tj in enumerate(ky):
                yy = border_index(y + j - ay, h, border)
                for i, ti in enumerate(kx):
                    xx = border_index(x + i - ax, w, border)
                    pixel = value if yy is None or xx is None else int(plane[yy, xx])
                    acc += tj * ti * pixel
            out[y, x] = acc
    return out


def per_plane(img: np.ndarray, has_channels: bool, fn) -> np.ndarray:
    """Apply ``fn`` to every 2-D plane (every batch index and channel)."""
    a = np.moveaxis(img, -1, 0) if has_channels else img[None]
    lead = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    res = np.stack([fn(p) for p in flat]).reshape(lead + a.shape[-2:])
    return np.moveaxis(res, 0, -1) if has_channels else res[0]


def sep_filter(img, kx, ky, shift, border="reflect101", value=0, has_channels=False):
    acc = per_plane(img, has_channels, lambda p: correlate2d_plane(p, kx, ky, border, value))
    if shift:
        acc = (acc + (1 << (shift - 1))) >> shift
    return acc


def box_mean(img, kw, kh, border="reflect101", has_channels=False):
    """The exact mean, rounded half up: what a box filter means before OpenCV's arithmetic."""
    area = kw * kh
    s = per_plane(img, has_channels, lambda p: correlate2d_plane(p, [1] * kw, [1] * kh, border, 0))
    return (s + area // 2) // area
