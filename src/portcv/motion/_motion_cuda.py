"""CuPy overrides of the motion kernels (``motion_difference``, ``motion_density``,
``motion_area_image``, ``motion_draw_regions``), running ``_motion_cuda.cu``. ``portcv.motion``
imports this module, which registers the overrides."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._motion import (
    CUDA_MAX_BETA, LISTING_CROP, area_image_kernel, cell_bounds, cell_membership, density_kernel,
    difference_kernel, draw_regions_kernel,
)


@difference_kernel.override("cupy", supports="beta <= 32; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _difference_cupy(e1: Any, e2: Any, *, beta: int, variant: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    h, w = e1.shape[-2:]
    beta = min(beta, max(h, w) - 1)  # a wider apron covers the same pixels
    if beta > CUDA_MAX_BETA:
        return NotImplemented
    halo = 16 if beta <= 16 else 32
    e1 = cupy.ascontiguousarray(e1)
    e2 = cupy.ascontiguousarray(e2)
    out = cupy.empty(e1.shape, dtype=cupy.uint8)
    planes = e1.size // (h * w)
    listing = variant == "listing"
    fn = cuda_function(__name__, f"portcv_motion_difference<{halo}>")
    grid_xy = ((w + 127) // 128, (h + 63) // 64)
    if grid_xy[1] > 65535:
        return NotImplemented
    aligned = np.int32(e1.data.ptr % 16 == 0)
    args = (np.int32(h), np.int32(w), np.int32(beta), np.int32(1 if listing else 0),
            np.int32(LISTING_CROP if listing else -1), aligned)
    s1, s2, so = e1.reshape(planes, -1), e2.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        # Plane offsets are multiples of H*W bytes; alignment only matters (and holds) when W % 16 == 0.
        fn(grid_xy + (stop - start,), (256,), (s1[start:stop], s2[start:stop], so[start:stop]) + args)
    return out


@density_kernel.override("cupy", supports="CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _density_cupy(d: Any, *, grid: tuple[int, int], variant: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    h, w = d.shape[-2:]
    rows, cols = grid
    if rows > 65535:  # gridDim.y limit
        return NotImplemented
    r0, r1, c0, c1 = cell_bounds(h, w, rows, cols, variant)
    d = cupy.ascontiguousarray(d)
    planes = d.size // (h * w)
    out = cupy.empty(d.shape[:-2] + (rows, cols), dtype=cupy.int32)
    fn = cuda_function(__name__, "portcv_motion_density<256>")
    args = (np.int32(h), np.int32(w), np.int32(rows), np.int32(cols),
            device_constant(r0), device_constant(r1), device_constant(c0), device_constant(c1))
    src, dst = d.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn((cols, rows, stop - start), (256,), (src[start:stop], dst[start:stop]) + args)
    return out


@functools.lru_cache(maxsize=64)
def _cell_slots_cupy(height: int, width: int, rows: int, cols: int, variant: str, device_id: int) -> tuple:
    """cell_membership of both axes as (4, H) and (4, W) int32 device arrays, uploaded once."""
    import cupy

    r0, r1, c0, c1 = cell_bounds(height, width, rows, cols, variant)
    return (cupy.asarray(np.stack(cell_membership(height, r0, r1))),
            cupy.asarray(np.stack(cell_membership(width, c0, c1))))


def _cells_cupy(image: Any, regions: Any, *, variant: str, has_channels: bool, outline: bool,
                color: tuple = (), thickness: int = 0) -> Any:
    """CuPy launcher of ``portcv_motion_cells`` for both area_image and draw_regions."""
    import cupy

    from ..backends.cupy import cuda_function, current_device_id

    channels = image.shape[-1] if has_channels else 1
    h, w = image.shape[-3:-1] if has_channels else image.shape[-2:]
    rows, cols = regions.shape[-2:]
    lead = tuple(image.shape[:-3] if has_channels else image.shape[:-2])
    planes = int(np.prod(lead, dtype=np.int64))
    if channels > 4 or planes > 65535 or h > 65535 or planes == 0:
        return NotImplemented
    grid = cupy.ascontiguousarray(cupy.broadcast_to(regions, lead + (rows, cols))).view(cupy.uint8)
    src = cupy.ascontiguousarray(image)
    out = cupy.empty(src.shape, dtype=cupy.uint8)
    rslots, cslots = _cell_slots_cupy(h, w, rows, cols, variant, current_device_id())
    values = tuple(color) if isinstance(color, tuple) else (color,)
    values = values * channels if len(values) == 1 else values
    packed = sum(int(c) << (8 * i) for i, c in enumerate(values))
    fn = cuda_function(__name__, f"portcv_motion_cells<{channels},{'true' if outline else 'false'}>")
    fn(((w + 255) // 256, h, planes), (256,),
       (src, grid, out, np.int32(h), np.int32(w), np.int32(rows), np.int32(cols), rslots, cslots,
        np.int32(thickness), np.uint32(packed)))
    return out


@area_image_kernel.override("cupy", supports="up to 4 channels, 65535 frames and 65535 rows")
def _area_image_cupy(image: Any, regions: Any, *, variant: str, has_channels: bool) -> Any:
    return _cells_cupy(image, regions, variant=variant, has_channels=has_channels, outline=False)


@draw_regions_kernel.override("cupy", supports="up to 4 channels, 65535 frames and 65535 rows")
def _draw_regions_cupy(image: Any, regions: Any, *, variant: str, has_channels: bool, color: tuple,
                       thickness: int) -> Any:
    return _cells_cupy(image, regions, variant=variant, has_channels=has_channels, outline=True,
                       color=color, thickness=thickness)
