"""CuPy overrides of the frame-delta kernels (``delta_encode``, ``delta_decode``), running
``_delta_cuda.cu``. ``portcv.codec`` imports this module, which registers the overrides."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._delta_decode import delta_decode_kernel
from ._delta import CUDA_BLOCK, CUDA_SCAN_THREADS, CUDA_TILE, CUDA_VECTOR, delta_encode_kernel


@delta_encode_kernel.override("cupy")
def _delta_encode_cupy(frame: Any, reference: Any, *, threshold: int, capacity: int,
                       donate_reference: bool = False) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    n = frame.size
    f = cupy.ascontiguousarray(frame).reshape(-1)
    r = cupy.ascontiguousarray(reference).reshape(-1)
    in_place = donate_reference and r.data.ptr == reference.data.ptr
    new_reference = r if in_place else cupy.empty(n, dtype=cupy.uint8)
    aligned = all(a.data.ptr % CUDA_VECTOR == 0 for a in (f, r, new_reference))
    tiles = (n + CUDA_TILE - 1) // CUDA_TILE
    tile_counts = cupy.empty(tiles, dtype=cupy.int32)  # per-tile counts, then exclusive offsets
    count = cupy.empty((), dtype=cupy.int32)
    positions = cupy.empty(capacity, dtype=cupy.int32)
    diffs = cupy.empty(capacity, dtype=cupy.int8)
    n64, th, cap, al = np.int64(n), np.int32(threshold), np.int32(capacity), np.int32(aligned)
    count_tiles = cuda_function(__name__, f"portcv_delta_count<{CUDA_BLOCK}>")
    scan = cuda_function(__name__, f"portcv_delta_tile_offsets<{CUDA_SCAN_THREADS}>")
    compact = cuda_function(__name__, f"portcv_delta_compact<{CUDA_BLOCK},{'true' if in_place else 'false'}>")
    count_tiles((tiles,), (CUDA_BLOCK,), (f, r, n64, th, al, tile_counts))
    scan((1,), (CUDA_SCAN_THREADS,), (tile_counts, np.int32(tiles), cap, count))
    compact((tiles,), (CUDA_BLOCK,), (f, r, new_reference, n64, th, al, tile_counts, count, cap, positions, diffs))
    return count, diffs, positions, new_reference.reshape(frame.shape)


@delta_decode_kernel.override("cupy", supports="int32 positions")
def _delta_decode_cupy(reference: Any, diffs: Any, positions: Any, count: Any) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    if positions.dtype != cupy.int32:
        return NotImplemented
    out = cupy.array(reference, copy=True, order="C")
    capacity = diffs.shape[0]
    if capacity == 0:
        return out
    count = cupy.asarray(count, dtype=cupy.int64)
    fn = cuda_function(__name__, f"portcv_delta_apply<{CUDA_BLOCK}>")
    grid, block = launch_1d(capacity, CUDA_BLOCK)
    fn(grid, block, (out.reshape(-1), np.int64(out.size), cupy.ascontiguousarray(positions),
                     cupy.ascontiguousarray(diffs), count, np.int32(capacity)))
    return out
