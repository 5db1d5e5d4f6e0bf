"""CuPy override of the resize kernel (``resize``), running ``_resize_cuda.cu``. ``portcv.transform``
imports this module, which registers the override."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._resize_plans import axis_table
from ._resize import resize_kernel

_CUDA_ARITH = {"nearest": 0, "linear": 1, "exact": 2, "area2_up": 3, "area2_even": 3}


@functools.lru_cache(maxsize=256)
def _device_table(arith: str, axis: str, n_src: int, n_dst: int, inv_scale: float, device_id: int) -> Any:
    """The axis table as a device int4 array ``(n_dst, 4)``, uploaded once per shape and device."""
    import cupy

    t = axis_table(arith, axis, n_src, n_dst, inv_scale)
    return cupy.asarray(np.stack([t.i0, t.i1, t.w0, t.w1], axis=1))


@resize_kernel.override("cupy")
def _resize_cupy(
    img: Any, *, arith: str, size: tuple[int, int], inv_scale: tuple[float, float], has_channels: bool
) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, current_device_id

    channels = img.shape[-1] if has_channels else 1
    if not 1 <= channels <= 4:
        return NotImplemented
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    dw, dh = size
    if (dh + 3) // 4 > 65535:
        return NotImplemented
    lead = img.shape[:-3] if has_channels else img.shape[:-2]
    planes = int(np.prod(lead, dtype=np.int64))
    device = current_device_id()
    xtab = _device_table(arith, "x", width, dw, inv_scale[0], device)
    ytab = _device_table(arith, "y", height, dh, inv_scale[1], device)
    round_up = "false" if arith == "area2_even" else "true"  # (s + 2) >> 2, or half to even
    fn = cuda_function(__name__, f"portcv_resize<{_CUDA_ARITH[arith]},{channels},{round_up}>")
    src = cupy.ascontiguousarray(img).reshape(planes, height * width * channels)
    out = cupy.empty((planes, dh * dw * channels), np.uint8)
    grid_xy = ((dw * channels + 255) // 256, (dh + 3) // 4)
    args = (np.int32(height), np.int32(width), np.int32(dh), np.int32(dw), xtab, ytab)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (64, 4), (src[start:stop], out[start:stop]) + args)
    return out.reshape(lead + (dh, dw) + ((channels,) if has_channels else ()))
