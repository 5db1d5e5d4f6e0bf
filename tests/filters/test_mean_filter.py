"""mean_filter: the webcam report's k x k mean filter (truncating, zero border)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import filters

from ..helpers import assert_same_bits, borders, cv2_borders, images, matches_numpy
from . import oracle_convolve as oracle

cv2 = pytest.importorskip("cv2")

CV2_BORDER = cv2_borders(cv2)
odd_k = st.integers(0, 15).map(lambda k: 2 * k + 1)


def opencv(fn, img, channel_axis, *args, **kwargs):
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([fn(np.ascontiguousarray(p), *args, **kwargs).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


@given(data=images(), k=odd_k, rounding=st.sampled_from(filters._separable.MEAN_ROUNDINGS), border=borders,
       value=st.integers(0, 255))
def test_mean_filter_same_bits_on_every_backend(backend, data, k, rounding, border, value):
    img, axis = data
    matches_numpy(backend, filters.mean_filter, img, k, rounding=rounding, border=border, border_value=value,
                  channel_axis=axis)


@given(data=images(max_h=8, max_w=9, batch=False), k=st.sampled_from([1, 3, 5, 7]), border=borders,
       value=st.integers(0, 255))
def test_mean_filter_is_the_truncated_mean_of_naive_loops(data, k, border, value):
    img, axis = data
    ref = oracle.report_mean(img, k, border, value, has_channels=axis == -1)
    np.testing.assert_array_equal(filters.mean_filter(img, k, border=border, border_value=value, channel_axis=axis), ref)


def test_mean_filter_reproduces_the_reports_worked_example():
    """Section 6.2: two 3x3 frames and their 3x3 means (zero border, truncated)."""
    b = np.array([[120, 139, 90], [99, 126, 106], [46, 75, 88]], np.uint8)
    np.testing.assert_array_equal(filters.mean_filter(b, 3), [[53, 75, 51], [67, 98, 69], [38, 60, 43]])
    a = np.array([[120, 131, 112], [112, 101, 82], [44, 106, 65]], np.uint8)
    # The report prints 96 in the centre, but its window sum is 873 = 9 * 97 exactly; every other
    # entry matches. (B's entry 60 = 540 / 9 shows the report keeps exact multiples.)
    np.testing.assert_array_equal(filters.mean_filter(a, 3), [[51, 73, 47], [68, 97, 66], [40, 56, 39]])


@given(data=images(), k=odd_k, border=borders)
def test_mean_filter_opencv_rounding_equals_cv2_blur(data, k, border):
    img, axis = data
    ref = opencv(cv2.blur, img, axis, (k, k), borderType=CV2_BORDER[border])
    assert_same_bits(ref, filters.mean_filter(img, k, rounding="opencv", border=border, channel_axis=axis))
    assert_same_bits(ref, filters.box_blur(img, k, border=border, channel_axis=axis))


@given(data=images(), k=odd_k, border=borders)
def test_mean_filter_truncates_where_cv2_blur_rounds(data, k, border):
    img, axis = data
    truncated = portcv.to_numpy(filters.mean_filter(img, k, border=border, channel_axis=axis)).astype(int)
    rounded = opencv(cv2.blur, img, axis, (k, k), borderType=CV2_BORDER[border]).astype(int)
    sums = portcv.to_numpy(filters.sep_filter(img, [1] * k, [1] * k, 0, border=border, dtype="int32", channel_axis=axis))
    # One level lower exactly where the mean's fraction is >= 1/2 (k odd: no ties).
    np.testing.assert_array_equal(rounded - truncated, (2 * (sums % (k * k)) >= k * k).astype(int))


def test_mean_filter_default_border_is_zero_padding():
    img = np.full((4, 4), 90, np.uint8)
    out = portcv.to_numpy(filters.mean_filter(img, 3))
    assert out[0, 0] == 90 * 4 // 9 and out[0, 1] == 90 * 6 // 9 and out[1, 1] == 90
    np.testing.assert_array_equal(filters.mean_filter(img, 3, border="reflect101"), 90)


GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.mean_filter(GRAY.astype(np.int16), 3), TypeError, "image must have dtype uint8"),
        (lambda: filters.mean_filter(GRAY[0], 3), ValueError, "image must have at least 2"),
        (lambda: filters.mean_filter(GRAY[:0], 3), ValueError, "image must not be empty"),
        (lambda: filters.mean_filter(GRAY, 4), ValueError, "ksize must be odd"),
        (lambda: filters.mean_filter(GRAY, 0), ValueError, "ksize"),
        (lambda: filters.mean_filter(GRAY, 33), ValueError, "ksize"),
        (lambda: filters.mean_filter(GRAY, (3, 3)), TypeError, "ksize must be an integer"),
        (lambda: filters.mean_filter(GRAY, 3.0), TypeError, "ksize must be an integer"),
        (lambda: filters.mean_filter(GRAY, float("nan")), TypeError, "ksize"),
        (lambda: filters.mean_filter(GRAY, 3, rounding="nearest"), ValueError, "rounding"),
        (lambda: filters.mean_filter(GRAY, 3, border="reflect"), ValueError, "border"),
        (lambda: filters.mean_filter(GRAY, 3, border_value=300), ValueError, "border_value"),
        (lambda: filters.mean_filter(GRAY, 3, channel_axis="last"), ValueError, "channel_axis"),
    ],
)
def test_mean_filter_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
