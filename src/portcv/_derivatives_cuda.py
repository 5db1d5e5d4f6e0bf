"""CuPy override of the image gradients kernel (``gradients``), running ``_derivatives_cuda.cu``.
The domain packages that run it (``portcv.filters``, ``portcv.edges``) import this module, which
registers the override."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._border import BORDER_CODE
from ._derivatives import deriv_taps, gradients_kernel

_TILE_H = 32


@gradients_kernel.override("cupy", supports="1 to 4 channels; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _gradients_cupy(img: Any, *, ksize: int, has_channels: bool, border: str) -> Any:
    import cupy

    from .backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    shape = img.shape
    H, W = shape[-3:-1] if has_channels else shape[-2:]
    grid_xy = ((W * channels + 127) // 128, (H + _TILE_H - 1) // _TILE_H)
    if not 1 <= channels <= 4 or grid_xy[1] > 65535:
        return NotImplemented
    # One size K for both taps: ksize 1's smoothing tap [1] becomes [0, 1, 0] (same sums).
    deriv = deriv_taps(1, ksize)
    size = len(deriv)
    smooth = deriv_taps(0, ksize)
    pad = (size - len(smooth)) // 2
    smooth = (0,) * pad + smooth + (0,) * pad
    fn = cuda_function(__name__, f"portcv_gradients<{size},{channels}>")
    img = cupy.ascontiguousarray(img)
    gx = cupy.empty(shape, dtype=cupy.int16)
    gy = cupy.empty(shape, dtype=cupy.int16)
    args = (np.int32(H), np.int32(W), device_constant(smooth), device_constant(deriv), np.int32(BORDER_CODE[border]))
    planes = img.size // (H * W * channels)
    src, dx, dy = img.reshape(planes, -1), gx.reshape(planes, -1), gy.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,), (src[start:stop], dx[start:stop], dy[start:stop]) + args)
    return gx, gy
