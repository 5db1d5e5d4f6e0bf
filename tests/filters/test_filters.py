from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import portcv
from portcv import filters

from ..helpers import assert_same_bits, borders, cv2_borders, images, matches_numpy
from . import oracle_filters as oracle

cv2 = pytest.importorskip("cv2")

CV2_BORDER = cv2_borders(cv2)
small_taps = st.lists(st.integers(-8, 8), min_size=1, max_size=9)
odd_ksizes = st.integers(1, 15).map(lambda k: 2 * k + 1)


def opencv(fn, img, channel_axis, *args, **kwargs):
    """Call a cv2 filter per 2-D image of a batch (cv2 takes (H, W) or (H, W, C) only)."""
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([fn(np.ascontiguousarray(p), *args, **kwargs).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


# ---------------------------------------------------------------- sep_filter
@given(data=images(), kx=small_taps, ky=small_taps, shift=st.integers(0, 8), border=borders,
       value=st.integers(0, 255), dtype=st.sampled_from([None, "uint8", "int16", "int32"]))
def test_sep_filter_same_bits_on_every_backend(backend, data, kx, ky, shift, border, value, dtype):
    img, axis = data
    matches_numpy(backend, filters.sep_filter, img, kx, ky, shift, border=border, border_value=value,
                  dtype=dtype, channel_axis=axis)


@given(data=images(max_h=9, max_w=11, batch=False), kx=small_taps, ky=small_taps,
       shift=st.integers(0, 6), border=borders, value=st.integers(0, 255))
def test_sep_filter_equals_naive_loops(data, kx, ky, shift, border, value):
    img, axis = data
    ours = filters.sep_filter(img, kx, ky, shift, border=border, border_value=value, dtype="int32", channel_axis=axis)
    ref = oracle.sep_filter(img, kx, ky, shift, border, value, has_channels=axis == -1)
    np.testing.assert_array_equal(ours, ref)


def test_sep_filter_default_dtype_is_uint8_only_when_it_cannot_clip():
    img = np.full((5, 5), 255, np.uint8)
    assert filters.sep_filter(img, [1, 2, 1], [1, 2, 1], 4).dtype == np.uint8
    out = filters.sep_filter(img, [-1, 0, 1], [1, 2, 1], 0)
    assert out.dtype == np.int32
    grad = filters.sep_filter(np.tile(np.arange(5, dtype=np.uint8) * 60, (5, 1)), [-1, 0, 1], [1], 0)
    np.testing.assert_array_equal(grad[0], [0, 120, 120, 120, 0])  # reflect101 makes the ends 0


def test_sep_filter_explicit_dtype_saturates_like_opencv():
    img = np.full((3, 3), 200, np.uint8)
    np.testing.assert_array_equal(filters.sep_filter(img, [2], [2], 0, dtype="uint8"), 255)
    np.testing.assert_array_equal(filters.sep_filter(img, [-200], [200], 0, dtype="int16"), -32768)


# ---------------------------------------------------------------- gaussian_blur
@given(data=images(), ksize=st.sampled_from([0, 3, 5, 7, 9, 15, 31]), sigma=st.floats(0.05, 10),
       border=borders)
def test_gaussian_blur_same_bits_on_every_backend(backend, data, ksize, sigma, border):
    img, axis = data
    assume(ksize or round(6 * sigma + 1) | 1 <= 31)
    matches_numpy(backend, filters.gaussian_blur, img, ksize=ksize, sigma=sigma, border=border, channel_axis=axis)


@given(data=images(), kw=odd_ksizes, kh=odd_ksizes, sigma=st.floats(0.01, 10), sigma_y=st.floats(0.01, 10),
       border=borders)
def test_gaussian_blur_equals_opencv(data, kw, kh, sigma, sigma_y, border):
    img, axis = data
    ref = opencv(cv2.GaussianBlur, img, axis, (kw, kh), sigma, sigmaY=sigma_y, borderType=CV2_BORDER[border])
    out = filters.gaussian_blur(img, ksize=(kw, kh), sigma=sigma, sigma_y=sigma_y, border=border, channel_axis=axis)
    assert_same_bits(ref, out)


@pytest.mark.parametrize("sigma", [0.3, 0.8, 1.2, 2.0, 3.3, 4.5])
def test_gaussian_blur_ksize_zero_derives_size_like_opencv(sigma):
    img = portcv.data.synthetic_rgb(37, 41, seed=2)
    ref = cv2.GaussianBlur(img, (0, 0), sigma)
    assert_same_bits(ref, filters.gaussian_blur(img, ksize=0, sigma=sigma))


def test_gaussian_taps_sum_to_256_and_are_symmetric():
    for k in range(1, 32, 2):
        for sigma in (0.1, 0.7, 1.0, 2.5, 9.9):
            t = filters.gaussian_taps_q8(k, sigma)
            assert sum(t) == 256 and t == t[::-1] and len(t) == k


# ---------------------------------------------------------------- box_blur
@given(data=images(), kw=st.integers(1, 31), kh=st.integers(1, 31), border=borders)
def test_box_blur_same_bits_on_every_backend(backend, data, kw, kh, border):
    img, axis = data
    matches_numpy(backend, filters.box_blur, img, (kw, kh), border=border, channel_axis=axis)


@given(data=images(), kw=st.integers(1, 31), kh=st.integers(1, 31), border=borders)
def test_box_blur_equals_opencv(data, kw, kh, border):
    img, axis = data
    area = kw * kh
    assume(area != 2)  # OpenCV's (s + 2) >> 1 bug, not copied (see test below)
    ref = opencv(cv2.blur, img, axis, (kw, kh), borderType=CV2_BORDER[border])
    out = portcv.to_numpy(filters.box_blur(img, (kw, kh), border=border, channel_axis=axis))
    if area > 256 and area % 2 == 0:
        # OpenCV finishes some rows in float64, where an exact tie (a window mean of q + 1/2)
        # may round down: every pixel that differs is such a tie, one level apart.
        for index in zip(*np.nonzero(out != ref)):
            low = min(int(out[index]), int(ref[index]))
            assert abs(int(out[index]) - int(ref[index])) == 1, index
            assert 2 * _window_sum(img, axis, index, kw, kh, border) == (2 * low + 1) * area, index
    else:
        assert_same_bits(ref, out)


def _window_sum(img, channel_axis, index, kw, kh, border):
    """The exact sum of the kw x kh window (with the border) at one output element."""
    if channel_axis == -1:
        *lead, y, x, c = index
        plane = img[tuple(lead)][..., c]
    else:
        *lead, y, x = index
        plane = img[tuple(lead)]
    total = 0
    for j in range(kh):
        yy = oracle.border_index(y + j - kh // 2, plane.shape[0], border)
        for i in range(kw):
            xx = oracle.border_index(x + i - kw // 2, plane.shape[1], border)
            total += 0 if yy is None or xx is None else int(plane[yy, xx])
    return total


def test_box_blur_two_pixel_window_rounds_half_up():
    img = np.array([[1, 1, 3, 5]], np.uint8)
    # window (x-1, x): sums 2 (reflect101: 1+1), 2, 4, 8 -> means 1, 1, 2, 4 (no ties to round)
    np.testing.assert_array_equal(filters.box_blur(img, (2, 1)), [[1, 1, 2, 4]])
    np.testing.assert_array_equal(cv2.blur(img, (2, 1)), [[2, 2, 3, 5]])  # OpenCV's (s + 2) >> 1


@given(data=images(max_h=8, max_w=9, batch=False), kw=st.integers(1, 5), kh=st.integers(1, 5), border=borders)
def test_box_blur_is_the_rounded_mean(data, kw, kh, border):
    img, axis = data
    area = kw * kh
    assume(area & (area - 1) != 0 or area <= 2)  # powers of two > 2 round up from .25 like OpenCV
    ref = oracle.box_mean(img, kw, kh, border, has_channels=axis == -1)
    np.testing.assert_array_equal(filters.box_blur(img, (kw, kh), border=border, channel_axis=axis), ref)


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.gaussian_blur(GRAY.astype(np.float64), sigma=1), TypeError, "dtype uint8"),
        (lambda: filters.gaussian_blur(GRAY.astype(np.int16), sigma=1), TypeError, "dtype uint8"),
        (lambda: filters.gaussian_blur(GRAY[0], sigma=1), ValueError, "at least 2 dimensions"),
        (lambda: filters.gaussian_blur(GRAY[:0], sigma=1), ValueError, "empty"),
        (lambda: filters.gaussian_blur(GRAY, ksize=4, sigma=1), ValueError, "ksize must be odd"),
        (lambda: filters.gaussian_blur(GRAY, ksize=-3, sigma=1), ValueError, "ksize"),
        (lambda: filters.gaussian_blur(GRAY, ksize=33, sigma=1), ValueError, "ksize"),
        (lambda: filters.gaussian_blur(GRAY, ksize=3.0, sigma=1), TypeError, "ksize"),
        (lambda: filters.gaussian_blur(GRAY, sigma=0), ValueError, "ksize must be given"),  # sigma 0: from ksize
        (lambda: filters.gaussian_blur(GRAY, sigma=-1), ValueError, "sigma must be >= 0"),
        (lambda: filters.gaussian_blur(GRAY, sigma=float("nan")), ValueError, "sigma must be finite"),
        (lambda: filters.gaussian_blur(GRAY, sigma=float("inf")), ValueError, "sigma must be finite"),
        (lambda: filters.gaussian_blur(GRAY, sigma=10.5), ValueError, "sigma"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, sigma_y=-1), ValueError, "sigma_y"),
        (lambda: filters.gaussian_blur(GRAY, sigma="1"), TypeError, "sigma"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, border="wrap"), ValueError, "border"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, border="constant", border_value=256), ValueError, "border_value"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, channel_axis=0), ValueError, "channel_axis"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, channel_axis=-1), ValueError, "channel_axis"),
        (lambda: filters.box_blur(GRAY, 0), ValueError, "ksize"),
        (lambda: filters.box_blur(GRAY, (3, 3, 3)), ValueError, "ksize"),
        (lambda: filters.box_blur(GRAY, 40), ValueError, "ksize"),
        (lambda: filters.sep_filter(GRAY, [1] * 32, [1], 0), ValueError, "kx may have at most 31"),
        (lambda: filters.sep_filter(GRAY, [], [1], 0), ValueError, "kx must be a non-empty"),
        (lambda: filters.sep_filter(GRAY, [True, 2, 1], [1], 0), TypeError, "kx must hold integers .* a bool"),
        (lambda: filters.sep_filter(GRAY, [[1, 2]], [1], 0), ValueError, "kx must be a non-empty 1-D"),
        (lambda: filters.sep_filter(GRAY, [0.5, 1], [1], 0), TypeError, "kx must hold integers"),
        (lambda: filters.sep_filter(GRAY, [1], [1], -1), ValueError, "shift"),
        (lambda: filters.sep_filter(GRAY, [1], [1], 31), ValueError, "shift"),
        (lambda: filters.sep_filter(GRAY, [100000], [100000], 0), ValueError, "overflow"),
        (lambda: filters.sep_filter(GRAY, [2**40], [0], 0), ValueError, "overflow"),
        (lambda: filters.sep_filter(GRAY, [1], [1], 0, dtype="float32"), ValueError, "dtype"),
        (lambda: filters.gaussian_taps_q8(4, 1.0), ValueError, "odd"),
    ],
)
def test_filters_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("shape", [(37, 41), (23, 30, 3), (1, 41), (37, 1, 3)])
def test_gaussian_blur_sigma_0_is_opencvs_default(shape):
    """cv2.GaussianBlur(img, (k, k), 0), OpenCV users' most common call: fixed tables up to 9,
    sigma from ksize beyond; also rectangular kernels and sigma_y=0 meaning sigma."""
    img = np.random.default_rng(len(shape)).integers(0, 256, shape, dtype=np.uint8)
    for k in range(1, 32, 2):
        assert_same_bits(cv2.GaussianBlur(img, (k, k), 0), filters.gaussian_blur(img, ksize=k))
    for kw, kh in [(3, 7), (11, 1), (1, 5)]:
        assert_same_bits(cv2.GaussianBlur(img, (kw, kh), 0), filters.gaussian_blur(img, ksize=(kw, kh), sigma=0))
    assert_same_bits(cv2.GaussianBlur(img, (5, 9), 1.5, sigmaY=0),
                     filters.gaussian_blur(img, ksize=(5, 9), sigma=1.5, sigma_y=0))


def test_gaussian_blur_sigma_0_same_bits_on_every_backend(backend):
    img = np.random.default_rng(3).integers(0, 256, (2, 29, 33, 3), dtype=np.uint8)
    for k in (3, 9, 13):
        matches_numpy(backend, filters.gaussian_blur, img, ksize=k)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "ksize must be given"),
    ({"ksize": 0, "sigma": 0}, "ksize must be given"),
    ({"ksize": 3, "sigma": -1}, "sigma must be >= 0"),
    ({"ksize": 3, "sigma": 1, "sigma_y": -1}, "sigma_y must be >= 0"),
    ({"ksize": 3, "sigma": 0, "rule": "report"}, "sigma must be > 0 for rule='report'"),
])
def test_gaussian_blur_sigma_0_needs_a_kernel_size(kwargs, message):
    with pytest.raises(ValueError, match=message):
        filters.gaussian_blur(np.zeros((8, 8), np.uint8), **kwargs)
