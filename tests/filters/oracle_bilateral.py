"""Naive loop transcription of the integer joint bilateral filter (and of Lin et al.'s DCBF, which
is the same sum with unknown neighbours left out): per output pixel, per window offset, Python
integers and ``math.exp``, the border rule written out. Slow and obvious on purpose."""

from __future__ import annotations

import math

import numpy as np

from .oracle_filters import border_index


def q15(x: float) -> int:
    """``round(2**15 x)``, half to even (Python's ``round``)."""
    return round(32768 * x)


def bilateral_pixel_loop(guide, values, radius, sigma_color, sigma_space, *, window="disk", norm="l1",
                         border="reflect101", hole=None, keep_known=False):
    """One ``(H, W)`` or ``(H, W, C)`` guide steering one ``(H, W)`` or ``(H, W, C)`` value image."""
    g = np.asarray(guide).astype(np.int64)
    v = np.asarray(values).astype(np.int64)
    if g.ndim == 2:
        g = g[..., None]
    value_channels = v.ndim == 3
    if not value_channels:
        v = v[..., None]
    h, w = g.shape[:2]
    out = np.zeros(v.shape, dtype=np.int64)
    fill = 0 if hole is None else hole
    for y in range(h):
        for x in range(w):
            num = [0] * v.shape[2]
            den = 0
            for dy in range(-radius, radius + 1):
                for dx in range(-radius, radius + 1):
                    if window == "disk" and dx * dx + dy * dy > radius * radius:
                        continue
                    yy, xx = border_index(y + dy, h, border), border_index(x + dx, w, border)
                    outside = yy is None or xx is None
                    gb = [0] * g.shape[2] if outside else [int(c) for c in g[yy, xx]]
                    vb = [fill] * v.shape[2] if outside else [int(c) for c in v[yy, xx]]
                    if hole is not None and vb[0] == hole:
                        continue
                    diffs = [gb[c] - int(g[y, x, c]) for c in range(g.shape[2])]
                    if norm == "l1":
                        delta = sum(abs(d) for d in diffs)
                        wr = q15(math.exp(-delta * delta / (2 * sigma_color * sigma_color)))
                    else:
                        delta = sum(d * d for d in diffs)
                        wr = q15(math.exp(-delta / (2 * sigma_color * sigma_color)))
                    ws = q15(math.exp(-(dx * dx + dy * dy) / (2 * sigma_space * sigma_space)))
                    weight = (ws * wr + 16384) >> 15
                    den += weight
                    for c in range(v.shape[2]):
                        num[c] += weight * vb[c]
            for c in range(v.shape[2]):
                if keep_known and int(v[y, x, c]) != hole:
                    out[y, x, c] = v[y, x, c]
                elif den == 0:
                    out[y, x, c] = hole
                else:
                    out[y, x, c] = (num[c] + den // 2) // den
    out = out if value_channels else out[..., 0]
    return out.astype(np.asarray(values).dtype)
