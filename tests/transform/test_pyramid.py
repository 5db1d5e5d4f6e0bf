from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import _resize_plans, transform

from ..helpers import assert_same_bits, images
from . import oracle_pyramid as oracle

cv2 = pytest.importorskip("cv2")

scales = st.sampled_from([1.1, 1.15, 1.25, 1.5, 2.0]) | st.floats(1.05, 3.0)
windows = st.tuples(st.integers(1, 30), st.integers(1, 30))
# Cross-backend tests compile one resize per level under jax.jit: keep the pyramids short.
few_scales = st.sampled_from([1.25, 1.5, 2.0]) | st.floats(1.2, 3.0)
few_windows = st.tuples(st.integers(8, 30), st.integers(8, 30))


def on(backend, fn, *args, **kwargs):
    with portcv.using(backend):
        return fn(*args, **kwargs)


@given(data=images(max_h=60, max_w=80), scale=few_scales, window=few_windows,
       interpolation=st.sampled_from(transform.INTERPOLATIONS))
def test_pyramid_same_bits_on_every_backend(backend, data, scale, window, interpolation):
    img, axis = data
    kwargs = dict(scale=scale, min_size=window, interpolation=interpolation, return_scales=True, channel_axis=axis)
    ref_levels, ref_scales = on("numpy", transform.pyramid, img, **kwargs)
    levels, got_scales = on(backend, transform.pyramid, img, **kwargs)
    assert got_scales == ref_scales and len(levels) == len(ref_levels)
    for r, g in zip(ref_levels, levels):
        assert portcv.backends.get(backend).owns(g)
        assert_same_bits(r, g)


@given(h=st.integers(1, 3000), w=st.integers(1, 3000), scale=scales, window=windows)
def test_pyramid_scales_follow_opencv(h, w, scale, window):
    ours = _resize_plans.pyramid_plan(w, h, scale, window)
    assert ours == oracle.scales_and_sizes(w, h, scale, window)
    for f, (lw, lh) in ours:
        assert lw >= 1 and lh >= 1
        assert f == float(np.float32(f))


@given(data=images(max_h=50, max_w=70, batch=False, channels=(None, 3)), scale=scales, window=windows)
def test_pyramid_levels_equal_opencv_resize(data, scale, window):
    img, axis = data
    levels, factors = transform.pyramid(img, scale=scale, min_size=window, return_scales=True, channel_axis=axis)
    plan = oracle.scales_and_sizes(img.shape[1], img.shape[0], scale, window)
    assert factors == [f for f, _ in plan]
    for level, (_, size) in zip(levels, plan):
        ref = cv2.resize(img, size, interpolation=cv2.INTER_LINEAR_EXACT)
        assert_same_bits(ref.reshape(ref.shape[:2] + img.shape[2:]), level)


def test_pyramid_of_a_vga_frame():
    img = portcv.data.synthetic_rgb(480, 640, seed=1)[..., 0].copy()
    levels, factors = transform.pyramid(img, return_scales=True)
    # OpenCV: factors 1.1**i while round(24 * factor) <= 480 (i <= 31); the last is 33x25 (640 / 19.19).
    assert len(levels) == 32 and levels[0].shape == (480, 640) and levels[-1].shape == (25, 33)
    assert factors[:3] == [1.0, float(np.float32(1.1)), float(np.float32(1.1 * 1.1))]
    assert transform.pyramid(img[:20], min_size=(24, 24)) == []


@given(data=images(max_h=60, max_w=80), scale=few_scales, gap=st.integers(0, 3), fill=st.integers(0, 255))
def test_pack_pyramid_same_bits_on_every_backend(backend, data, scale, gap, fill):
    img, axis = data
    levels = on(backend, transform.pyramid, img, scale=scale, min_size=(8, 8), channel_axis=axis)
    if not levels:
        return
    ref, ref_places = on("numpy", transform.pack_pyramid, levels, gap=gap, fill=fill, channel_axis=axis)
    got, places = on(backend, transform.pack_pyramid, levels, gap=gap, fill=fill, channel_axis=axis)
    assert places == ref_places
    assert_same_bits(ref, got)


@given(data=images(max_h=60, max_w=80, channels=(None, 3)), scale=scales, gap=st.integers(0, 3),
       extra=st.integers(0, 40))
def test_pack_pyramid_places_levels_like_opencv(data, scale, gap, extra):
    img, axis = data
    levels = transform.pyramid(img, scale=scale, min_size=(3, 3), channel_axis=axis)
    if not levels:
        return
    packed, places = transform.pack_pyramid(levels, gap=gap, fill=77, channel_axis=axis)
    sizes = [(w, h) for _, _, w, h in places]
    want, buf_w, buf_h = oracle.opencv_layout(sizes, gap=gap)
    assert places == want
    assert packed.shape[-3 if axis == -1 else -2 :][:2] == (buf_h, buf_w)
    covered = np.zeros(packed.shape, bool)
    for level, (x, y, w, h) in zip(levels, places):
        region = (Ellipsis, slice(y, y + h), slice(x, x + w)) + ((slice(None),) if axis == -1 else ())
        np.testing.assert_array_equal(packed[region], level)
        assert not covered[region].any()  # no overlap
        covered[region] = True
    assert np.all(packed[~covered] == 77)
    # A wider buffer keeps every level inside and apart.
    wide, wide_places = transform.pack_pyramid(levels, width=buf_w + extra, gap=gap, channel_axis=axis)
    for (x, y, w, h) in wide_places:
        assert x + w + gap <= buf_w + extra


LEVELS = transform.pyramid(np.zeros((40, 50), np.uint8), scale=1.5, min_size=(10, 10))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: transform.pyramid(np.zeros((40, 50), np.float32)), TypeError, "dtype uint8"),
        (lambda: transform.pyramid(np.zeros(40, np.uint8)), ValueError, "at least 2 dimensions"),
        (lambda: transform.pyramid(np.zeros((0, 50), np.uint8)), ValueError, "empty"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), scale=1.0), ValueError, "scale must be > 1"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), scale=0.5), ValueError, "scale must be > 1"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), scale=float("nan")), ValueError, "scale"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), scale=11), ValueError, "scale"),
        (lambda: transform.pyramid(np.zeros((400, 500), np.uint8), scale=1.0001, min_size=1), ValueError,
         "pyramid levels"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), min_size=(0, 24)), ValueError, "min_size"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), min_size=(24, 24, 1)), ValueError, "min_size"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), interpolation="area"), ValueError, "interpolation"),
        (lambda: transform.pyramid(np.zeros((40, 50), np.uint8), return_scales="yes"), TypeError, "return_scales"),
        (lambda: transform.pack_pyramid([]), ValueError, "levels must be a non-empty"),
        (lambda: transform.pack_pyramid(LEVELS[0]), TypeError, "levels must be a list"),
        (lambda: transform.pack_pyramid([LEVELS[0], LEVELS[1].astype(np.int16)]), TypeError, r"levels\[1\]"),
        (lambda: transform.pack_pyramid([LEVELS[0], LEVELS[1][None]]), ValueError, r"levels\[1\]"),
        (lambda: transform.pack_pyramid(LEVELS, width=40), ValueError, "width"),
        (lambda: transform.pack_pyramid(LEVELS, gap=-1), ValueError, "gap"),
        (lambda: transform.pack_pyramid(LEVELS, fill=256), ValueError, "fill"),
        (lambda: transform.pack_pyramid(LEVELS, fill=1.5), TypeError, "fill"),
    ],
)
def test_pyramid_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
