"""CuPy override of the joint bilateral kernel (``joint_bilateral``: ``filters.joint_bilateral``
and ``depth.dcbf``), running ``_bilateral_cuda.cu``. ``_bilateral.py`` holds the portable version
(the reference); the packages that run the kernel (``portcv.filters``, ``portcv.depth``) import this
module, which registers the override.

The portable version is a handful of whole-image CuPy calls per window offset (121 offsets for
Table 5's 11 x 11 window), host-bound on a GPU; here one thread per output pixel walks the
window with the same integer arithmetic. With ``keep_known`` (dcbf's ``update="holes"``) only the
holes change, so a first launch copies the known values and lists the holes and a second runs one
warp per hole (its lanes split the window).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._bilateral import bilateral_kernel

#: Threads per block (along a row; blockIdx.y walks the rows of every frame). A multiple of 32:
#: the hole kernel gives each hole one warp.
BLOCK = 128
assert BLOCK % 32 == 0
#: The hole list's blocks: LIST_BLOCK threads take LIST_ITEMS chunks of LIST_BLOCK pixels (the
#: .cu's LIST_ITEMS), with one atomicAdd per block for the holes' slots.
LIST_BLOCK, LIST_ITEMS = 256, 8
#: Range tables up to this many entries (an L1 norm's: 766 for RGB) go to the hole fill's shared
#: memory; an L2 norm's (up to 195,076 for RGB) stay in global memory.
SHARED_TABLE_ENTRIES = 2048
#: common.cuh's Border codes.
_BORDER_CODES = {"reflect101": 0, "replicate": 1, "constant": 2}
_VALUE_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short"}


@bilateral_kernel.override("cupy", supports="uint8 guides and uint8/uint16 values of up to 4 channels each "
                                            "(with holes: one value channel)")
def _bilateral_cupy(guide: Any, values: Any, table: Any, spatial: Any, *, offsets: tuple, radius: int,
                    guide_channels: bool, value_channels: bool, border: str, color_norm: str, hole: int | None,
                    keep_known: bool, wide: bool) -> Any:
    import cupy

    from .backends.cupy import cuda_function, device_constant, sm_count

    value_type = _VALUE_TYPES.get(np.dtype(values.dtype))
    gy, vy = (-3 if guide_channels else -2), (-3 if value_channels else -2)
    cg = guide.shape[-1] if guide_channels else 1
    cv = values.shape[-1] if value_channels else 1
    if (guide.dtype != cupy.uint8 or value_type is None or not 1 <= cg <= 4 or not 1 <= cv <= 4 or not offsets
            or (hole is not None and (value_channels or not 0 <= hole <= np.iinfo(values.dtype).max))
            or guide.shape[:gy] != values.shape[:vy] or border not in _BORDER_CODES
            or (guide.shape[gy], guide.shape[gy + 1]) != (values.shape[vy], values.shape[vy + 1])):
        return NotImplemented
    height, width = guide.shape[gy], guide.shape[gy + 1]
    frames = math.prod(guide.shape[:gy])
    g, v = cupy.ascontiguousarray(guide), cupy.ascontiguousarray(values)
    out = cupy.empty(v.shape, dtype=v.dtype)
    if out.size == 0:
        return out
    flag = lambda b: "true" if b else "false"  # noqa: E731
    pairs = device_constant(tuple(c for dy_dx in offsets for c in dy_dx), "int32")  # int2 (dy, dx) per offset
    table = cupy.ascontiguousarray(cupy.asarray(table, dtype=cupy.int32))
    spatial = cupy.ascontiguousarray(cupy.asarray(spatial, dtype=cupy.int32))
    common = (table, spatial, pairs, np.int32(len(offsets)))
    fill = np.int32(0 if hole is None else hole)
    if hole is not None and keep_known:  # list the holes, then one thread per hole
        n = v.size
        count, holes = cupy.zeros(1, dtype=cupy.uint64), cupy.empty(n, dtype=cupy.int64)
        grid = (min(-(-n // (LIST_BLOCK * LIST_ITEMS)), sm_count() * 32),)
        cuda_function(__name__, f"portcv_bilateral_list_holes<{value_type}>")(
            grid, (LIST_BLOCK,), (v, np.int64(n), fill, out, count, holes), shared_mem=(LIST_BLOCK // 32 + 1) * 8)
        # Windows inside the frame take index steps dy * width + dx, while those fit an int32.
        reach = radius if radius * (width + 1) < 2**31 else max(height, width)
        shared_table = table.size <= SHARED_TABLE_ENTRIES
        cuda_function(__name__, f"portcv_bilateral_fill_holes<{value_type},{cg},{flag(color_norm == 'l2')},"
                                f"{flag(wide)},{flag(shared_table)}>")(
            (sm_count() * 16,), (BLOCK,),
            (g, v, *common, np.int32(reach), np.int32(table.size), np.int32(height), np.int32(width),
             np.int32(_BORDER_CODES[border]), fill, count, holes, out),
            shared_mem=8 * len(offsets) + (4 * table.size if shared_table else 0))
        return out
    fn = cuda_function(__name__, f"portcv_joint_bilateral<{value_type},{cg},{cv},{flag(color_norm == 'l2')},"
                                 f"{flag(wide)},{flag(hole is not None)}>")
    fn((-(-width // BLOCK), min(frames * height, 65535)), (BLOCK,), (
        g, v, *common, np.int32(frames), np.int32(height), np.int32(width), np.int32(_BORDER_CODES[border]), fill,
        out))
    return out
