"""quantize_features: float features to integers, round half to even, nothing clipped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from portcv import distance

from ..helpers import matches_numpy

RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767)}


@st.composite
def quantizable(draw):
    """``(x, scale, dtype)`` whose quantized values fit ``dtype``; a third of the values lie
    exactly halfway between integers (scales are powers of two, so x * scale is exact)."""
    dtype = draw(st.sampled_from(sorted(RANGES)))
    float_type = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3))
    scale = 2.0 ** draw(st.integers(-3, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lo, hi = RANGES[dtype]
    halves = rng.integers(lo, hi, shape) + 0.5 * (rng.random(shape) < 0.33)
    noisy = rng.uniform(lo - 0.49, hi + 0.49, shape)
    q = np.where(rng.random(shape) < 0.5, halves, noisy)
    return (q / scale).astype(float_type), scale, dtype


@given(args=quantizable())
def test_quantize_same_bits_on_every_backend(backend, args):
    x, scale, dtype = args
    matches_numpy(backend, distance.quantize_features, x, scale, dtype=dtype)


@given(args=quantizable())
def test_quantize_is_rint_of_the_float64_product(args):
    x, scale, dtype = args
    expected = np.rint(x.astype(np.float64) * scale).astype(dtype)
    out = distance.quantize_features(x, scale, dtype=dtype)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected)


def test_halves_round_to_even_and_the_range_is_inclusive():
    x = np.array([0.5, 1.5, 2.5, -0.4, 254.5, 255.4], np.float64)
    np.testing.assert_array_equal(distance.quantize_features(x, 1.0), [0, 2, 2, 0, 254, 255])
    np.testing.assert_array_equal(distance.quantize_features(np.array([-128.5, 127.4]), 1, dtype="int8"), [-128, 127])


def test_quantized_features_feed_the_exact_distance():
    rng = np.random.default_rng(0)
    F = rng.random((5, 16), dtype=np.float32)
    D = rng.random((7, 16), dtype=np.float32)
    q = distance.sqeuclidean(distance.quantize_features(F, 255), distance.quantize_features(D, 255))
    ref = ((np.rint(F.astype(np.float64) * 255)[:, None] - np.rint(D.astype(np.float64) * 255)[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(q, ref)


X = np.array([[0.1, 0.2]], np.float32)


@pytest.mark.parametrize("call, error, words", [
    (lambda: distance.quantize_features(X.astype(np.uint8), 1), TypeError, "x must have dtype float32 or float64, got uint8; integer features need no quantization"),
    (lambda: distance.quantize_features(X.astype(np.float16), 1), TypeError, "x must have dtype float32 or float64"),
    (lambda: distance.quantize_features([0.5], 1), TypeError, "x must be an array"),
    (lambda: distance.quantize_features(X[:, :0], 1), ValueError, "x must not be empty"),
    (lambda: distance.quantize_features(np.broadcast_to(np.float32(0.5), (2**16, 2**16)), 1), ValueError,
     "x has 4294967296 elements; at most"),  # tried a 32 GiB float64 copy
    (lambda: distance.quantize_features(X, 0), ValueError, "scale must be > 0"),
    (lambda: distance.quantize_features(X, -2.0), ValueError, "scale must be > 0"),
    (lambda: distance.quantize_features(X, float("nan")), ValueError, "scale must be finite"),
    (lambda: distance.quantize_features(X, 2.0**65), ValueError, "scale must be <="),
    (lambda: distance.quantize_features(X, "2"), TypeError, "scale must be a real number"),
    (lambda: distance.quantize_features(X, 1, dtype="int32"), ValueError, "dtype must be one of"),
    (lambda: distance.quantize_features(X, 2000), ValueError, r"x \* scale rounds to values in \[200, 400\], outside uint8's \[0, 255\]"),
    (lambda: distance.quantize_features(-X, 10), ValueError, "outside uint8's"),
    (lambda: distance.quantize_features(np.array([1.0, np.nan]), 1), ValueError, "x holds NaN"),
    (lambda: distance.quantize_features(np.array([1.0, np.inf]), 1), ValueError, "outside uint8's"),
])
def test_quantize_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
