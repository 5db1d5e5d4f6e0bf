"""gaussian_kernel (OpenCV's Q8 taps, the webcam report's Q22 2-D kernel) and gaussian_blur(rule='report')."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import filters

from ..helpers import assert_same_bits, borders, images, matches_numpy
from . import oracle_convolve as oracle

cv2 = pytest.importorskip("cv2")

odd_k = st.integers(0, 15).map(lambda k: 2 * k + 1)
Q = filters._gaussian.REPORT_GAUSSIAN_BITS


# ---------------------------------------------------------------- gaussian_kernel, rule="opencv"
@given(k=odd_k, sigma=st.floats(0.05, 20))
def test_opencv_rule_is_gaussian_taps_q8(k, sigma):
    taps = filters.gaussian_kernel(sigma, ksize=k)
    assert taps.dtype == np.int32 and taps.shape == (k,)
    assert tuple(taps) == filters.gaussian_taps_q8(k, sigma)


@pytest.mark.parametrize("sigma", [0.1, 0.5, 0.8, 1.2, 2.0, 3.3, 4.5, 4.9])
def test_opencv_rule_derives_the_size_like_opencv(sigma):
    taps = filters.gaussian_kernel(sigma)
    assert len(taps) == int(round(sigma * 6 + 1)) | 1
    # cv2.GaussianBlur(ksize=0) uses those taps: an impulse of 255 spreads over the non-zero ones.
    img = np.zeros((1, 41), np.uint8)
    img[0, 20] = 255
    spread = np.flatnonzero(cv2.GaussianBlur(img, (0, 0), sigma, sigmaY=0.01, borderType=cv2.BORDER_CONSTANT))
    nonzero = np.flatnonzero(taps)
    assert (spread.min() - 20, spread.max() - 20) == (nonzero.min() - len(taps) // 2, nonzero.max() - len(taps) // 2)


# ---------------------------------------------------------------- gaussian_kernel, rule="report"
@given(k=odd_k, sigma=st.floats(0.05, 20))
def test_report_rule_is_symmetric_sums_to_2_to_the_q_and_is_close_to_the_float_kernel(k, sigma):
    taps = filters.gaussian_kernel(sigma, ksize=k, rule="report")
    assert taps.dtype == np.int32 and taps.shape == (k, k)
    assert int(taps.astype(np.int64).sum()) == 2**Q and taps.min() >= 0
    assert (taps == taps.T).all() and (taps == taps[::-1]).all() and (taps == taps[:, ::-1]).all()
    err = np.abs(taps - oracle.report_gaussian_float(sigma, k) * 2**Q)
    assert err[k // 2, k // 2] < 8
    err[k // 2, k // 2] = 0
    assert err.max() < 1


@pytest.mark.parametrize("sigma, k", [(1, 5), (2, 11), (3, 17), (5, 29), (0.3, 1), (0.5, 3), (1.2, 7), (1.4, 9)])
def test_report_rule_size_is_6_sigma_minus_1_made_odd(sigma, k):
    """'for a sigma of 3 the kernel must be 17 elements long'; non-integer sigma: the next odd size."""
    assert filters.gaussian_kernel(sigma, rule="report").shape == (k, k)


def test_report_rule_largest_remainder_gives_units_to_the_largest_fractions():
    sigma, k = 1.0, 5
    exact = oracle.report_gaussian_float(sigma, k) * 2**Q
    taps = filters.gaussian_kernel(sigma, ksize=k, rule="report").astype(np.int64)
    up = taps - np.floor(exact) >= 1  # taps rounded up
    off_centre = np.ones((k, k), bool)
    off_centre[k // 2, k // 2] = False
    frac = exact - np.floor(exact)
    # Every off-centre tap rounded up has a fraction at least as large as every one rounded down.
    if (up & off_centre).any() and (~up & off_centre).any():
        assert frac[up & off_centre].min() >= frac[~up & off_centre].max()


# ---------------------------------------------------------------- gaussian_blur(rule="report")
@given(data=images(), k=st.sampled_from([0, 1, 3, 5, 7]), sigma=st.floats(0.1, 3), border=borders,
       value=st.integers(0, 255))
def test_gaussian_blur_report_same_bits_on_every_backend(backend, data, k, sigma, border, value):
    img, axis = data
    sigma = min(sigma, 1.3) if k == 0 else sigma  # derived sizes up to 7 keep the jit compiles fast
    matches_numpy(backend, filters.gaussian_blur, img, ksize=k, sigma=sigma, border=border, border_value=value,
                  channel_axis=axis, rule="report")


@given(data=images(max_h=7, max_w=8, batch=False), k=st.sampled_from([1, 3, 5]), sigma=st.floats(0.2, 4),
       border=borders, value=st.integers(0, 255))
def test_gaussian_blur_report_equals_naive_loops_and_the_real_valued_filter(data, k, sigma, border, value):
    img, axis = data
    ours = portcv.to_numpy(filters.gaussian_blur(img, ksize=k, sigma=sigma, border=border, border_value=value,
                                                 channel_axis=axis, rule="report"))
    taps = filters.gaussian_kernel(sigma, ksize=k, rule="report").tolist()
    ref = oracle.convolve2d(img, taps, Q, border, value, has_channels=axis == -1)
    np.testing.assert_array_equal(ours, ref)
    # Against the report's float kernel (no quantization): within 1/2 + the taps' total error.
    real = oracle.filter_float(img, oracle.report_gaussian_float(sigma, k), border, value, has_channels=axis == -1)
    assert np.abs(ours - real).max() <= 0.5 + 255 * (k * k + 8) / 2**Q


def test_gaussian_blur_report_is_convolve2d_with_the_report_kernel():
    img = portcv.data.synthetic_rgb(23, 29, seed=4)
    kernel = filters.gaussian_kernel(2.0, rule="report")
    assert_same_bits(filters.convolve2d(img, kernel, Q, border="constant"),
                     filters.gaussian_blur(img, sigma=2.0, border="constant", rule="report"))
    flat = np.full((9, 9), 77, np.uint8)  # taps sum to exactly 2**22: flat regions stay flat
    np.testing.assert_array_equal(filters.gaussian_blur(flat, sigma=3.0, rule="report"), 77)


def test_gaussian_blur_opencv_rule_is_unchanged():
    img = portcv.data.synthetic_rgb(17, 19, seed=1)
    assert_same_bits(cv2.GaussianBlur(img, (5, 5), 1.3), filters.gaussian_blur(img, ksize=5, sigma=1.3, rule="opencv"))


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.gaussian_kernel(0), ValueError, "sigma must be > 0"),
        (lambda: filters.gaussian_kernel(float("nan")), ValueError, "sigma must be finite"),
        (lambda: filters.gaussian_kernel("1"), TypeError, "sigma"),
        (lambda: filters.gaussian_kernel(1.0, ksize=4), ValueError, "ksize must be odd"),
        (lambda: filters.gaussian_kernel(1.0, ksize=33, rule="report"), ValueError, "ksize"),
        (lambda: filters.gaussian_kernel(1.0, ksize=0), ValueError, "ksize"),
        (lambda: filters.gaussian_kernel(1.0, ksize=3.0), TypeError, "ksize"),
        (lambda: filters.gaussian_kernel(1.0, rule="scipy"), ValueError, "rule"),
        (lambda: filters.gaussian_kernel(5.4, rule="report"), ValueError, "sigma: the derived kernel size 33"),
        (lambda: filters.gaussian_kernel(5.2), ValueError, "sigma: the derived kernel size 33"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, rule="report", sigma_y=2), ValueError, "sigma_y"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, rule="report", ksize=(3, 5)), ValueError, "ksize"),
        (lambda: filters.gaussian_blur(GRAY, sigma=6, rule="report"), ValueError, "sigma: the derived"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, rule="Report"), ValueError, "rule"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, rule="report", ksize=4), ValueError, "ksize must be odd"),
        (lambda: filters.gaussian_blur(GRAY, sigma=1, rule="report", border="wrap"), ValueError, "border"),
        (lambda: filters.gaussian_blur(GRAY.astype(bool), sigma=1, rule="report"), TypeError, "image must have dtype"),
    ],
)
def test_gaussian_kernel_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
