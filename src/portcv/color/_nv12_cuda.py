"""CuPy override of the YUV 4:2:0 -> RGB kernel (``yuv420_to_rgb``: ``color.nv12_to_rgb``,
``nv12_to_bgr``, ``i420_to_rgb``, ``i420_to_bgr``), running ``_nv12_cuda.cu``. ``_nv12.py`` holds
the portable version (the reference); the package imports this module, which registers the
override.

The portable version on CuPy is a dozen whole-frame CuPy calls with int32 temporaries; here one
launch reads each frame once and writes each pixel once, one thread per 2 x 2 block (its chroma
terms computed once and shared by the block's four pixels, as OpenCV does).
"""

from __future__ import annotations

from typing import Any

from ._nv12 import _yuv420_to_rgb_kernel

_LAYOUT_CODES = {"nv12": 0, "i420": 1}


@_yuv420_to_rgb_kernel.override("cupy", supports="every input (one thread per 2 x 2 block)")
def _yuv420_to_rgb_cupy(yuv: Any, *, layout: str, chroma_order: str, channel_order: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    yuv = cupy.ascontiguousarray(yuv)
    rows, width = yuv.shape[-2], yuv.shape[-1]
    height = rows * 2 // 3
    out = cupy.empty(tuple(yuv.shape[:-2]) + (height, width, 3), dtype=cupy.uint8)
    n_blocks = out.size // 12  # 2 x 2 pixels of 3 bytes
    code, vu, bgr = _LAYOUT_CODES[layout], int(chroma_order == "vu"), int(channel_order == "bgr")
    grid, block = launch_1d(n_blocks)
    kernel = cuda_function(__name__, f"portcv_yuv420_to_rgb<{code},{vu},{bgr}>")
    kernel(grid, block, (yuv, out, cupy.int64(n_blocks), cupy.int32(height), cupy.int32(width)))
    return out
