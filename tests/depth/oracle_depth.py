"""Sequential transcriptions of depth propagation (Lin et al.'s step (a), Nguyen-Do-Patel's 3D
warp): one source pixel at a time, in raster order, "write if nearer than what the target holds";
and of the rectified disparity warp. Python integers, slow and obvious on purpose."""

from __future__ import annotations

import numpy as np

S = 20  # fractional bits of the quantized projection matrix


def quantized_matrix(K_src, K_dst, R, t):
    """``round(2**20 K_dst [R | t] diag(K_src**-1, 1))`` as Python ints."""
    M = np.asarray(K_dst, float) @ np.hstack([np.asarray(R, float) @ np.linalg.inv(np.asarray(K_src, float)),
                                              np.asarray(t, float).reshape(3, 1)])
    return [[int(x) for x in np.rint(row * 2.0**S)] for row in M]


def propagate_raster(depth, K_src, K_dst, R, t, dst_shape, unknown=0, color=None, fill=0, order=None):
    """Visit the sources in ``order`` (default raster order); a source replaces the target's
    current one if it is nearer, or equally near and earlier in raster order."""
    Mq = quantized_matrix(K_src, K_dst, R, t)
    h, w = depth.shape
    dh, dw = dst_shape
    top = int(np.iinfo(depth.dtype).max)
    zbuf = [[None] * dw for _ in range(dh)]  # (z, source index) or None
    for i in (range(h * w) if order is None else order):
        v, u = divmod(int(i), w)
        z = int(depth[v, u])
        if z == unknown:
            continue
        a, b, c = (m[0] * u * z + m[1] * v * z + m[2] * z + m[3] for m in Mq)
        if c <= 0:
            continue
        tu, tv = (2 * a + c) // (2 * c), (2 * b + c) // (2 * c)
        tz = (c + (1 << (S - 1))) >> S
        if not (0 <= tu < dw and 0 <= tv < dh and 1 <= tz <= top and tz != unknown):
            continue
        held = zbuf[tv][tu]
        if held is None or (tz, i) < held:
            zbuf[tv][tu] = (tz, i)
    return _finish(zbuf, depth, unknown, color, fill, lambda z: z)


def warp_disparity_raster(disp, direction=-1, frac_bits=4, unknown=0, color=None, fill=0, order=None):
    """The rectified warp: ``x' = (2**f x + direction D + 2**(f-1)) >> f``; the larger disparity wins."""
    h, w = disp.shape
    zbuf = [[None] * w for _ in range(h)]
    for i in (range(h * w) if order is None else order):
        y, x = divmod(int(i), w)
        d = int(disp[y, x])
        if d == unknown:
            continue
        tx = ((x << frac_bits) + direction * d + ((1 << frac_bits) >> 1)) >> frac_bits
        if not 0 <= tx < w:
            continue
        held = zbuf[y][tx]
        if held is None or (-d, i) < held:
            zbuf[y][tx] = (-d, i)
    return _finish(zbuf, disp, unknown, color, fill, lambda k: -k)


def _finish(zbuf, depth, unknown, color, fill, value):
    dh, dw = len(zbuf), len(zbuf[0])
    out = np.full((dh, dw), unknown, depth.dtype)
    col = None
    if color is not None:
        flat = color.reshape((-1,) + color.shape[2:])
        col = np.full((dh, dw) + color.shape[2:], fill, np.uint8)
    for y in range(dh):
        for x in range(dw):
            if zbuf[y][x] is not None:
                out[y, x] = value(zbuf[y][x][0])
                if color is not None:
                    col[y, x] = flat[zbuf[y][x][1]]
    return out if color is None else (out, col)
