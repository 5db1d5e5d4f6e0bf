"""Exact 2x reductions compiled with Numba: the NumPy resize override's loop where the ``cpu`` extra is installed."""

from __future__ import annotations

import numba
import numpy as np

from ..backends.numpy import NUMBA_OPTIONS


@numba.njit(**NUMBA_OPTIONS)
def halve_rows(src: np.ndarray, out: np.ndarray, height: int, out_height: int, channels: int, start: int,
               stop: int, even: bool) -> None:
    """Output rows ``start:stop`` of ``out`` (planes' ``out_height`` rows of ``dw * C`` stacked)
    from ``src`` (the planes' ``height`` rows of at least ``2 dw * C`` stacked): each output the
    sum ``s`` of its 2x2 block, then ``(s + 2) >> 2`` (OpenCV's area 2x with 1, 3 or 4
    channels) or, with ``even``, ``s / 4`` rounded half to even, ``(s + 1 + ((s >> 2) & 1)) >> 2``
    (the portable version's spelling). Unsigned 32-bit sums (s <= 1020)."""
    for k in range(start, stop):
        plane, y = k // out_height, k % out_height
        r0 = src[plane * height + 2 * y]
        r1 = src[plane * height + 2 * y + 1]
        dst = out[k]
        if channels == 1:
            for x in range(dst.shape[0]):
                s = (np.uint32(r0[2 * x]) + np.uint32(r0[2 * x + 1]) + np.uint32(r1[2 * x])
                     + np.uint32(r1[2 * x + 1]))
                if even:
                    dst[x] = np.uint8((s + np.uint32(1) + ((s >> np.uint32(2)) & np.uint32(1))) >> np.uint32(2))
                else:
                    dst[x] = np.uint8((s + np.uint32(2)) >> np.uint32(2))
        else:
            for x in range(dst.shape[0] // channels):
                a = 2 * x * channels
                for c in range(channels):
                    s = (np.uint32(r0[a + c]) + np.uint32(r0[a + channels + c]) + np.uint32(r1[a + c])
                         + np.uint32(r1[a + channels + c]))
                    if even:
                        v = (s + np.uint32(1) + ((s >> np.uint32(2)) & np.uint32(1))) >> np.uint32(2)
                    else:
                        v = (s + np.uint32(2)) >> np.uint32(2)
                    dst[x * channels + c] = np.uint8(v)
