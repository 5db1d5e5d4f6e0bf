"""k nearest neighbours as a tiled lexicographic minimum over (distance, index) pairs.

The gallery is processed in tiles of columns (and the queries in blocks of rows), so the full
m x n distance matrix never exists: memory is bounded by :data:`TILE_ELEMENTS`. Each tile's
distances are merged into the running k best of its query rows by
:func:`lexicographic_kmin_kernel`: the k smallest ``(distance, index)`` pairs in lexicographic
order, found with plain minimum reductions. A minimum does not depend on the order its
operands are combined in (no atomics on floats, no arrival order), so every backend and every
tiling returns the same neighbours, ties going to the smaller gallery index.

:func:`tiled_nearest` takes the distance as a function of a (query block, gallery tile) pair,
so any exact distance (eq. (3) here, a chi-square distance of LBP histograms later) reuses it.
"""

from __future__ import annotations

import math

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend
from ._sqeuclidean import check_pair, run_tensor_core, sqeuclidean_kernel, tensor_core_case

#: Distances per tile (4M: 16 MB of int32, plus the float temporaries of NumPy's BLAS path).
TILE_ELEMENTS = 1 << 22
#: Gallery columns per tile at most (the query block grows to fill the tile).
TILE_COLUMNS = 4096
_NO_INDEX = 2**31 - 1


def _largest(xp: Any, dtype: Any) -> Any:
    """The largest value of ``dtype`` (integers) or infinity (floats): 'taken' entries' stand-in."""
    return xp.iinfo(dtype).max if xp.isdtype(dtype, "integral") else xp.inf


@kernel("lexicographic_kmin")
def lexicographic_kmin_kernel(xp: Any, best_d: Any, best_i: Any, tile_d: Any, offset: Any, *, k: int) -> tuple[Any, Any]:
    """Merge a tile of distances into the running k best per row, lexicographically by
    (distance, index).

    ``best_d``/``best_i`` (r, j <= k): the best so far (j = 0 before the first tile), ascending;
    ``tile_d`` (r, t): distances to gallery rows ``offset .. offset + t - 1``; ``j + t >= k``.
    Each of the k rounds takes the smallest distance not yet taken, then the smallest index
    among the untaken pairs with that distance: two minimum reductions, so the result is the
    same in any reduction order. Indices are unique, so one pair is taken per round; the
    ``taken`` mask (not a sentinel distance) keeps a genuine maximum-valued distance eligible.
    """
    rows, t = tile_d.shape
    tile_i = xp.broadcast_to(xp.arange(t, dtype=xp.int32)[None, :] + offset, (rows, t))
    d = xp.concat([best_d, tile_d], axis=1)
    i = xp.concat([best_i, xp.astype(tile_i, xp.int32)], axis=1)
    top = _largest(xp, d.dtype)
    taken = None
    out_d, out_i = [], []
    for _ in range(k):  # k is small and static
        free_d = d if taken is None else xp.where(taken, top, d)
        dmin = xp.min(free_d, axis=1, keepdims=True)
        tie = (d == dmin) if taken is None else (d == dmin) & ~taken
        imin = xp.min(xp.where(tie, i, _NO_INDEX), axis=1, keepdims=True)
        out_d.append(dmin)
        out_i.append(imin)
        taken = (i == imin) if taken is None else taken | (i == imin)
    return xp.concat(out_d, axis=1), xp.concat(out_i, axis=1)


@lexicographic_kmin_kernel.override("numpy", supports="every input (one argmin pass for k = 1)")
def _lexicographic_kmin_numpy(best_d: Any, best_i: Any, tile_d: Any, offset: Any, *, k: int) -> tuple[Any, Any]:
    """k = 1 in one pass: ``np.argmin`` returns the first (smallest) index among a row's equal
    minima, and a tile (all of whose indices exceed the best's) replaces the best only where it
    is strictly smaller: the same lexicographic minimum as the portable version."""
    if k != 1:
        return lexicographic_kmin_kernel.portable(backend().xp, best_d, best_i, tile_d, offset, k=k)
    rows = np.arange(tile_d.shape[0])
    j = np.argmin(tile_d, axis=1)
    tile_min = tile_d[rows, j][:, None]
    tile_idx = (j.astype(np.int32) + np.int32(offset))[:, None]
    if best_d.shape[1] == 0:
        return tile_min, tile_idx
    better = tile_min < best_d
    return np.where(better, tile_min, best_d), np.where(better, tile_idx, best_i)



