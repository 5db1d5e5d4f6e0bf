"""CuPy override of the nearest-neighbour search (``nearest_sqeuclidean``): k = 1 of 8-bit features
fused on int8 tensor cores (``_sqeuclidean_cuda.py``), otherwise tiles of the CUDA distance
kernel. ``portcv.distance`` imports this module, which registers the override."""

from __future__ import annotations

from typing import Any

from ._nearest import nearest_sqeuclidean_kernel
from ._sqeuclidean_cuda import run_tensor_core, tensor_core_case


@nearest_sqeuclidean_kernel.override(
    "cupy", supports="every input: k = 1 of 8-bit features fused on int8 tensor cores (the m x n "
    "distances are never written); otherwise tiles of the CUDA distance kernel")
def _nearest_sqeuclidean_cupy(F: Any, D: Any, *, k: int, center: int, dtype: str) -> tuple[Any, Any]:
    if k == 1 and tensor_core_case(F, D, dtype):
        return run_tensor_core(F, D, center=center, nearest=True)
    return nearest_sqeuclidean_kernel.portable(None, F, D, k=k, center=center, dtype=dtype)
