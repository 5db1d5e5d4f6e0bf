"""CuPy override of the grey conversion kernel (``rgb_to_gray``), running ``_gray_cuda.cu``.
``portcv.color`` imports this module, which registers the override."""

from __future__ import annotations

from typing import Any

from ._gray import _METHODS, _rgb_to_gray_kernel


@_rgb_to_gray_kernel.override("cupy")
def _rgb_to_gray_cupy(rgb: Any, *, method: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    rgb = cupy.ascontiguousarray(rgb)
    if rgb.data.ptr % 16:  # the kernel reads 16-byte vectors
        rgb = rgb.copy()
    out = cupy.empty(rgb.shape[:-1], dtype=cupy.uint8)
    n = out.size
    fn = cuda_function(__name__, f"portcv_rgb_to_gray<{_METHODS.index(method)}>")
    grid, block = launch_1d(max(n // 16, 1))
    fn(grid, block, (rgb, out, cupy.int64(n)))
    return out
