"""k nearest neighbours by the squared Euclidean distance (``nearest``): the tiled search of
``portcv/_tiled_nearest.py`` over eq. (3) tiles, or on CuPy, for k = 1 of 8-bit features, one
fused tensor-core pass (the m x n distances are never written).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from .._tiled_nearest import tiled_nearest
from ..backends import backend
from ._sqeuclidean import check_pair, sqeuclidean_kernel



def nearest(F: Any, D: Any, *, k: int = 1) -> tuple[Any, Any]:
    """The k nearest database vectors of each feature vector (squared Euclidean, exact).

    For every row of ``F``, the k rows of ``D`` with the smallest :func:`sqeuclidean`
    distance, nearest first; equal distances go to the smaller index of ``D``. This is the
    1-NN matching of Lin et al.'s pairwise-distance step (eq. (3)) without the m x n matrix:
    the database is processed in tiles and each tile merged into the running best.

    Parameters
    ----------
    F : (m, l) array of uint8, int8, uint16, int16 or int32
        Query feature vectors (any backend's array; the results are on the active backend).
    D : (n, l) array of F's dtype
        The database (gallery).
    k : int
        How many neighbours, ``1 <= k <= n``.

    Returns
    -------
    indices : (m, k) int32 array
        Row numbers in ``D``, ordered by (distance, index).
    distances : (m, k) int32 or int64 array
        Their squared distances, in :func:`sqeuclidean`'s dtype.

    Notes
    -----
    The neighbours are the k lexicographically smallest (distance, index) pairs, found with
    minimum reductions only, so they do not depend on the order in which a backend reduces
    (or on the tiling): every backend returns the same bits, and indices equal
    ``np.argsort(P, axis=1, kind="stable")[:, :k]`` of the full matrix ``P``. Memory is
    bounded by about 4M distances per tile (``portcv.distance._nearest.TILE_ELEMENTS``).

    References
    ----------
    D. Lin et al., "The Parallelization of Video Processing", IEEE Signal Processing Magazine,
    2009, eq. (3).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> D = np.array([[0, 0], [2, 0], [0, 2], [9, 9]], np.uint8)
    >>> F = np.array([[1, 1], [8, 8]], np.uint8)
    >>> idx, dist = portcv.distance.nearest(F, D, k=2)
    >>> portcv.to_numpy(idx)              # [1, 1] ties with rows 0, 1, 2: the smaller indices win
    array([[0, 1],
           [3, 1]], dtype=int32)
    >>> portcv.to_numpy(dist)
    array([[  2,   2],
           [  2, 100]], dtype=int32)
    """
    F, D, params = check_pair(F, D)
    k = _validate.integer(k, "k", low=1)
    n = D.shape[0]
    if k > n:
        raise ValueError(f"k must be at most the number of rows of D ({n}), got {k}")
    return nearest_sqeuclidean_kernel(F, D, k=k, **params)


@kernel("nearest_sqeuclidean")
def nearest_sqeuclidean_kernel(xp: Any, F: Any, D: Any, *, k: int, center: int, dtype: str) -> tuple[Any, Any]:
    """Portable :func:`nearest`: :func:`tiled_nearest` over eq. (3) tiles (each tile through
    ``sqeuclidean_kernel``, so through a backend's own distance kernel)."""
    return tiled_nearest(lambda f, d: sqeuclidean_kernel(f, d, center=center, dtype=dtype), F, D, k=k)


@nearest_sqeuclidean_kernel.override("jax", supports="every input (one compiled program per tile shape)")
def _nearest_sqeuclidean_jax(F: Any, D: Any, *, k: int, center: int, dtype: str) -> tuple[Any, Any]:
    # The tiles run as separate jitted programs: one program over every tile would be unrolled
    # over the whole gallery and compiled again for each gallery size.
    return nearest_sqeuclidean_kernel.portable(None, F, D, k=k, center=center, dtype=dtype)



