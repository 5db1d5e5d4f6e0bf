"""convolve2d: the direct (non-separable) integer 2-D filter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from portcv import filters

from ..helpers import assert_same_bits, borders, cv2_borders, images, matches_numpy
from . import oracle_convolve as oracle

cv2 = pytest.importorskip("cv2")

CV2_BORDER = cv2_borders(cv2)


@st.composite
def kernels(draw, *, max_side: int = 7, low: int = -8, high: int = 8) -> np.ndarray:
    """Integer kernels of 1..max_side rows and columns (even sides too), a few zero taps."""
    kh, kw = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = rng.integers(low, high + 1, (kh, kw))
    return np.where(rng.random((kh, kw)) < 0.2, 0, k)


def opencv(fn, img, channel_axis, *args, **kwargs):
    """Call a cv2 filter per 2-D image of a batch (cv2 takes (H, W) or (H, W, C) only)."""
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([fn(np.ascontiguousarray(p), *args, **kwargs).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


@given(data=images(), kernel=kernels(), shift=st.integers(0, 8), border=borders, value=st.integers(0, 255),
       dtype=st.sampled_from([None, "uint8", "int16", "int32"]))
def test_convolve2d_same_bits_on_every_backend(backend, data, kernel, shift, border, value, dtype):
    img, axis = data
    matches_numpy(backend, filters.convolve2d, img, kernel, shift, border=border, border_value=value,
                  dtype=dtype, channel_axis=axis)


@pytest.mark.parametrize("shape", [(3, 31), (31, 1), (31, 31)])
def test_convolve2d_big_kernels_same_bits_on_every_backend(backend, shape):
    rng = np.random.default_rng(sum(shape))
    img = rng.integers(0, 256, (2, 37, 45, 3), dtype=np.uint8)
    kernel = rng.integers(-3, 4, shape)
    matches_numpy(backend, filters.convolve2d, img, kernel, 5, dtype="int16", channel_axis=-1)


@given(data=images(max_h=8, max_w=9, batch=False), kernel=kernels(max_side=5), shift=st.integers(0, 6),
       border=borders, value=st.integers(0, 255))
def test_convolve2d_equals_naive_loops(data, kernel, shift, border, value):
    img, axis = data
    ours = filters.convolve2d(img, kernel, shift, border=border, border_value=value, dtype="int32", channel_axis=axis)
    ref = oracle.convolve2d(img, kernel.tolist(), shift, border, value, has_channels=axis == -1)
    np.testing.assert_array_equal(ours, ref)


@given(data=images(), kernel=kernels(), border=borders)
def test_convolve2d_equals_opencv_filter2d(data, kernel, border):
    """shift = 0 (integral result): cv2.filter2D with float32 taps, ddepth CV_16S and -1 (uint8)."""
    img, axis = data
    k32 = kernel.astype(np.float32)
    ref16 = opencv(cv2.filter2D, img, axis, cv2.CV_16S, k32, borderType=CV2_BORDER[border])
    assert_same_bits(ref16, filters.convolve2d(img, kernel, 0, border=border, dtype="int16", channel_axis=axis))
    ref8 = opencv(cv2.filter2D, img, axis, -1, k32, borderType=CV2_BORDER[border])
    assert_same_bits(ref8, filters.convolve2d(img, kernel, 0, border=border, dtype="uint8", channel_axis=axis))


@given(data=images(), kx=st.lists(st.integers(-6, 6), min_size=1, max_size=7),
       ky=st.lists(st.integers(-6, 6), min_size=1, max_size=7), shift=st.integers(0, 8), border=borders,
       value=st.integers(0, 255))
def test_convolve2d_of_an_outer_product_is_sep_filter(data, kx, ky, shift, border, value):
    img, axis = data
    outer = np.outer(ky, kx)
    assert_same_bits(
        filters.sep_filter(img, kx, ky, shift, border=border, border_value=value, dtype="int32", channel_axis=axis),
        filters.convolve2d(img, outer, shift, border=border, border_value=value, dtype="int32", channel_axis=axis),
    )


def test_convolve2d_is_correlation_and_flipping_gives_the_papers_convolution():
    img = np.zeros((5, 5), np.uint8)
    img[2, 2] = 1
    kernel = np.arange(1, 10).reshape(3, 3)
    # The response of a correlation to an impulse is the kernel turned by 180 degrees.
    np.testing.assert_array_equal(filters.convolve2d(img, kernel, 0, dtype="int32")[1:4, 1:4], kernel[::-1, ::-1])
    np.testing.assert_array_equal(filters.convolve2d(img, kernel[::-1, ::-1], 0, dtype="int32")[1:4, 1:4], kernel)


def test_convolve2d_default_dtype_follows_sep_filter():
    img = np.full((4, 5), 255, np.uint8)
    assert filters.convolve2d(img, [[1, 2, 1], [2, 4, 2], [1, 2, 1]], 4).dtype == np.uint8
    assert filters.convolve2d(img, [[1, 2, 1], [2, 5, 2], [1, 2, 1]], 4).dtype == np.int32
    assert filters.convolve2d(img, [[1, -1]], 0).dtype == np.int32
    np.testing.assert_array_equal(filters.convolve2d(img, [[2]], 0, dtype="uint8"), 255)
    np.testing.assert_array_equal(filters.convolve2d(img, [[-200, -200]], 0, dtype="int16"), -32768)
    np.testing.assert_array_equal(filters.convolve2d(img, [[0, 0]], 3), 0)


def test_convolve2d_accepts_integral_floats_and_rounds_negative_sums_half_up():
    img = np.array([[0, 1, 0, 3]], np.uint8)
    out = filters.convolve2d(img, np.array([[-1.0, 0.0, 0.0]]), 1, dtype="int32")
    # acc = -img[x - 1] = -1, 0, -1, 0 (reflect101: x = 0 reads img[1]); (acc + 1) >> 1 = 0: -0.5 -> 0
    np.testing.assert_array_equal(out, [[0, 0, 0, 0]])
    out = filters.convolve2d(img, [[-3]], 1, dtype="int32")  # -1.5 -> -1, -4.5 -> -4
    np.testing.assert_array_equal(out, [[0, -1, 0, -4]])


GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.convolve2d(GRAY.astype(np.float32), [[1]], 0), TypeError, "image must have dtype uint8"),
        (lambda: filters.convolve2d(GRAY[0], [[1]], 0), ValueError, "image must have at least 2"),
        (lambda: filters.convolve2d(GRAY[:, :0], [[1]], 0), ValueError, "image must not be empty"),
        (lambda: filters.convolve2d("GRAY", [[1]], 0), TypeError, "image must be an array"),
        (lambda: filters.convolve2d(GRAY, [1, 2, 1], 0), ValueError, "kernel must be a non-empty 2-D"),
        (lambda: filters.convolve2d(GRAY, [[]], 0), ValueError, "kernel must be a non-empty 2-D"),
        (lambda: filters.convolve2d(GRAY, [[1, 2], [3]], 0), ValueError, "kernel must be a 2-D"),
        (lambda: filters.convolve2d(GRAY, np.ones((32, 3), int), 0), ValueError, "kernel may be at most 31x31"),
        (lambda: filters.convolve2d(GRAY, [[0.5, 1]], 0), TypeError, "kernel must hold integers"),
        (lambda: filters.convolve2d(GRAY, [[float("nan")]], 0), TypeError, "kernel must hold integers"),
        (lambda: filters.convolve2d(GRAY, [[float("inf")]], 0), TypeError, "kernel must hold integers"),
        (lambda: filters.convolve2d(GRAY, [[True]], 0), TypeError, "kernel must hold integers"),
        (lambda: filters.convolve2d(GRAY, [[2**24]], 0), ValueError, "kernel: .* overflow"),
        (lambda: filters.convolve2d(GRAY, [[2**23 + 2**15]], 20), ValueError, "kernel: .* overflow"),
        (lambda: filters.convolve2d(GRAY, [[2**40, -(2**40)]], 0), ValueError, "kernel: .* overflow"),
        (lambda: filters.convolve2d(GRAY, [[1]], -1), ValueError, "shift"),
        (lambda: filters.convolve2d(GRAY, [[1]], 31), ValueError, "shift"),
        (lambda: filters.convolve2d(GRAY, [[1]], 1.0), TypeError, "shift"),
        (lambda: filters.convolve2d(GRAY, [[1]], 0, border="wrap"), ValueError, "border"),
        (lambda: filters.convolve2d(GRAY, [[1]], 0, border_value=-1), ValueError, "border_value"),
        (lambda: filters.convolve2d(GRAY, [[1]], 0, dtype="float32"), ValueError, "dtype"),
        (lambda: filters.convolve2d(GRAY, [[1]], 0, channel_axis=1), ValueError, "channel_axis"),
    ],
)
def test_convolve2d_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_convolve2d_overflow_bound_counts_the_rounding_term():
    img = np.full((3, 3), 255, np.uint8)
    # (2**23 + 2**15) * 255 = 2**31 - 32767: fits without rounding, not with 2**19 added (shift 20).
    np.testing.assert_array_equal(filters.convolve2d(img, [[2**23 + 2**15]], 0), (2**23 + 2**15) * 255)
    # Q22 taps summing to 2**22 (the report-rule Gaussian) fit: 2**22 * 255 + 2**21 < 2**31.
    np.testing.assert_array_equal(filters.convolve2d(img, [[2**22]], 22), 255)
