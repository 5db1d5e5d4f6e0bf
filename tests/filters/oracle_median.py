"""Naive median filter, as the webcam report's listing does it (section 6.5): for every output
pixel gather the k x k window (explicit border rule), sort it, take the middle element."""

from __future__ import annotations

import numpy as np

from .oracle_filters import border_index, per_plane


def median_plane(plane: np.ndarray, k: int, border: str, value: int) -> np.ndarray:
    h, w = plane.shape
    r = k // 2
    out = np.zeros((h, w), dtype=np.uint8)
    for y in range(h):
        for x in range(w):
            window = []
            for j in range(-r, r + 1):
                yy = border_index(y + j, h, border)
                for i in range(-r, r + 1):
                    xx = border_index(x + i, w, border)
                    window.append(value if yy is None or xx is None else int(plane[yy, xx]))
            window.sort()
            out[y, x] = window[len(window) // 2]
    return out


def median_filter(img: np.ndarray, k: int, border: str = "replicate", value: int = 0, has_channels: bool = False):
    return per_plane(img, has_channels, lambda p: median_plane(p, k, border, value)).astype(np.uint8)
