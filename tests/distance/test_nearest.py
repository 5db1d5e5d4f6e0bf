"""nearest: k nearest database rows by exact squared distance, ties to the smaller index,
through the tiled lexicographic (distance, index) minimum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import distance
from portcv._tiled_nearest import (
    lexicographic_kmin_kernel,
    tile_shape,
    tiled_nearest,
)
from portcv.distance._sqeuclidean import check_pair, sqeuclidean_kernel

from ..helpers import assert_same_bits, on_backend
from . import oracle_sqeuclidean as oracle
from .features import feature_pairs


def both_match_numpy(backend, fn, *args, **kwargs):
    """``fn`` returns (indices, distances): each equals NumPy's in dtype, shape and bits."""
    expected = on_backend("numpy", fn, *args, **kwargs)
    actual = on_backend(backend, fn, *args, **kwargs)
    for e, a in zip(expected, actual, strict=True):
        assert portcv.backends.get(backend).owns(a)
        assert_same_bits(e, a)
    return expected


@given(pair=feature_pairs(), data=st.data())
def test_nearest_same_bits_on_every_backend(backend, pair, data):
    F, D = pair
    k = data.draw(st.integers(1, min(4, D.shape[0])))
    both_match_numpy(backend, distance.nearest, F, D, k=k)


@given(pair=feature_pairs(max_rows=10, max_length=10), data=st.data())
def test_nearest_equals_the_naive_loops(pair, data):
    F, D = pair
    k = data.draw(st.integers(1, D.shape[0]))
    idx, dist = distance.nearest(F, D, k=k)
    ref_idx, ref_dist = oracle.nearest(F, D, k)
    assert idx.dtype == np.int32 and idx.shape == (F.shape[0], k)
    assert dist.dtype == distance.sqeuclidean(F, D).dtype
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)


@given(pair=feature_pairs(max_rows=20, max_length=6), data=st.data())
def test_any_tiling_gives_the_same_neighbours(backend, pair, data):
    """Tiles of a few rows and columns (many merges, a short last tile) equal the stable
    argsort of the whole matrix, on every backend."""
    F, D = pair
    k = data.draw(st.integers(1, min(3, D.shape[0])))
    tile_columns = data.draw(st.integers(1, 7))
    tile_elements = data.draw(st.integers(1, 40))
    P = distance.sqeuclidean(F, D)
    order = np.argsort(P, axis=1, kind="stable")[:, :k]

    def run():
        Fb, Db, params = check_pair(F, D)
        return tiled_nearest(lambda f, d: sqeuclidean_kernel(f, d, **params), Fb, Db, k=k,
                             tile_elements=tile_elements, tile_columns=tile_columns)

    idx, dist = both_match_numpy(backend, run)
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(dist, np.take_along_axis(P, order, axis=1))


