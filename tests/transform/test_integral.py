from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import transform
from portcv.transform._integral import MAX_INT32_PIXELS

from ..helpers import assert_same_bits, images, on_backend
from . import oracle_integral as oracle

cv2 = pytest.importorskip("cv2")


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def matches_numpy_all(backend, fn, *args, **kwargs):
    """Like helpers.matches_numpy, for functions that may return a tuple of arrays."""
    expected = as_tuple(on_backend("numpy", fn, *args, **kwargs))
    actual = as_tuple(on_backend(backend, fn, *args, **kwargs))
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        with portcv.using(backend):
            assert portcv.backend().owns(a)
        assert_same_bits(e, a)
    return expected


def opencv_per_image(fn, img, channel_axis):
    """cv2 on every 2-D image of a batch; returns a tuple of stacked outputs."""
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    results = [as_tuple(fn(np.ascontiguousarray(p))) for p in flat]
    lead = img.shape[: img.ndim - len(per_image)]
    out = []
    for k in range(len(results[0])):
        stacked = np.stack([r[k].reshape(r[k].shape[:2] + per_image[2:]) for r in results])
        out.append(stacked.reshape(lead + stacked.shape[1:]))
    return tuple(out)


@given(data=images(), squared=st.booleans(), dtype=st.sampled_from(["int32", "int64"]))
def test_integral_same_bits_on_every_backend(backend, data, squared, dtype):
    img, axis = data
    matches_numpy_all(backend, transform.integral, img, squared=squared, dtype=dtype, channel_axis=axis)


@given(data=images(max_h=7, max_w=9, batch=False), squared=st.booleans())
def test_integral_equals_naive_sums(data, squared):
    img, axis = data
    out = as_tuple(transform.integral(img, squared=squared, channel_axis=axis))
    np.testing.assert_array_equal(out[0], oracle.integral(img, axis == -1))
    if squared:
        np.testing.assert_array_equal(out[1], oracle.integral(img, axis == -1, power=2))


@given(data=images(channels=(None, 1, 3, 4)))
def test_integral_equals_opencv(data):
    img, axis = data
    (ref,) = opencv_per_image(cv2.integral, img, axis)
    out = portcv.to_numpy(transform.integral(img, channel_axis=axis))
    assert ref.dtype == np.int32
    assert_same_bits(ref, out)


@given(data=images(channels=(None, 1, 3)))
def test_integral2_equals_opencv(data):
    img, axis = data
    ref_sum, ref_sq = opencv_per_image(cv2.integral2, img, axis)
    sums, squares = transform.integral(img, squared=True, channel_axis=axis)
    assert_same_bits(ref_sum, sums)
    assert ref_sq.dtype == np.float64 and np.all(ref_sq < 2**53)  # exact integers in float64
    assert_same_bits(ref_sq.astype(np.int64), squares)


def test_integral_rectangle_sums():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (23, 31), dtype=np.uint8)
    s = portcv.to_numpy(transform.integral(img))
    for y0, y1, x0, x1 in [(0, 23, 0, 31), (3, 9, 4, 30), (5, 6, 7, 8)]:
        assert s[y1, x1] - s[y0, x1] - s[y1, x0] + s[y0, x0] == img[y0:y1, x0:x1].astype(int).sum()


def test_integral_int32_bound_and_int64_option():
    side = int(np.ceil(np.sqrt(MAX_INT32_PIXELS + 1)))
    big = np.full((side, side), 255, np.uint8)  # 255 * side^2 > 2^31 - 1: int32 would wrap
    with pytest.raises(ValueError, match="dtype='int64'"):
        transform.integral(big)
    out = transform.integral(big, dtype="int64")
    assert out.dtype == np.int64 and int(out[-1, -1]) == 255 * side * side > 2**31
    # The largest square that still fits int32 is accepted, as is 4K.
    ok = int(np.floor(np.sqrt(MAX_INT32_PIXELS)))
    assert transform.integral(np.full((ok, ok), 255, np.uint8))[-1, -1] == 255 * ok * ok
    transform.integral(np.zeros((2160, 3840), np.uint8))


GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: transform.integral(GRAY.astype(np.float32)), TypeError, "dtype uint8"),
        (lambda: transform.integral(GRAY.astype(np.uint16)), TypeError, "dtype uint8"),
        (lambda: transform.integral(GRAY[0]), ValueError, "at least 2 dimensions"),
        (lambda: transform.integral(GRAY[:, :0]), ValueError, "empty"),
        (lambda: transform.integral(GRAY, dtype="float64"), ValueError, "dtype"),
        (lambda: transform.integral(GRAY, dtype="int16"), ValueError, "dtype"),
        (lambda: transform.integral(GRAY, squared=1), TypeError, "squared"),
        (lambda: transform.integral(GRAY, squared="yes"), TypeError, "squared must be a bool"),
        (lambda: transform.integral(GRAY, channel_axis=0), ValueError, "channel_axis"),
        (lambda: transform.integral(GRAY, channel_axis=-1), ValueError, "channel_axis"),
        (lambda: transform.integral("image"), TypeError, "image must be an array"),
    ],
)
def test_integral_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_integral_takes_numpy_bools():
    """The bool flags of every domain go through one check (_validate.boolean): NumPy's bools are bools."""
    img = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for flag in (True, False):
        assert_same_bits(transform.integral(img, squared=flag), transform.integral(img, squared=np.bool_(flag)))
