"""sobel (cv2.Sobel, CV_16S) and gradients (both first derivatives in one pass)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import filters

from ..helpers import (
    assert_same_bits,
    borders,
    cv2_borders,
    images,
    matches_numpy,
    on_backend,
)
from . import oracle_sobel as oracle

cv2 = pytest.importorskip("cv2")

CV2_BORDER = cv2_borders(cv2)
KSIZES = [-1, 1, 3, 5, 7]
#: Every (ksize, dx, dy) cv2.Sobel accepts: orders below the kernel size (ksize 1: below 3).
VALID = [
    (k, dx, dy)
    for k in KSIZES
    for dx in range(7)
    for dy in range(7)
    if dx + dy > 0
    and (dx + dy == 1 if k == -1 else dx < (3 if k == 1 else k) and dy < (3 if k == 1 else k))
]
orders = st.sampled_from(VALID)


def opencv(fn, img, channel_axis, *args, **kwargs):
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([fn(np.ascontiguousarray(p), *args, **kwargs).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


# ---------------------------------------------------------------- sobel
@given(data=images(), kdd=orders, border=borders)
def test_sobel_same_bits_on_every_backend(backend, data, kdd, border):
    img, axis = data
    k, dx, dy = kdd
    matches_numpy(backend, filters.sobel, img, dx, dy, ksize=k, border=border, channel_axis=axis)


@given(data=images(), kdd=orders, border=borders)
def test_sobel_equals_opencv(data, kdd, border):
    img, axis = data
    k, dx, dy = kdd
    ref = opencv(cv2.Sobel, img, axis, cv2.CV_16S, dx, dy, ksize=k, borderType=CV2_BORDER[border])
    assert_same_bits(ref, filters.sobel(img, dx, dy, ksize=k, border=border, channel_axis=axis))


@pytest.mark.parametrize("k, dx, dy", VALID)
def test_sobel_every_order_equals_opencv_on_a_saturating_image(k, dx, dy):
    rng = np.random.default_rng((k + 1) * 100 + dx * 10 + dy)
    img = (rng.integers(0, 2, (19, 23)) * 255).astype(np.uint8)  # extreme contrast: int16 saturation
    ref = cv2.Sobel(img, cv2.CV_16S, dx, dy, ksize=k)
    assert_same_bits(ref, filters.sobel(img, dx, dy, ksize=k))


@given(data=images(max_h=8, max_w=9, batch=False), kdd=st.sampled_from([v for v in VALID if max(v[1:]) <= 2 and
                                                                         (v[0], max(v[1:])) != (7, 2)]),
       border=borders)
def test_sobel_equals_naive_loops_with_tabulated_taps(data, kdd, border):
    img, axis = data
    k, dx, dy = kdd
    ref = oracle.sobel(img, dx, dy, k, border, has_channels=axis == -1)
    np.testing.assert_array_equal(filters.sobel(img, dx, dy, ksize=k, border=border, channel_axis=axis), ref)


def test_deriv_taps_follow_getDerivKernels():
    from portcv._derivatives import deriv_taps

    for k in (3, 5, 7):
        for order in range(k):
            expected = cv2.getDerivKernels(order, 1, k)[0].ravel()
            np.testing.assert_array_equal(deriv_taps(order, k), expected)
    np.testing.assert_array_equal(deriv_taps(0, -1), cv2.getDerivKernels(0, 1, -1)[0].ravel())
    np.testing.assert_array_equal(deriv_taps(1, -1), cv2.getDerivKernels(1, 0, -1)[0].ravel())


# ---------------------------------------------------------------- gradients
@given(data=images(), k=st.sampled_from(KSIZES), border=borders)
def test_gradients_same_bits_on_every_backend(backend, data, k, border):
    """Both backends agree: the fused CUDA kernel (cupy) and the two separable passes."""
    img, axis = data
    gx, gy = on_backend("numpy", filters.gradients, img, ksize=k, border=border, channel_axis=axis)
    bx, by = on_backend(backend, filters.gradients, img, ksize=k, border=border, channel_axis=axis)
    with portcv.using(backend):
        assert portcv.backend().owns(bx) and portcv.backend().owns(by)
    assert_same_bits(gx, bx)
    assert_same_bits(gy, by)


@given(data=images(), k=st.sampled_from(KSIZES), border=borders)
def test_gradients_are_the_two_first_derivatives_and_equal_opencv(data, k, border):
    img, axis = data
    gx, gy = filters.gradients(img, ksize=k, border=border, channel_axis=axis)
    assert_same_bits(filters.sobel(img, 1, 0, ksize=k, border=border, channel_axis=axis), gx)
    assert_same_bits(filters.sobel(img, 0, 1, ksize=k, border=border, channel_axis=axis), gy)
    b = CV2_BORDER[border]
    assert_same_bits(opencv(cv2.Sobel, img, axis, cv2.CV_16S, 1, 0, ksize=k, borderType=b), gx)
    assert_same_bits(opencv(cv2.Sobel, img, axis, cv2.CV_16S, 0, 1, ksize=k, borderType=b), gy)


def test_gradients_saturate_like_opencv_for_ksize_7():
    img = np.zeros((16, 16), np.uint8)
    img[:, 8:] = 255  # a step: gx = 10 * 255 * 64 = 163200 at the edge, saturated to 32767
    gx, gy = filters.gradients(img, ksize=7)
    assert portcv.to_numpy(gx).max() == 32767 and not portcv.to_numpy(gy).any()
    assert_same_bits(cv2.Sobel(img, cv2.CV_16S, 1, 0, ksize=7), gx)


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.sobel(GRAY.astype(np.float64), 1, 0), TypeError, "image must have dtype uint8"),
        (lambda: filters.sobel(GRAY[0], 1, 0), ValueError, "image must have at least 2"),
        (lambda: filters.sobel(GRAY[:0], 1, 0), ValueError, "image must not be empty"),
        (lambda: filters.sobel(GRAY, 0, 0), ValueError, "dx, dy: at least one"),
        (lambda: filters.sobel(GRAY, -1, 1), ValueError, "dx must be in"),
        (lambda: filters.sobel(GRAY, 1, -1), ValueError, "dy must be in"),
        (lambda: filters.sobel(GRAY, 1.0, 0), TypeError, "dx must be an integer"),
        (lambda: filters.sobel(GRAY, 0, True), TypeError, "dy must be an integer"),
        (lambda: filters.sobel(GRAY, 3, 0), ValueError, "dx must be < 3 for ksize=3"),
        (lambda: filters.sobel(GRAY, 0, 3, ksize=1), ValueError, "dy must be < 3 for ksize=1"),
        (lambda: filters.sobel(GRAY, 5, 0, ksize=5), ValueError, "dx must be < 5"),
        (lambda: filters.sobel(GRAY, 1, 1, ksize=-1), ValueError, "Scharr"),
        (lambda: filters.sobel(GRAY, 2, 0, ksize=-1), ValueError, "Scharr"),
        (lambda: filters.sobel(GRAY, 1, 0, ksize=9), ValueError, "ksize must be one of"),
        (lambda: filters.sobel(GRAY, 1, 0, ksize=0), ValueError, "ksize must be one of"),
        (lambda: filters.sobel(GRAY, 1, 0, ksize=3.0), TypeError, "ksize must be an integer"),
        (lambda: filters.sobel(GRAY, 1, 0, border="reflect"), ValueError, "border"),
        (lambda: filters.sobel(GRAY, 1, 0, channel_axis=-1), ValueError, "channel_axis"),
        (lambda: filters.gradients(GRAY, ksize=4), ValueError, "ksize must be one of"),
        (lambda: filters.gradients(GRAY, ksize=None), TypeError, "ksize must be an integer"),
        (lambda: filters.gradients(GRAY.astype(np.uint16)), TypeError, "image must have dtype uint8"),
        (lambda: filters.gradients(GRAY, border="wrap"), ValueError, "border"),
    ],
)
def test_sobel_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