@lexicographic_kmin_kernel.override("cupy", supports="k = 1 on int32/int64 distances (a CUDA block per row); "
                                                     "otherwise portable")
def _lexicographic_kmin_cupy(best_d: Any, best_i: Any, tile_d: Any, offset: Any, *, k: int) -> tuple[Any, Any]:
    """k = 1 in one launch: each row's smallest (distance, index) over its best and the tile."""
    import cupy

    from ..backends.cupy import cuda_function

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


def tile_shape(m: int, n: int, k: int, *, length: int = 1, tile_elements: int = TILE_ELEMENTS,
               tile_columns: int = TILE_COLUMNS) -> tuple[int, int]:
    """(query rows, gallery columns) per tile: at least k columns (the first tile must hold k
    candidates), at most ``tile_columns`` and ``tile_elements`` gallery features of ``length``
    each (long histograms), about ``tile_elements`` distances."""
    cols = min(n, max(k, min(tile_columns, tile_elements // length)))
    rows = min(m, max(1, tile_elements // max(cols, length)))
    return rows, cols


def tiled_nearest(
    distance: Callable[[Any, Any], Any],
    queries: Any,
    gallery: Any,
    *,
    k: int,
    tile_elements: int = TILE_ELEMENTS,
    tile_columns: int = TILE_COLUMNS,
    tile: tuple[int, int] | None = None,
) -> tuple[Any, Any]:
    """The k nearest gallery rows of every query row: ``(indices (m, k) int32, distances (m, k))``.

    ``distance(query_block, gallery_tile)`` returns the (rows, cols) distances of a block of
    queries to a tile of the gallery, in any totally ordered dtype (exact integers for
    bit-exact results). Ties go to the smaller gallery index; rows are sorted by (distance,
    index). Arrays are the active backend's; validation is the caller's (``1 <= k <= n``).
    ``tile``: (query rows, gallery columns) per tile when the distance knows its own memory
    bound (at least ``k`` columns); default :func:`tile_shape` of the gallery rows' length.
    """
    xp = backend().xp
    m, n = queries.shape[0], gallery.shape[0]
    if tile is None:
        length = math.prod(gallery.shape[1:])  # a row's features, whatever its shape
        tile = tile_shape(m, n, k, length=length, tile_elements=tile_elements, tile_columns=tile_columns)
    rows, cols = tile
    indices, distances = [], []
    for r0 in range(0, m, rows):
        block = queries[r0:r0 + rows]
        best_d = best_i = None
        for c0 in range(0, n, cols):
            tile = distance(block, gallery[c0:c0 + cols])
            if best_d is None:  # no candidates yet: empty (r, 0) arrays
                best_d = tile[:, :0]
                best_i = xp.zeros((tile.shape[0], 0), dtype=xp.int32)
            best_d, best_i = lexicographic_kmin_kernel(best_d, best_i, tile, c0, k=k)
        indices.append(best_i)
        distances.append(best_d)
    if len(indices) == 1:
        return indices[0], distances[0]
    return xp.concat(indices, axis=0), xp.concat(distances, axis=0)


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


@nearest_sqeuclidean_kernel.override(
    "cupy", supports="every input: k = 1 of 8-bit features fused on int8 tensor cores (the m x n "
    "distances are never written); otherwise tiles of the CUDA distance kernel")
def _nearest_sqeuclidean_cupy(F: Any, D: Any, *, k: int, center: int, dtype: str) -> tuple[Any, Any]:
    if k == 1 and tensor_core_case(F, D, dtype):
        return run_tensor_core(F, D, center=center, nearest=True)
    return nearest_sqeuclidean_kernel.portable(None, F, D, k=k, center=center, dtype=dtype)

