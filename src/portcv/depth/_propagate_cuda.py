"""CuPy override of the propagation's z-buffer (``zbuffer_min``), running ``_propagate_cuda.cu``:
one atomicMin per source pixel instead of the portable version's two stable sorts.
``_propagate.py`` holds the portable version and imports this module at its end."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._propagate import EMPTY, zbuffer_kernel


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
