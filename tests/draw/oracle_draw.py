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


def box_outlines(image: np.ndarray, boxes, color, thickness: int) -> np.ndarray:
    """Pixel by pixel, box by box: the outline rule of ``portcv.draw.boxes`` (cv2.rectangle's pixels)."""
    out = image.copy()
    r = 0 if thickness == 1 else (thickness + 1) // 2
    h, w = image.shape[:2]
    for x, y, bw, bh in boxes:
        if bw < 1 or bh < 1:
            continue
        x0, x1, y0, y1 = x, x + bw - 1, y, y + bh - 1
        for py in range(h):
            for px in range(w):
                if x0 <= px <= x1 and y0 <= py <= y1:
                    on = min(px - x0, x1 - px, py - y0, y1 - py) <= r
                else:
                    dx = max(x0 - px, px - x1, 0)
                    dy = max(y0 - py, py - y1, 0)
                    on = dx * dx + dy * dy <= r * r
                if on:
                    out[py, px] = color if image.ndim == 3 else color[0]
    return out


def mask_overlay(image: np.ndarray, scaled_masks, boxes, opacity: int) -> np.ndarray:
    """Pixel by pixel: blend each box's already-scaled colour + alpha mask, in box order."""
    out = image.copy()
    h, w = image.shape[:2]
    for (x, y, _, _), m in zip(boxes, scaled_masks):
        for my in range(m.shape[0]):
            for mx in range(m.shape[1]):
                py, px = y + my, x + mx
                if 0 <= py < h and 0 <= px < w:
                    a = int(m[my, mx, -1])
                    a = (a * opacity + 127) // 255
                    for c in range(m.shape[2] - 1):
                        u = int(out[py, px, c]) if image.ndim == 3 else int(out[py, px])
                        v = (a * int(m[my, mx, c]) + (255 - a) * u + 127) // 255
                        if image.ndim == 3:
                            out[py, px, c] = v
                        else:
                            out[py, px] = v
    return out