def test_tile_shape_bounds_memory_and_holds_k_candidates():
    assert tile_shape(4096, 16384, 1) == (1024, 4096)
    assert tile_shape(3, 5, 2) == (3, 5)
    rows, cols = tile_shape(10**6, 10, 10)
    assert cols == 10 and rows * cols <= 1 << 22
    assert tile_shape(5, 10_000, 9000)[1] == 9000  # never fewer columns than k
    # long feature vectors (LBP histograms): the gallery tile's features stay bounded too
    assert tile_shape(64, 20_000, 1, length=11_907) == (64, (1 << 22) // 11_907)
    assert tile_shape(10**6, 20_000, 1, length=11_907)[0] == (1 << 22) // 11_907


def test_ties_go_to_the_smaller_index(backend):
    D = np.array([[5, 5], [0, 0], [5, 5], [0, 0], [1, 1], [5, 5]], np.uint8)
    F = np.array([[5, 5], [0, 0], [3, 3], [1, 0]], np.uint8)
    idx, dist = both_match_numpy(backend, distance.nearest, F, D, k=3)
    np.testing.assert_array_equal(idx, [[0, 2, 5], [1, 3, 4], [0, 2, 4], [1, 3, 4]])
    np.testing.assert_array_equal(dist, [[0, 0, 0], [0, 0, 2], [8, 8, 8], [1, 1, 1]])


def test_all_equal_gallery_across_many_tiles(backend):
    """Every distance equal: the answer is 0, 1, ..., k-1 whichever tile the reduction sees first."""
    F = np.full((3, 4), 7, np.int8)
    D = np.full((50, 4), -7, np.int8)
    def run():
        Fb, Db, params = check_pair(F, D)
        return tiled_nearest(lambda f, d: sqeuclidean_kernel(f, d, **params), Fb, Db, k=4,
                             tile_elements=8, tile_columns=4)

    idx, dist = both_match_numpy(backend, run)
    np.testing.assert_array_equal(idx, [[0, 1, 2, 3]] * 3)
    np.testing.assert_array_equal(dist, 4 * 14**2)


def test_the_largest_distance_is_a_candidate_like_any_other(backend):
    """The merge kernel on its own: a distance equal to its dtype's maximum is still returned
    (taken pairs are masked, not replaced by a sentinel value), in index order; the same for
    a later chi-square or any other distance with that maximum."""
    top = np.iinfo(np.int32).max
    tile = np.array([[top, top, 5, top], [top, top, top, top]], np.int32)

    def merge(k):
        xp = portcv.backend().xp
        best_d, best_i = xp.asarray(tile[:, :0]), xp.zeros((2, 0), dtype=xp.int32)
        first = lexicographic_kmin_kernel(best_d, best_i, xp.asarray(tile[:, :2]), 0, k=min(k, 2))
        return lexicographic_kmin_kernel(*first, xp.asarray(tile[:, 2:]), 2, k=k)

    idx_d = both_match_numpy(backend, merge, 3)
    np.testing.assert_array_equal(idx_d[0], [[5, top, top], [top, top, top]])
    np.testing.assert_array_equal(idx_d[1], [[2, 0, 1], [0, 1, 2]])
    one = both_match_numpy(backend, merge, 1)
    np.testing.assert_array_equal(one[1], [[2], [0]])


def test_k_equal_to_n_sorts_the_whole_row(backend):
    rng = np.random.default_rng(3)
    F = rng.integers(0, 4, (6, 3), dtype=np.uint8)
    D = rng.integers(0, 4, (9, 3), dtype=np.uint8)
    idx, dist = both_match_numpy(backend, distance.nearest, F, D, k=9)
    P = distance.sqeuclidean(F, D)
    np.testing.assert_array_equal(idx, np.argsort(P, axis=1, kind="stable"))
    np.testing.assert_array_equal(dist, np.sort(P, axis=1))


U8 = np.zeros((4, 6), np.uint8)


@pytest.mark.parametrize("call, error, words", [
    (lambda: distance.nearest(U8, U8, k=0), ValueError, r"k must be in \[1, inf\], got 0"),
    (lambda: distance.nearest(U8, U8, k=5), ValueError, r"k must be at most the number of rows of D \(4\), got 5"),
    (lambda: distance.nearest(U8, U8, k=1.0), TypeError, "k must be an integer"),
    (lambda: distance.nearest(U8, U8, k=True), TypeError, "k must be an integer"),
    (lambda: distance.nearest(U8.astype(np.float32), U8), TypeError, "quantize_features"),
    (lambda: distance.nearest(U8, U8[:, :3]), ValueError, "same number of features"),
    (lambda: distance.nearest(U8[0], U8), ValueError, "F must be a 2-D array"),
    (lambda: distance.nearest(U8, U8[:0]), ValueError, "D must not be empty"),
])
def test_nearest_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# Shapes across the CUDA kernel's 128 x 128 blocks and 64-byte feature steps: one row, one past
# a block, odd gallery sizes (P's rows not 8-byte aligned), lengths that are and are not whole
# 16-byte vectors, one shorter than a feature step; a gallery view that starts mid-allocation.
BLOCK_EDGE_SHAPES = [(1, 300, 16), (129, 257, 128), (200, 129, 65), (130, 3, 11)]


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("m, n, length", BLOCK_EDGE_SHAPES)
def test_block_edges_and_the_fused_one_nearest(backend, m, n, length, dtype):
    """The matrix and k = 1 (fused on CuPy: the tile's minimum per row folded by a 64-bit
    atomicMin) equal NumPy and the stable argsort of the whole matrix; repeated gallery rows
    in different blocks make ties across blocks, which go to the smaller index."""
    rng = np.random.default_rng(m * n + length)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    F = rng.integers(lo, hi, (m, length), endpoint=True).astype(dtype)
    D = rng.integers(lo, hi, (n + 1, length), endpoint=True).astype(dtype)[1:]  # a view: offset by one row
    D[n // 2:] = D[:n - n // 2]  # the second half repeats the first: every nearest row is tied
    F[: m // 2] = D[rng.integers(0, n, m // 2)]  # and half the queries are in the gallery
    P = on_backend("numpy", distance.sqeuclidean, F, D)
    assert_same_bits(P, on_backend(backend, distance.sqeuclidean, F, D))
    idx, dist = both_match_numpy(backend, distance.nearest, F, D, k=1)
    order = np.argsort(P, axis=1, kind="stable")[:, :1]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(dist, np.take_along_axis(P, order, axis=1))
    both_match_numpy(backend, distance.nearest, F, D, k=2)


# Galleries of many 128-column tiles, so that a block of CuPy's k = 1 kernel walks a strip of
# several tiles (more tiles than twice the SMs of any GPU up to 350 SMs for the first shapes):
# query rows resident in shared memory (16-byte rows up to 128 bytes, one or two 64-byte steps),
# streamed (16-byte rows longer than 128 bytes) and read byte by byte (other lengths).
STRIP_SHAPES = [(3, 128 * 700 + 77, 128), (3, 128 * 700 + 77, 32), (3, 128 * 700 + 77, 144),
                (3, 128 * 700 + 77, 130), (130, 128 * 150 + 5, 144), (3, 128 * 90 + 3, 528)]


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("m, n, length", STRIP_SHAPES)
def test_nearest_over_strips_of_many_tiles(backend, m, n, length, dtype):
    """k = 1 over galleries of hundreds of tiles equals NumPy, with exact matches tied within a
    strip (tile 1 repeats tile 0: neighbouring tiles of one block's strip) and across strips (the
    gallery's last rows repeat its first): ties go to the smaller index."""
    rng = np.random.default_rng(n + length)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    F = rng.integers(lo, hi, (m, length), endpoint=True).astype(dtype)
    D = rng.integers(lo, hi, (n, length), endpoint=True).astype(dtype)
    half = n // 2
    D[128:256] = D[:128]
    D[n - half:] = D[:half]
    F[0] = D[128 + 5]  # also rows 5 and n - half + 5 (and n - half + 133)
    F[1] = D[n - half + 7]  # also rows 7, 135 and n - half + 135
    idx, dist = both_match_numpy(backend, distance.nearest, F, D, k=1)
    np.testing.assert_array_equal(idx[:2, 0], [5, 7])
    np.testing.assert_array_equal(dist[:2, 0], [0, 0])


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("length", [341, 342])
def test_nearest_at_the_longest_packed_rows(backend, length, dtype):
    """CuPy's k = 1 kernel compares (distance, column) packed in one int32 for rows of up to
    341 features and separately from 342 on: features at their dtype's extremes give the largest
    and the most negative partial distances either side of that length (a bound one too loose,
    512, failed here); equal rows in other tiles make ties."""
    rng = np.random.default_rng(length)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    D = rng.choice(np.array([lo, hi], dtype), (700, length))
    D[0], D[1] = lo, hi  # every feature at one extreme
    D[300:302] = D[:2]
    F = np.concatenate([D[:2], rng.choice(np.array([lo, hi], dtype), (5, length))])
    F[-1] = D[650]
    idx, dist = both_match_numpy(backend, distance.nearest, F, D, k=1)
    P = on_backend("numpy", distance.sqeuclidean, F, D)
    order = np.argsort(P, axis=1, kind="stable")[:, :1]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(dist, np.take_along_axis(P, order, axis=1))
    assert idx[0, 0] == 0 and idx[1, 0] == 1 and dist[0, 0] == 0
