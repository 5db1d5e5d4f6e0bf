"""CuPy overrides of the propagation's kernels, running ``_propagate_cuda.cu``: the projections
(``depth_project``, ``disparity_project``: one thread per source pixel instead of a few dozen
whole-image CuPy calls) and the z-buffer (``zbuffer_min``: one atomicMin per source pixel instead
of two stable sorts) and the winners' gather (``zbuffer_gather``: one thread per destination
pixel). ``_propagate.py`` holds the portable versions and imports this module at
its end."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._propagate import EMPTY, PROJECTION_BITS, disparity_project_kernel, gather_kernel, project_kernel, zbuffer_kernel

_DEPTH_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short"}


@zbuffer_kernel.override("cupy", supports="int64 slots and keys (one atomicMin per source)")
def _zbuffer_cupy(dest: Any, key: Any, *, slots: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    if dest.dtype != cupy.int64 or key.dtype != cupy.int64:
        return NotImplemented
    out = cupy.full(slots, EMPTY, dtype=cupy.int64)
    n = int(dest.shape[0])
    if n and slots:
        grid, block = launch_1d(n)
        cuda_function(__name__, "portcv_zbuffer_min")(grid, block, (
            cupy.ascontiguousarray(dest), cupy.ascontiguousarray(key), np.int64(n), np.int64(slots), out))
    return out


@project_kernel.override("cupy", supports="uint8/uint16 depth maps")
def _project_cupy(depth: Any, matrix: Any, *, dst_shape: tuple[int, int], unknown: int, max_depth: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    name = _DEPTH_TYPES.get(np.dtype(depth.dtype))
    if name is None or depth.ndim != 2:
        return NotImplemented
    height, width = depth.shape
    dh, dw = dst_shape
    n = height * width
    dest, key = cupy.empty(n, dtype=cupy.int64), cupy.empty(n, dtype=cupy.int64)
    if n:
        grid, block = launch_1d(n)
        cuda_function(__name__, f"portcv_depth_project<{name}>")(grid, block, (
            cupy.ascontiguousarray(depth), cupy.ascontiguousarray(cupy.asarray(matrix, dtype=cupy.int64)),
            np.int32(height), np.int32(width), np.int32(dh), np.int32(dw), np.int64(unknown), np.int64(max_depth),
            np.int32(PROJECTION_BITS), dest, key))
    return dest, key


@disparity_project_kernel.override("cupy", supports="uint8/uint16 disparity maps")
def _disparity_project_cupy(disparity: Any, *, direction: int, frac_bits: int, unknown: int, max_value: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    name = _DEPTH_TYPES.get(np.dtype(disparity.dtype))
    if name is None or disparity.ndim != 2:
        return NotImplemented
    height, width = disparity.shape
    n = height * width
    dest, key = cupy.empty(n, dtype=cupy.int64), cupy.empty(n, dtype=cupy.int64)
    if n:
        grid, block = launch_1d(n)
        cuda_function(__name__, f"portcv_disparity_project<{name}>")(grid, block, (
            cupy.ascontiguousarray(disparity), np.int32(height), np.int32(width), np.int32(direction),
            np.int32(frac_bits), np.int64(unknown), np.int64(max_value), dest, key))
    return dest, key


@gather_kernel.override("cupy", supports="uint8/uint16 depth and uint8 colour")
def _gather_cupy(best: Any, color: Any, *, depth_of_key: tuple[int, int], unknown: int, fill: int, dtype: str,
                 dst_shape: tuple[int, int], with_color: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    name = _DEPTH_TYPES.get(np.dtype(dtype))
    if name is None or best.dtype != cupy.int64 or (with_color and (color.dtype != cupy.uint8 or color.ndim > 3)):
        return NotImplemented
    slots = int(best.shape[0])
    channels = (color.shape[2] if color.ndim == 3 else 1) if with_color else 0
    depth = cupy.empty(dst_shape, dtype=dtype)
    picked = cupy.empty(dst_shape + tuple(color.shape[2:]), dtype=cupy.uint8) if with_color else None
    if slots:
        grid, block = launch_1d(slots)
        offset, sign = depth_of_key
        cuda_function(__name__, f"portcv_zbuffer_gather<{name}>")(grid, block, (
            cupy.ascontiguousarray(best), np.int64(slots), np.int64(offset), np.int64(sign), np.int64(unknown),
            cupy.ascontiguousarray(color), np.int32(channels), np.int32(fill), depth,
            picked if with_color else depth))  # an unwritten stand-in pointer without colour
    return depth, picked
