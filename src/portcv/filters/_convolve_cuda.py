"""CuPy override of the direct 2-D correlation kernel (``convolve2d``), running ``_convolve_cuda.cu``.
``portcv.filters`` imports this module, which registers the override."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._border import BORDER_CODE
from .._separable_pass_cuda import _CUDA_TYPE, _FINISH_CODE
from ._convolve import MAX_SIZE, convolve2d_kernel

#: Output rows per CUDA thread (the tile is 8 thread rows high: 32 rows).
_ROWS_PER_THREAD = 4
_TILE_H = 8 * _ROWS_PER_THREAD


@convolve2d_kernel.override("cupy", supports="1 to 4 channels, kernels up to 31 x 31; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _convolve2d_cupy(
    img: Any, *, taps: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    kh, kw = len(taps), len(taps[0])
    if not 1 <= channels <= 4 or kh > MAX_SIZE or kw > MAX_SIZE:
        return NotImplemented
    shape = img.shape
    H, W = shape[-3:-1] if has_channels else shape[-2:]
    grid_xy = ((W * channels + 127) // 128, (H + _TILE_H - 1) // _TILE_H)
    if grid_xy[1] > 65535:  # gridDim.y limit: images over ~2M rows run the portable version
        return NotImplemented
    mode, p0, p1, out_name = finish
    fn = cuda_function(__name__, f"portcv_convolve2d<{kw},{kh},{channels},{_CUDA_TYPE[out_name]},{_FINISH_CODE[mode]}>"
    )
    img = cupy.ascontiguousarray(img)
    out = cupy.empty(shape, dtype=out_name)
    flat_taps = tuple(t for row in taps for t in row)
    args = (
        np.int32(H), np.int32(W), device_constant(flat_taps),
        np.int32(BORDER_CODE[border]), np.int32(border_value), np.int32(p0), np.int32(p1),
    )
    planes = img.size // (H * W * channels)
    src, dst = img.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,), (src[start:stop], dst[start:stop]) + args)
    return out
