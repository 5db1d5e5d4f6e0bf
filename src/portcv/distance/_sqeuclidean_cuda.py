"""CuPy override of the squared Euclidean distance kernel (``sqeuclidean``) and the fused k = 1
search on int8 tensor cores (``run_tensor_core``), running ``_sqeuclidean_cuda.cu``. ``portcv.distance``
imports this module, which registers the override."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import backend
from ._sqeuclidean import sqeuclidean_kernel


@sqeuclidean_kernel.override(
    "cupy", supports="every input: 8-bit features with int32 distances on int8 tensor cores (CUDA mma, "
    "compute capability 8.0+); other features and older GPUs through the portable integer product")
def _sqeuclidean_cupy(F: Any, D: Any, *, center: int, dtype: str) -> Any:
    if not tensor_core_case(F, D, dtype):
        return sqeuclidean_kernel.portable(backend().xp, F, D, center=center, dtype=dtype)
    return run_tensor_core(F, D, center=center, nearest=False)

#: Rows and columns of P per CUDA block (``SQ_BM``/``SQ_BN`` in ``_sqeuclidean.cu``).
_CUDA_TILE = 128

#: Longest feature rows ``portcv_sq_nearest`` keeps whole in shared memory (``SQ_RESIDENT``).
_RESIDENT_LENGTH = 128

#: Feature rows shorter than this compare packed int32 keys in ``portcv_sq_nearest``
#: (``SQ_PACKED_LENGTH``).
_PACKED_LENGTH = 342


@functools.lru_cache(maxsize=None)
def _has_int8_mma(device_id: int) -> bool:
    import cupy

    return int(cupy.cuda.Device(device_id).compute_capability) >= 80  # mma.sync m16n8k32 .s8


def tensor_core_case(F: Any, D: Any, dtype: str) -> bool:
    """Whether the CUDA kernel takes these features: 8 bits, int32 distances (the int32 sums of
    ``_sqeuclidean.cu`` need ``l <= 33,025``), a grid CUDA can launch, an int8 mma unit."""
    from ..backends.cupy import current_device_id

    return (np.dtype(F.dtype).itemsize == 1 and dtype == "int32"
            and -(-F.shape[0] // _CUDA_TILE) <= 65535 and F.shape[0] + D.shape[0] + 128 < 2**31  # int32 rows and columns, a tile past n
            and _has_int8_mma(current_device_id()))


def run_tensor_core(F: Any, D: Any, *, center: int, nearest: bool) -> Any:
    """The CUDA kernels: row norms, then the tiled int8 mma product: ``P`` (m, n) int32, or with
    ``nearest`` the (indices, distances) of each row's lexicographically smallest
    (distance, column), both (m, 1) int32, without writing ``P``."""
    import cupy

    from ..backends.cupy import cuda_function, sm_count

    F = cupy.ascontiguousarray(F)
    D = cupy.ascontiguousarray(D)
    m, n, length = F.shape[0], D.shape[0], F.shape[1]
    centered = "true" if center else "false"
    # 16-byte rows: whole uint4 loads (the base pointers of CuPy's pool are 256-byte aligned;
    # a view into a tile of the gallery may not be).
    vec = "true" if length % 16 == 0 and F.data.ptr % 16 == 0 and D.data.ptr % 16 == 0 else "false"
    row_tiles, col_tiles = -(-m // _CUDA_TILE), -(-n // _CUDA_TILE)
    norms = cupy.empty(m + n, dtype=cupy.int32)
    best = cupy.empty(m + 1, dtype=cupy.uint64) if nearest else None  # and the kernel's ticket counter
    warps_per_block = 8
    cuda_function(__name__, f"portcv_sq_row_norms<{centered}>")(
        (-(-(m + n) // warps_per_block),), (32 * warps_per_block,),
        (F, D, np.int32(m), np.int32(n), np.int32(length), norms, best if nearest else np.uint64(0)))
    if nearest:
        # Strips of column tiles: about one wave of 2 blocks an SM, fewer for small problems.
        tiles = max(1, -(-(col_tiles * row_tiles) // (2 * sm_count())))
        resident = "true" if vec == "true" and length <= _RESIDENT_LENGTH else "false"
        packed = "true" if length < _PACKED_LENGTH else "false"
        index = cupy.empty((m, 1), dtype=cupy.int32)
        distance = cupy.empty((m, 1), dtype=cupy.int32)
        cuda_function(__name__, f"portcv_sq_nearest<{centered},{vec},{resident},{packed}>")(
            (-(-col_tiles // tiles), row_tiles), (256,),
            (F, D, np.int32(m), np.int32(n), np.int32(length), np.int32(tiles), norms, best, index, distance))
        return index, distance
    out = cupy.empty((m, n), dtype=cupy.int32)
    cuda_function(__name__, f"portcv_sqeuclidean<{centered},{vec}>")(
        (col_tiles, row_tiles), (256,), (F, D, np.int32(m), np.int32(n), np.int32(length), norms, out))
    return out
