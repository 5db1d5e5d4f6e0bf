"""Exact pairwise distances of integer feature vectors and nearest-neighbour matching.

Lin et al.'s pairwise squared distance (eq. (3), the "pairwise distance" column of their
Table 3): ``P[i, j] = sum_k (F[i, k] - D[j, k])**2`` between extracted features ``F`` (m x l)
and a database ``D`` (n x l). Features are integers (uint8 SIFT descriptors, quantized
histograms), so the distances are exact integers and every backend returns the same bits;
float features go through :func:`quantize_features` first. :func:`nearest` finds the k nearest
database rows without the m x n matrix, ties to the smaller index.
"""

from __future__ import annotations

from .. import _tiled_nearest_cuda  # noqa: F401  (registers the CuPy override of the tiles' merge)
from . import _nearest_cuda, _sqeuclidean_cuda  # noqa: F401  (register the CuPy overrides)
from ._nearest import nearest
from ._quantize import quantize_features
from ._sqeuclidean import METRICS, cdist, sqeuclidean

__all__ = ["METRICS", "cdist", "nearest", "quantize_features", "sqeuclidean"]
