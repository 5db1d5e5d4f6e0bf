"""sqeuclidean and cdist: Lin et al.'s eq. (3), exact integers on every backend."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given

import portcv
from portcv import distance
from portcv.distance._sqeuclidean import result_dtype

from ..helpers import assert_same_bits, jax_without_x64, matches_numpy
from . import oracle_sqeuclidean as oracle
from .features import feature_pairs, sift_descriptors


@given(pair=feature_pairs())
def test_sqeuclidean_same_bits_on_every_backend(backend, pair):
    F, D = pair
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no override declines (PortableFallbackWarning)
        matches_numpy(backend, distance.sqeuclidean, F, D)


@given(pair=feature_pairs(max_rows=8, max_length=12))
def test_sqeuclidean_equals_the_naive_loops(pair):
    F, D = pair
    ours = distance.sqeuclidean(F, D)
    assert ours.dtype == result_dtype(F.dtype, F.shape[1])
    np.testing.assert_array_equal(ours, oracle.sqeuclidean(F, D))


@given(pair=feature_pairs())
def test_sqeuclidean_equals_scipy_cdist_in_float64(pair):
    """Every distance here is below 2**53, so scipy's float64 result is exact: equal, not close."""
    from scipy.spatial.distance import cdist

    F, D = pair
    ours = distance.sqeuclidean(F, D)
    expected = cdist(F.astype(np.float64), D.astype(np.float64), "sqeuclidean")
    assert np.array_equal(ours.astype(np.float64), expected)
    assert np.array_equal(ours, expected.astype(ours.dtype))


@pytest.mark.parametrize("dtype, length, expected", [
    ("uint8", 256, "int32"), ("uint8", 257, "int32"),  # NumPy's float32 -> float64 switch
    ("uint8", 33_025, "int32"), ("uint8", 33_026, "int64"),  # 33,025 * 255**2 < 2**31 - 1 < 33,026 * 255**2
    ("int8", 33_025, "int32"), ("int8", 33_026, "int64"),
    ("uint16", 1, "int64"), ("int16", 1, "int64"), ("int32", 1, "int64"),
])
def test_result_dtype_switches_exactly_at_the_bound(backend, dtype, length, expected):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    if dtype == "int32":
        lo, hi = -(2**30), 2**30
    F = np.full((2, length), lo, dtype)
    D = np.full((3, length), hi, dtype)
    D[1] = lo
    out = matches_numpy(backend, distance.sqeuclidean, F, D)
    assert out.dtype == expected
    worst = length * (int(hi) - int(lo)) ** 2
    np.testing.assert_array_equal(out, [[worst, 0, worst]] * 2)


