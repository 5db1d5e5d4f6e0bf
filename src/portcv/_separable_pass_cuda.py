"""CuPy override of the separable pass (``separable_filter``), running ``_separable_pass_cuda.cu``.
The domain packages that run the pass (``portcv.filters``, ``portcv.edges``) import this module,
which registers the override."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._border import BORDER_CODE
from ._separable_pass import MAX_TAPS, separable_filter_kernel

_CUDA_TYPE = {"uint8": "unsigned char", "int16": "short", "int32": "int"}
_FINISH_CODE = {"shift": 0, "box_multiply": 1, "box_float32": 2, "floor_div": 3}


@separable_filter_kernel.override("cupy")
def _separable_filter_cupy(
    img: Any, *, kx: tuple, ky: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    import cupy

    from .backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    if not 1 <= channels <= 4 or len(kx) > MAX_TAPS or len(ky) > MAX_TAPS:
        return NotImplemented
    mode, p0, p1, out_name = finish
    # 32-row tiles halve the vertical halo's share; big kernels use 16 to stay under 48 KB of shared memory.
    tile_h = 16 if len(ky) > 15 or len(kx) * channels > 64 else 32
    fn = cuda_function(__name__, f"portcv_separable_filter<{len(kx)},{len(ky)},{channels},{_CUDA_TYPE[out_name]},{_FINISH_CODE[mode]},{tile_h}>",
    )
    img = cupy.ascontiguousarray(img)
    out = cupy.empty(img.shape, dtype=out_name)
    shape = img.shape
    H, W = shape[-3:-1] if has_channels else shape[-2:]
    planes = img.size // (H * W * channels)
    args = (
        np.int32(H), np.int32(W), device_constant(kx), device_constant(ky),
        np.int32(BORDER_CODE[border]), np.int32(border_value), np.int32(p0), np.int32(p1),
    )
    grid_xy = ((W * channels + 127) // 128, (H + tile_h - 1) // tile_h)
    if grid_xy[1] > 65535:  # gridDim.y limit: images over ~1M rows run the portable version
        return NotImplemented
    if planes <= 65535:
        fn(grid_xy + (planes,), (256,), (img, out) + args)
        return out
    src, dst = img.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,), (src[start:stop], dst[start:stop]) + args)
    return out
