"""CuPy override of the tiles' k-min merge (``lexicographic_kmin``), running ``_tiled_nearest_cuda.cu``.
The packages that run the tiled search (``portcv.distance``, ``portcv.recognize``) import this
module, which registers the override."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._tiled_nearest import lexicographic_kmin_kernel
from .backends import backend


@lexicographic_kmin_kernel.override("cupy", supports="k = 1 on int32/int64 distances (a CUDA block per row); "
                                                     "otherwise portable")
def _lexicographic_kmin_cupy(best_d: Any, best_i: Any, tile_d: Any, offset: Any, *, k: int) -> tuple[Any, Any]:
    """k = 1 in one launch: each row's smallest (distance, index) over its best and the tile."""
    import cupy

    from .backends.cupy import cuda_function

    dtypes = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
    if k != 1 or tile_d.dtype not in dtypes or best_d.dtype != tile_d.dtype:
        return lexicographic_kmin_kernel.portable(backend().xp, best_d, best_i, tile_d, offset, k=k)
    rows, t = tile_d.shape
    out_d = cupy.empty((rows, 1), dtype=tile_d.dtype)
    out_i = cupy.empty((rows, 1), dtype=cupy.int32)
    if rows == 0:
        return out_d, out_i
    has_best = best_d.shape[1] > 0
    fn = cuda_function(__name__, f"portcv_lexicographic_min<{dtypes[tile_d.dtype]}>")
    fn((rows,), (256 if t > 128 else 32,),
       (cupy.ascontiguousarray(best_d), cupy.ascontiguousarray(best_i), np.int32(has_best),
        cupy.ascontiguousarray(tile_d), np.int32(t), np.int32(offset), out_d, out_i))
    return out_d, out_i
