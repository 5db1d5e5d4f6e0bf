"""Naive integral image: every entry is the explicit double sum over the rectangle above-left."""

from __future__ import annotations

import numpy as np


def per_plane(img: np.ndarray, has_channels: bool, fn) -> np.ndarray:
    """Apply ``fn`` to every 2-D plane (batch index and channel); ``fn`` may change the plane's shape."""
    a = np.moveaxis(img, -1, 0) if has_channels else img[None]
    lead = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    res = np.stack([fn(p) for p in flat])
    res = res.reshape(lead + res.shape[1:])
    return np.moveaxis(res, 0, -1) if has_channels else res[0]



def integral_plane(plane: np.ndarray, power: int = 1) -> np.ndarray:
    """``I[y, x] = sum_{j < y} sum_{i < x} plane[j, i] ** power`` with Python integers."""
    h, w = plane.shape
    out = np.zeros((h + 1, w + 1), dtype=np.int64)
    for y in range(h + 1):
        for x in range(w + 1):
            total = 0
            for j in range(y):
                for i in range(x):
                    total += int(plane[j, i]) ** power
            out[y, x] = total
    return out


def integral(img: np.ndarray, has_channels: bool = False, power: int = 1) -> np.ndarray:
    """Per plane (batch index and channel), shape ``(..., H+1, W+1[, C])``."""
    return per_plane(img, has_channels, lambda p: integral_plane(p, power))
