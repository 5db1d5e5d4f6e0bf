"""Naive per-pixel transcription of OpenCV's YUV 4:2:0 -> RGB conversion (``cvtColor`` with
``COLOR_YUV2RGB_NV12``, ``_I420`` and their BGR, NV21 and YV12 siblings), written from the
documented formula in ``docs/color.md`` (BT.601 limited range in Q20 fixed point):

    y = max(0, Y - 16) * 1220542
    R = sat((y + 2**19 + 1673527 (V - 128)) >> 20)
    G = sat((y + 2**19 - 852492 (V - 128) - 409993 (U - 128)) >> 20)
    B = sat((y + 2**19 + 2116026 (U - 128)) >> 20)

where pixel (r, c) takes the chroma sample (r // 2, c // 2). Python integers (no overflow) and
``>>`` (floor, as C's arithmetic shift of an int).
"""

from __future__ import annotations

import numpy as np


def _sat(x: int) -> int:
    return min(max(x, 0), 255)


def _chroma(frame: np.ndarray, layout: str, chroma_order: str) -> tuple[np.ndarray, np.ndarray]:
    rows, w = frame.shape
    h = rows * 2 // 3
    flat = [int(v) for v in frame[h:].reshape(-1)]  # the chroma bytes in memory order
    u = np.zeros((h // 2, w // 2), np.int64)
    v = np.zeros((h // 2, w // 2), np.int64)
    for j in range(h // 2):
        for i in range(w // 2):
            if layout == "nv12":  # pairs, one per block, row after row
                first, second = flat[j * w + 2 * i], flat[j * w + 2 * i + 1]
            else:  # i420: one packed plane, then the other
                first, second = flat[j * (w // 2) + i], flat[(h // 2) * (w // 2) + j * (w // 2) + i]
            u[j, i], v[j, i] = (first, second) if chroma_order == "uv" else (second, first)
    return u, v


def yuv420_to_rgb(frame: np.ndarray, *, layout: str, chroma_order: str = "uv",
                  channel_order: str = "rgb") -> np.ndarray:
    """One ``(3H/2, W)`` frame to ``(H, W, 3)``, pixel by pixel."""
    rows, w = frame.shape
    h = rows * 2 // 3
    u, v = _chroma(frame, layout, chroma_order)
    out = np.zeros((h, w, 3), np.uint8)
    for r in range(h):
        for c in range(w):
            y = max(0, int(frame[r, c]) - 16) * 1220542
            uu, vv = int(u[r // 2, c // 2]) - 128, int(v[r // 2, c // 2]) - 128
            red = _sat((y + (1 << 19) + 1673527 * vv) >> 20)
            green = _sat((y + (1 << 19) - 852492 * vv - 409993 * uu) >> 20)
            blue = _sat((y + (1 << 19) + 2116026 * uu) >> 20)
            out[r, c] = (red, green, blue) if channel_order == "rgb" else (blue, green, red)
    return out
