"""Naive resize: OpenCV 4.x's coordinate and weight formulas evaluated per output pixel.

A transcription of ``modules/imgproc/src/resize.cpp`` (``resizeNN``, the INTER_LINEAR branch of
``hal::resize`` with 11-bit coefficients and ``VResizeLinear``'s mulhi form,
``interpolationLinear`` + ``resize_bitExactInvoker`` for INTER_LINEAR_EXACT, and
``resizeAreaFast_Invoker`` for exactly 2x down), written out per output pixel with NumPy float32 /
float64 scalars where OpenCV uses float / double, and Python integers for the pixel arithmetic.
"""

from __future__ import annotations

import math

import numpy as np


def per_plane(img: np.ndarray, has_channels: bool, fn) -> np.ndarray:
    """Apply ``fn`` to every 2-D plane (batch index and channel); ``fn`` may change the plane's shape."""
    a = np.moveaxis(img, -1, 0) if has_channels else img[None]
    lead = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    res = np.stack([fn(p) for p in flat])
    res = res.reshape(lead + res.shape[1:])
    return np.moveaxis(res, 0, -1) if has_channels else res[0]


DBL_EPSILON = 2.220446049250313e-16


def _cv_round(v: float) -> int:
    return int(np.rint(v))  # round half to even, like cvRound


def _nearest(plane, dw, dh, inv_x, inv_y):
    h, w = plane.shape
    out = np.zeros((dh, dw), np.uint8)
    for dy in range(dh):
        sy = min(math.floor(dy * (1.0 / inv_y)), h - 1)
        for dx in range(dw):
            sx = min(math.floor(dx * (1.0 / inv_x)), w - 1)
            out[dy, dx] = plane[sy, sx]
    return out


def _linear_coord(d, scale):
    f = np.float32((d + 0.5) * scale - 0.5)
    s = math.floor(f)
    return s, np.float32(f - np.float32(s))


def _q11(v):
    return _cv_round(np.float32(v) * np.float32(2048))


def _linear(plane, dw, dh, inv_x, inv_y):
    h, w = plane.shape
    out = np.zeros((dh, dw), np.uint8)
    for dy in range(dh):
        sy, fy = _linear_coord(dy, 1.0 / inv_y)
        b0, b1 = _q11(np.float32(1) - fy), _q11(fy)
        rows = [min(max(sy + k, 0), h - 1) for k in (0, 1)]
        hs = []
        for row in rows:
            line = []
            for dx in range(dw):
                sx, fx = _linear_coord(dx, 1.0 / inv_x)
                if sx < 0:
                    sx, fx = 0, np.float32(0)
                if sx >= w - 1:
                    sx, fx = w - 1, np.float32(0)
                a0, a1 = _q11(np.float32(1) - fx), _q11(fx)
                right = plane[row, sx + 1] if a1 else 0
                line.append(int(plane[row, sx]) * a0 + int(right) * a1)
            hs.append(line)
        for dx in range(dw):
            out[dy, dx] = (((b0 * (hs[0][dx] >> 4)) >> 16) + ((b1 * (hs[1][dx] >> 4)) >> 16) + 2) >> 2
    return out


def _exact_coord(d, inv, n):
    """(index, c0, c1, replicate) of interpolationLinear::getCoeffs (Q8)."""
    f = (1.0 / inv) * (d + 0.5) - 0.5
    i = math.floor(f)
    if i >= 0 and n > 1 and i < n - 1:
        c1 = _cv_round((f - i) * 256.0)
        return i, 256 - c1, c1, False
    return (0 if i < 0 or n == 1 else n - 1), 256, 0, True


def _exact(plane, dw, dh, inv_x, inv_y):
    h, w = plane.shape
    out = np.zeros((dh, dw), np.uint8)

    def hline(row):
        line = []
        for dx in range(dw):
            i, c0, c1, rep = _exact_coord(dx, inv_x, w)
            if rep:
                line.append(int(plane[row, i]) << 8)
            else:
                line.append(c0 * int(plane[row, i]) + c1 * int(plane[row, i + 1]))
        return line

    for dy in range(dh):
        i, c0, c1, rep = _exact_coord(dy, inv_y, h)
        if rep:
            line = hline(i)
            for dx in range(dw):
                out[dy, dx] = (line[dx] + 128) >> 8
        else:
            l0, l1 = hline(i), hline(i + 1)
            for dx in range(dw):
                out[dy, dx] = (c0 * l0[dx] + c1 * l1[dx] + 32768) >> 16
    return out


def _area2(plane, dw, dh, round_up):
    h, w = plane.shape
    out = np.zeros((dh, dw), np.uint8)
    for dy in range(dh):
        for dx in range(dw):
            pixels = [int(plane[y, x]) for y in (2 * dy, 2 * dy + 1) for x in (2 * dx, 2 * dx + 1) if y < h and x < w]
            s, n = sum(pixels), len(pixels)
            if n == 4 and round_up:
                out[dy, dx] = (s + 2) >> 2
            else:
                out[dy, dx] = _cv_round(np.float32(s) / np.float32(n))
    return out


def resize(img, size=None, scale=None, interpolation="bilinear", has_channels=False):
    """``cv2.resize`` of each plane, per output pixel."""
    h, w = (img.shape[-3:-1] if has_channels else img.shape[-2:])
    channels = img.shape[-1] if has_channels else 1
    if size is not None:
        dw, dh = size
        inv_x, inv_y = dw / w, dh / h
    else:
        inv_x, inv_y = scale
        dw, dh = _cv_round(w * inv_x), _cv_round(h * inv_y)
    if (dw, dh) == (w, h):
        return img.copy()
    sx, sy = 1.0 / inv_x, 1.0 / inv_y
    area = (abs(sx - _cv_round(sx)) < DBL_EPSILON and abs(sy - _cv_round(sy)) < DBL_EPSILON
            and _cv_round(sx) == 2 and _cv_round(sy) == 2)
    if interpolation == "nearest":
        fn = lambda p: _nearest(p, dw, dh, inv_x, inv_y)  # noqa: E731
    elif area and (interpolation == "bilinear" or channels != 2):
        fn = lambda p: _area2(p, dw, dh, channels in (1, 3, 4))  # noqa: E731
    elif interpolation == "bilinear":
        fn = lambda p: _linear(p, dw, dh, inv_x, inv_y)  # noqa: E731
    else:
        fn = lambda p: _exact(p, dw, dh, inv_x, inv_y)  # noqa: E731
    return per_plane(img, has_channels, fn)
