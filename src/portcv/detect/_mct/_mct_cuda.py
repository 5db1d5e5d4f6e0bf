"""CuPy overrides of the MCT kernels (``mct``, ``mct_segment_alive``), running ``_mct_cuda.cu``.
``_mct.py`` holds the portable versions (the reference); importing this module (``portcv.detect``
does) registers the overrides.

The portable stage sums on CuPy are a handful of small launches per cascade position (host-bound:
about 55 ms for a 1080p frame on an H200); here a segment of stages is one launch, one thread per
window of the plan, and the transform of the packed pyramid one more.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._mct import mct_kernel, segment_alive_kernel

#: Threads per block of both kernels (grid-stride loops).
BLOCK = 256


@mct_kernel.override("cupy", supports="uint8 images (any leading batch dims)")
def _mct_cupy(img: Any) -> Any:
    import cupy

    from ...backends.cupy import cuda_function, launch_1d

    if img.dtype != cupy.uint8:
        return NotImplemented
    x = cupy.ascontiguousarray(img)
    h, w = x.shape[-2], x.shape[-1]
    planes = math.prod(x.shape[:-2])
    out = cupy.empty(x.shape[:-2] + (h - 2, w - 2), dtype=cupy.uint16)
    if out.size:
        grid, block = launch_1d(out.size, BLOCK)
        cuda_function(__name__, "portcv_mct_codes")(grid, block, (x, np.int64(planes), np.int32(h), np.int32(w), out))
    return out


@segment_alive_kernel.override("cupy", supports="every input")
def _segment_alive_cupy(codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any,
                        thresholds: Any, *, stages: tuple) -> Any:
    import cupy

    from ...backends.cupy import cuda_function, device_constant, launch_1d

    n = int(plan.shape[0])
    alive = cupy.empty(n, dtype=cupy.int32)
    if n == 0:
        return alive
    as_type = lambda a, dt: cupy.ascontiguousarray(cupy.asarray(a).astype(dt, copy=False))  # noqa: E731
    index = device_constant(tuple(j for j, _ in stages))
    begin = device_constant(tuple(b for _, (b, _e) in stages))
    end = device_constant(tuple(e for _, (_b, e) in stages))
    grid, block = launch_1d(n, BLOCK)
    cuda_function(__name__, "portcv_mct_segment")(grid, block, (
        as_type(codes, cupy.uint16), as_type(offsets, cupy.int32), as_type(plan, cupy.int32),
        as_type(count, cupy.int32), as_type(position_offsets, cupy.int32), as_type(lut, cupy.int16),
        as_type(thresholds, cupy.int32), index, begin, end, np.int32(len(stages)), np.int32(n), alive))
    return alive
