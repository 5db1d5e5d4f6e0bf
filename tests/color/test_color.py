from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import color

from ..helpers import assert_same_bits, images, matches_numpy
from . import oracle_color as oracle

cv2 = pytest.importorskip("cv2")

rgb_images = images(channels=(3,))


@given(data=rgb_images, method=st.sampled_from(["weighted", "average"]))
def test_rgb_to_gray_same_bits_on_every_backend(backend, data, method):
    img, _ = data
    out = matches_numpy(backend, color.rgb_to_gray, img, method=method)
    assert out.shape == img.shape[:-1] and out.dtype == np.uint8


def test_rgb_to_gray_strided_and_large_inputs(backend):
    big = portcv.data.synthetic_rgb(271, 389, seed=3)
    matches_numpy(backend, color.rgb_to_gray, big)
    matches_numpy(backend, color.rgb_to_gray, big[::2, 1::3])  # non-contiguous view
    matches_numpy(backend, color.rgb_to_gray, big[:, :, :][None, 5:9, 7:24])  # odd pixel count


def test_rgb_to_gray_average_equals_report_loop():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (9, 13, 3), dtype=np.uint8)
    np.testing.assert_array_equal(color.rgb_to_gray(img, method="average"), oracle.rgb_to_gray_average(img))


def test_rgb_to_gray_average_is_exact_for_every_channel_sum(backend):
    """The multiply-and-shift division by 3 against the report's loop, for every sum 0..765."""
    total = np.arange(766)
    img = np.stack([np.minimum(total, 255), np.clip(total - 255, 0, 255), np.clip(total - 510, 0, 255)], axis=-1)
    img = img.astype(np.uint8)[None]  # one row of 766 pixels whose channels sum to 0..765
    assert (img.astype(np.int64).sum(axis=-1) == total).all()
    out = matches_numpy(backend, color.rgb_to_gray, img, method="average")
    np.testing.assert_array_equal(out, oracle.rgb_to_gray_average(img))


def test_rgb_to_gray_weighted_is_the_report_formula_in_fixed_point():
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    exact = oracle.rgb_to_gray_weighted_float(img)
    ours = color.rgb_to_gray(img).astype(np.int64)
    # 15-bit weights approximate 0.299/0.587/0.114 to within 2^-16 each: off by at most one level.
    assert np.abs(ours - exact).max() <= 1
    assert (ours == exact).mean() > 0.99


@given(data=rgb_images)
def test_rgb_to_gray_equals_opencv(data):
    img, _ = data
    flat = img.reshape((-1,) + img.shape[-2:])  # cv2 takes one (H, W, 3) image: stack batches as rows
    ref = cv2.cvtColor(np.ascontiguousarray(flat), cv2.COLOR_RGB2GRAY).reshape(img.shape[:-1])
    assert_same_bits(ref, color.rgb_to_gray(img))


def test_rgb_to_gray_takes_arrays_of_other_backends(backend):
    img = portcv.data.synthetic_rgb(17, 23)
    with portcv.using(backend):
        moved = portcv.asarray(img)
    assert_same_bits(color.rgb_to_gray(img), color.rgb_to_gray(moved))  # numpy active, input moved back


@pytest.mark.parametrize(
    "bad, error, words",
    [
        (np.zeros((4, 4, 3), np.float64), TypeError, "dtype uint8"),
        (np.zeros((4, 4, 3), np.int16), TypeError, "dtype uint8"),
        (np.zeros((4, 4), np.uint8), ValueError, "at least 3 dimensions"),
        (np.zeros((4, 4, 4), np.uint8), ValueError, "3 channels"),
        (np.zeros((0, 4, 3), np.uint8), ValueError, "empty"),
        (np.zeros(3, np.uint8), ValueError, "at least 3 dimensions"),
        ("not an image", TypeError, "must be an array"),
    ],
)
def test_rgb_to_gray_rejects_bad_images(bad, error, words):
    with pytest.raises(error, match=words):
        color.rgb_to_gray(bad)


def test_rgb_to_gray_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        color.rgb_to_gray(np.zeros((2, 2, 3), np.uint8), method="luma")