def test_sixteen_bit_features_at_numpys_float64_limit():
    """NumPy's BLAS path holds for 16-bit features up to l = 2**21 (4 l 2**30 <= 2**53); one
    feature more runs the integer code. Both are exact at the extremes."""
    for length in (2**21, 2**21 + 1):
        F = np.full((1, length), -32768, np.int16)
        D = np.full((2, length), 32767, np.int16)
        D[1, ::2] = -32768
        out = distance.sqeuclidean(F, D)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, [[length * 65535**2, (length // 2) * 65535**2]])


def test_int32_features_whose_intermediates_wrap_are_still_exact(backend):
    """||f||^2 + ||d||^2 overflows int64 here (4 * (2**31 - 1)**2 > 2**63), the distance (64)
    does not: the wrapped two's-complement arithmetic lands on the exact value."""
    F = np.full((1, 4), 2**31 - 1, np.int32)
    D = np.array([[2**31 - 5] * 4, [2**31 - 1] * 4, [-(2**31)] * 4], np.int32)[:2]
    out = matches_numpy(backend, distance.sqeuclidean, F, D)
    np.testing.assert_array_equal(out, [[64, 0]])
    wide = np.array([[-(2**31)]], np.int32), np.array([[2**31 - 1], [0]], np.int32)
    # l * (max - min)**2 = (2**32 - 1)**2 >= 2**63: refused rather than wrapped
    with pytest.raises(ValueError, match="int32 features spanning"):
        distance.sqeuclidean(*wide)
    ok = np.array([[-(2**30)]], np.int32), np.array([[2**30], [0]], np.int32)
    np.testing.assert_array_equal(matches_numpy(backend, distance.sqeuclidean, *ok), [[2**62, 2**60]])


def test_equals_scipy_and_opencv_bfmatcher_on_sift_descriptors():
    """Real descriptors: SIFT of the astronaut (queries) against SIFT of the camera man
    (database): the matrix equals scipy's float64 cdist, and the two nearest of each query equal
    cv2.BFMatcher(NORM_L2SQR).knnMatch(k=2) in distance exactly, in index where the distance
    is unique (OpenCV's order among equal distances is its own)."""
    cv2 = pytest.importorskip("cv2")
    from scipy.spatial.distance import cdist

    F, D = sift_descriptors("astronaut"), sift_descriptors("camera")
    P = distance.sqeuclidean(F, D)
    assert P.dtype == np.int32 and P.shape == (len(F), len(D))
    assert np.array_equal(P.astype(np.float64), cdist(F.astype(np.float64), D.astype(np.float64), "sqeuclidean"))

    idx, dist = distance.nearest(F, D, k=3)
    matches = cv2.BFMatcher(cv2.NORM_L2SQR).knnMatch(F.astype(np.float32), D.astype(np.float32), k=2)
    cv_dist = np.array([[m.distance for m in pair] for pair in matches], np.float64)
    cv_idx = np.array([[m.trainIdx for m in pair] for pair in matches])
    np.testing.assert_array_equal(dist[:, :2], cv_dist)
    first_unique = dist[:, 0] != dist[:, 1]
    second_unique = (dist[:, 1] != dist[:, 0]) & (dist[:, 1] != dist[:, 2])
    unique = np.stack([first_unique, second_unique], axis=1)
    assert unique.mean() > 0.9
    np.testing.assert_array_equal(idx[:, :2][unique], cv_idx[unique])


def test_sift_descriptors_same_bits_on_every_backend(backend):
    F, D = sift_descriptors("astronaut")[:300], sift_descriptors("camera")
    matches_numpy(backend, distance.sqeuclidean, F, D)


@given(pair=feature_pairs(max_rows=6, max_length=8))
def test_cdist_is_sqeuclidean(pair):
    F, D = pair
    assert_same_bits(distance.sqeuclidean(F, D), distance.cdist(F, D, "sqeuclidean"))
    assert_same_bits(distance.sqeuclidean(F, D), distance.cdist(F, D, metric="sqeuclidean"))


def test_inputs_are_left_alone_and_not_aliased():
    rng = np.random.default_rng(5)
    F = rng.integers(0, 256, (5, 9), dtype=np.uint8)
    D = rng.integers(0, 256, (7, 9), dtype=np.uint8)
    before = zlib.crc32(F.tobytes()), zlib.crc32(D.tobytes())
    with portcv.using("numpy"):
        outs = [distance.sqeuclidean(F, D), distance.cdist(F, D, "sqeuclidean"), *distance.nearest(F, D, k=2),
                distance.quantize_features(F.astype(np.float32), 0.5)]
    assert (zlib.crc32(F.tobytes()), zlib.crc32(D.tobytes())) == before
    for out in outs:
        assert not np.shares_memory(out, F) and not np.shares_memory(out, D)


U8 = np.zeros((4, 6), np.uint8)


@pytest.mark.parametrize("call, error, words", [
    (lambda: distance.sqeuclidean(U8.astype(np.float32), U8), TypeError, r"F must have one of .* float32.*quantize_features\(F, scale\)"),
    (lambda: distance.sqeuclidean(U8, U8.astype(np.float64)), TypeError, r"D must have .*quantize_features\(D, scale\)"),
    (lambda: distance.sqeuclidean(U8.astype(np.int64), U8), TypeError, "F must have .* int64; wider integers: cast F to int32"),
    (lambda: distance.sqeuclidean(U8.astype(bool), U8), TypeError, "F must have one of the dtypes"),
    (lambda: distance.sqeuclidean(U8, U8.astype(np.int8)), TypeError, "D must have F's dtype uint8, got int8"),
    (lambda: distance.sqeuclidean(U8[0], U8), ValueError, r"F must be a 2-D array \(rows, features\), got shape \(6,\)"),
    (lambda: distance.sqeuclidean(U8, U8[None]), ValueError, "D must be a 2-D array"),
    (lambda: distance.sqeuclidean(U8[:0], U8), ValueError, "F must not be empty"),
    (lambda: distance.sqeuclidean(U8, U8[:, :0]), ValueError, "D must not be empty"),
    (lambda: distance.sqeuclidean(U8, U8[:, :5]), ValueError, "F and D must have the same number of features"),
    (lambda: distance.sqeuclidean("U8", U8), TypeError, "F must be an array"),
    (lambda: distance.sqeuclidean(U8, [[1, 2], [3]]), ValueError, "D must be a rectangular array"),
    (lambda: distance.sqeuclidean(U8, [[1] * 6]), TypeError, "D must have one of the dtypes .* got int64"),
    (lambda: distance.cdist(U8, U8, "euclidean"), ValueError, "metric must be one of .*square roots"),
    (lambda: distance.cdist(U8, U8, "cityblock"), ValueError, r"metric must be one of \('sqeuclidean',\)"),
    (lambda: distance.cdist(U8, U8, None), ValueError, "metric must be one of"),
    (lambda: distance.cdist(U8, U8.astype(np.float32), "sqeuclidean"), TypeError, "quantize_features"),
])
def test_bad_input_is_refused_naming_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_cdist_has_no_default_metric():
    """SciPy's default is 'euclidean' (inexact): no default rather than a different one."""
    with pytest.raises(TypeError, match="metric"):
        distance.cdist(U8, U8)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype int64")
def test_jax_without_64_bit_mode_refuses_int64_distances():
    """The trace-time check: JAX with x64 off would compute the int64 path in int32."""
    F = np.zeros((2, 3), np.int16)
    with jax_without_x64(), pytest.raises(RuntimeError, match="jax_enable_x64 is on"):
        distance.sqeuclidean(F, F)


@pytest.mark.parametrize("dtype", ["uint8", "int16"])
def test_numpys_blocked_blas_path_equals_the_integers(monkeypatch, dtype):
    """NumPy's BLAS path works on blocks of rows (bounded float copies): small blocks, several
    of them in each direction, a short last one."""
    from portcv.distance import _sqeuclidean

    monkeypatch.setattr(_sqeuclidean, "FEATURE_BLOCK", 3 * 22)  # 3 rows of 20 + 2 features
    rng = np.random.default_rng(7)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    F = rng.integers(lo, hi, (7, 20), dtype=dtype, endpoint=True)
    D = rng.integers(lo, hi, (11, 20), dtype=dtype, endpoint=True)
    with portcv.using("numpy"):
        np.testing.assert_array_equal(distance.sqeuclidean(F, D), oracle.sqeuclidean(F, D))
