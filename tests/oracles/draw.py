"""Naive per-pixel transcriptions of the webcam report's CPU visualizers (sections 4.1 and 5.0.1)."""

from __future__ import annotations

import math

import numpy as np


def get_heat_pixel(diff: int, normalizer: float) -> tuple[int, int, int]:
    """The report's getHeatPixel with `diff / normalizer` (its text: 765; its CPU code: 255.0 * 2.0)."""
    diff1 = diff / normalizer
    r = int(min(max(math.sin(math.pi * diff1 - math.pi / 2.0) * 255.0, 0.0), 255.0))
    g = int(min(max(math.sin(math.pi * diff1) * 255.0, 0.0), 255.0))
    b = int(min(max(math.sin(math.pi * diff1 + math.pi / 2.0) * 255.0, 0.0), 255.0))
    return r, g, b


def heatmap(previous: np.ndarray, current: np.ndarray, normalizer: float = 765.0) -> np.ndarray:
    out = np.zeros(previous.shape[:-1] + (3,), np.uint8)
    for idx in np.ndindex(previous.shape[:-1]):
        a, b = previous[idx], current[idx]
        diff = abs(int(a[0]) - int(b[0])) + abs(int(a[1]) - int(b[1])) + abs(int(a[2]) - int(b[2]))
        out[idx] = get_heat_pixel(diff, normalizer)  # RGB order (the report writes B, G, R into a BGR Mat)
    return out


def noise_map(previous: np.ndarray, current: np.ndarray, threshold: int, background: np.ndarray | None) -> np.ndarray:
    """Black-and-red map (background None) or the overlay: red byte := 255 where any channel moved > threshold."""
    out = np.zeros_like(current) if background is None else background.copy()
    for idx in np.ndindex(previous.shape[:-1]):
        a, b = previous[idx], current[idx]
        if any(abs(int(a[c]) - int(b[c])) > threshold for c in range(a.shape[0])):
            out[idx + (0,)] = 255
    return out


def text_overlay(image: np.ndarray, glyphs: np.ndarray, text: str, x: int, y: int, scale: int, color, background):
    """Pixel by pixel: for every glyph pixel (gy, gx) of every character, a scale x scale block."""
    out = image.copy()
    has_channels = image.ndim == 3
    h, w = image.shape[:2]
    for i, ch in enumerate(text):
        glyph = glyphs[ord(ch) - 32]
        for gy in range(glyph.shape[0]):
            for gx in range(glyph.shape[1]):
                for sy in range(scale):
                    for sx in range(scale):
                        py = y + gy * scale + sy
                        px = x + (i * glyph.shape[1] + gx) * scale + sx
                        if 0 <= py < h and 0 <= px < w:
                            if glyph[gy, gx]:
                                out[py, px] = color if has_channels else color[0]
                            elif background is not None:
                                out[py, px] = background if has_channels else background[0]
    return out
