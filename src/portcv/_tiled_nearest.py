"""k nearest neighbours as a tiled lexicographic minimum over (distance, index) pairs.

The gallery is processed in tiles of columns (and the queries in blocks of rows), so the full
m x n distance matrix never exists: memory is bounded by :data:`TILE_ELEMENTS`. Each tile's
distances are merged into the running k best of its query rows by
:func:`lexicographic_kmin_kernel`: the k smallest ``(distance, index)`` pairs in lexicographic
order, found with plain minimum reductions. A minimum does not depend on the order its
operands are combined in (no atomics on floats, no arrival order), so every backend and every
tiling returns the same neighbours, ties going to the smaller gallery index.

:func:`tiled_nearest` takes the distance as a function of a (query block, gallery tile) pair,
so any exact distance reuses it: ``portcv.distance.nearest`` (eq. (3)) and ``portcv.recognize.nearest``
(the weighted chi-square of LBP histograms). The CuPy override of the merge is
``_tiled_nearest_cuda.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._kernel import kernel
from .backends import backend

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
