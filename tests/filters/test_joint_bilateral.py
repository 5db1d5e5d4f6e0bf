"""portcv.filters.joint_bilateral: every backend equals NumPy, NumPy equals the naive loop, and
the result agrees with OpenCV contrib's ``cv2.ximgproc.jointBilateralFilter`` on a real image."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv.filters import joint_bilateral
from portcv._bilateral import accumulator_is_wide, range_table, spatial_window

from ..helpers import assert_same_bits, matches_numpy, on_backend, runs_its_overrides
from . import oracle_bilateral as oracle

windows = st.sampled_from(["disk", "square"])
norms = st.sampled_from(["l1", "l2"])
bilateral_borders = st.sampled_from(["reflect101", "replicate", "constant"])
sigmas = st.sampled_from([0.5, 3.0, 12.5, 40.0])
# JAX compiles every (shape, window) pair: its examples come from these few.
JAX_CASES = [((9, 13), (9, 13), 3, "disk", "l1"), ((2, 7, 6, 3), (2, 7, 6), 5, "square", "l1"),
             ((8, 11, 3), (8, 11, 3), 3, "disk", "l2")]


@st.composite
def guided(draw, *, max_h=24, max_w=27):
    """``(joint, src)``: a grey or RGB guide and a 1- or 3-channel source of the same plane, maybe batched."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lead = (draw(st.integers(1, 2)),) if draw(st.booleans()) else ()
    # a batch of grey planes needs W > 4, or channel_axis="auto" reads its last axis as channels
    plane = lead + (draw(st.integers(1, max_h)), draw(st.integers(5 if lead else 1, max_w)))
    gc = draw(st.sampled_from([(), (3,)]))
    vc = draw(st.sampled_from([(), (3,)]))
    high = draw(st.sampled_from([256, 256, 8]))
    joint = rng.integers(0, high, plane + gc, dtype=np.uint8)
    return joint, rng.integers(0, 256, plane + vc, dtype=np.uint8), len(lead)


@functools.lru_cache(maxsize=1)
def motorcycle():
    """The Middlebury 2014 motorcycle pair shipped with scikit-image (500 x 741, downscaled x4):
    left image, and its disparity x4 as a complete uint8 map (holes take the nearest known value)."""
    data = pytest.importorskip("skimage.data")
    ndimage = pytest.importorskip("scipy.ndimage")
    left, _, disp = data.stereo_motorcycle()
    known = np.isfinite(disp)
    nearest = ndimage.distance_transform_edt(~known, return_distances=False, return_indices=True)
    depth = np.clip(np.rint(disp[tuple(nearest)] * 4), 0, 255).astype(np.uint8)
    return left, depth


# --------------------------------------------------------------------------------------------
# every backend equals NumPy
# --------------------------------------------------------------------------------------------
@given(data=st.data(), window=windows, norm=norms, sc=sigmas, ss=sigmas)
def test_joint_bilateral_same_bits_on_every_backend(backend, data, window, norm, sc, ss):
    if backend == "jax":
        gshape, vshape, d, window, norm = data.draw(st.sampled_from(JAX_CASES))
        rng = np.random.default_rng(data.draw(st.integers(0, 99)))
        joint, src = rng.integers(0, 256, gshape, dtype=np.uint8), rng.integers(0, 256, vshape, dtype=np.uint8)
        border, ss = "reflect101", 2.0  # the window's taps are static: one compilation per case and window
    else:
        joint, src, _ = data.draw(guided())
        d = data.draw(st.integers(-1, 9))
        if d <= 0 and round(1.5 * ss) > 15:  # the radius would come from sigma_space: too large
            d = 3
        border = data.draw(bilateral_borders)
    with runs_its_overrides("joint_bilateral"):
        out = matches_numpy(backend, joint_bilateral, joint, src, d, sc, ss, border=border, window=window,
                            color_norm=norm)
    assert out.shape == src.shape and out.dtype == np.uint8


def test_wide_accumulator_same_bits(backend):
    """A 17 x 17 square has 289 offsets: the int64 accumulator (int32 up to 256 offsets)."""
    assert accumulator_is_wide(961, 255) and accumulator_is_wide(257, 255) and not accumulator_is_wide(256, 255)
    rng = np.random.default_rng(5)
    joint, src = rng.integers(0, 256, (20, 23, 3), dtype=np.uint8), rng.integers(0, 256, (20, 23), dtype=np.uint8)
    matches_numpy(backend, joint_bilateral, joint, src, 17, 30.0, 9.0, window="square")


@pytest.mark.parametrize("d, window", [(16, "disk"), (31, "square")])
def test_every_window_size_same_bits_on_every_backend(backend, d, window):
    """An even diameter (radius d // 2, as OpenCV's) and the largest window, 31 x 31 (961 offsets,
    int64 sums). JAX's program loops over a table of the offsets: with the offsets unrolled into
    it, a 31 x 31 window did not compile in minutes on a CPU."""
    rng = np.random.default_rng(d)
    joint, src = rng.integers(0, 256, (18, 21, 3), dtype=np.uint8), rng.integers(0, 256, (18, 21), dtype=np.uint8)
    with runs_its_overrides("joint_bilateral"):
        out = matches_numpy(backend, joint_bilateral, joint, src, d, 25.0, 6.0, window=window)
    if d == 16 and backend == "numpy":  # a radius of 8: the naive loop's 17 x 17 disk (once)
        assert_same_bits(oracle.bilateral_pixel_loop(joint, src, 8, 25.0, 6.0), out)


def test_more_rows_than_one_grid_dimension_same_bits_on_every_backend(backend):
    """A batch of 70 frames of 1000 x 8 pixels: 70,000 rows (the CUDA kernel's rows stride past
    65,535 grid rows)."""
    rng = np.random.default_rng(9)
    joint, src = rng.integers(0, 256, (70, 1000, 8, 3), dtype=np.uint8), rng.integers(0, 256, (70, 1000, 8), dtype=np.uint8)
    with runs_its_overrides("joint_bilateral"):
        matches_numpy(backend, joint_bilateral, joint, src, 3, 20.0, 2.0)


@given(data=guided(max_h=30, max_w=20), d=st.integers(1, 9), band=st.sampled_from([1, 7, 40]))
def test_numpy_bands_equal_the_portable_code(data, d, band):
    """NumPy's override works by bands of rows (each with its halo): the portable code's bits."""
    from portcv import _bilateral

    joint, src, _ = data
    old, _bilateral.NUMPY_BAND = _bilateral.NUMPY_BAND, band
    try:
        portable = on_backend("numpy:readonly", joint_bilateral, joint, src, d, 15.0, 2.5)
        assert_same_bits(portable, on_backend("numpy", joint_bilateral, joint, src, d, 15.0, 2.5))
    finally:
        _bilateral.NUMPY_BAND = old


# --------------------------------------------------------------------------------------------
# naive oracle
# --------------------------------------------------------------------------------------------
@given(data=guided(max_h=9, max_w=10), d=st.integers(1, 7), window=windows, norm=norms, sc=sigmas, ss=sigmas,
       border=bilateral_borders)
def test_joint_bilateral_equals_the_pixel_loop(data, d, window, norm, sc, ss, border):
    joint, src, lead = data
    out = portcv.to_numpy(joint_bilateral(joint, src, d, sc, ss, border=border, window=window, color_norm=norm))
    frames = [(joint, src)] if lead == 0 else list(zip(joint, src))
    outs = [oracle.bilateral_pixel_loop(j, s, max(d // 2, 1), sc, ss, window=window, norm=norm, border=border)
            for j, s in frames]
    expected = outs[0] if lead == 0 else np.stack(outs)
    np.testing.assert_array_equal(out, expected)


def test_tables_are_the_documented_formulas():
    w = spatial_window(2, 1.5, "disk")
    assert (0, 0, 32768) in w.taps and all(dy * dy + dx * dx <= 4 for dy, dx, _ in w.taps)
    assert len(spatial_window(2, 1.5, "square").taps) == 25
    t = range_table(10.0, 3, "l1")
    assert t.shape == (766,) and t[0] == 32768 and t[10] == oracle.q15(np.exp(-0.5))
    assert range_table(10.0, 1, "l2")[100] == t[10]  # l2 is indexed by the squared distance


# --------------------------------------------------------------------------------------------
# OpenCV contrib peer on the real motorcycle pair
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("guide_kind", ["rgb", "grey"])
@pytest.mark.parametrize("d, sc, ss", [(11, 25.0, 5.0), (11, 10.0, 3.0), (7, 50.0, 10.0)])
def test_agrees_with_opencv_contrib_on_the_motorcycle_pair(guide_kind, d, sc, ss):
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "ximgproc"):
        pytest.skip("needs opencv-contrib-python-headless (cv2.ximgproc)")
    left, depth = motorcycle()
    # OpenCV's 8-bit range table has 255 C entries: a distance of 255 C reads past it; clip to 254.
    guide = np.minimum(left, 254) if guide_kind == "rgb" else np.minimum(cv2.cvtColor(left, cv2.COLOR_RGB2GRAY), 254)
    ours = portcv.to_numpy(joint_bilateral(guide, depth, d, sc, ss))
    ref = cv2.ximgproc.jointBilateralFilter(guide, depth, d, sc, ss, borderType=cv2.BORDER_REFLECT_101)
    diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
    equal = float((diff == 0).mean())
    print(f"joint_bilateral vs cv2.ximgproc ({guide_kind}, d={d}, sc={sc}, ss={ss}): {100 * equal:.4f} % equal, "
          f"max |diff| {diff.max()}")
    assert diff.max() <= 1 and equal >= 0.999


def test_agrees_with_opencv_contrib_on_rgb_source_and_random_images():
    """An RGB source steered by a real guide agrees as well as depth does; uniform noise is the
    worst case: most neighbours' weights are tiny and their Q15 rounding moves quotients near a
    .5 (measured 99.81 to 99.99 % equal over sigma_color 10 to 120, never more than 1 apart)."""
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "ximgproc"):
        pytest.skip("needs opencv-contrib-python-headless (cv2.ximgproc)")
    left, _ = motorcycle()
    guide = np.minimum(left[:200, :300], 254)
    src = np.ascontiguousarray(left[:200, 300:600][:, ::-1])
    rng = np.random.default_rng(0)
    noise = functools.partial(rng.integers, 0, 255, dtype=np.uint8)
    cases = [(guide, src, 0.999), (noise((120, 130, 3)), noise((120, 130)), 0.995),
             (noise((120, 130)), noise((120, 130, 3)), 0.995)]
    for g, s, threshold in cases:
        ours = portcv.to_numpy(joint_bilateral(g, s, 9, 30.0, 4.0))
        ref = cv2.ximgproc.jointBilateralFilter(g, s, 9, 30.0, 4.0, borderType=cv2.BORDER_REFLECT_101)
        diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
        print(f"joint_bilateral vs cv2.ximgproc (guide {g.shape}, src {s.shape}): "
              f"{100 * (diff == 0).mean():.4f} % equal")
        assert diff.max() <= 1 and (diff == 0).mean() >= threshold


# --------------------------------------------------------------------------------------------
# bad input, inputs left alone
# --------------------------------------------------------------------------------------------
def test_bad_input_raises_naming_the_argument():
    g = np.zeros((6, 7, 3), np.uint8)
    s = np.zeros((6, 7), np.uint8)
    with pytest.raises(TypeError, match="joint"):
        joint_bilateral(g.astype(np.float32), s, 3, 10.0, 2.0)
    with pytest.raises(TypeError, match="src"):
        joint_bilateral(g, s.astype(np.int16), 3, 10.0, 2.0)
    with pytest.raises(ValueError, match="same"):
        joint_bilateral(g, s[:5], 3, 10.0, 2.0)
    with pytest.raises(ValueError, match="joint"):
        joint_bilateral(np.zeros((6, 7, 2), np.uint8), s, 3, 10.0, 2.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="sigma_color"):
            joint_bilateral(g, s, 3, bad, 2.0)
        with pytest.raises(ValueError, match="sigma_space"):
            joint_bilateral(g, s, 3, 10.0, bad)
    with pytest.raises(TypeError, match="d"):
        joint_bilateral(g, s, 3.5, 10.0, 2.0)
    with pytest.raises(ValueError, match="d"):
        joint_bilateral(g, s, 41, 10.0, 2.0)
    with pytest.raises(ValueError, match="sigma_space"):
        joint_bilateral(g, s, 0, 10.0, 20.0)  # radius round(1.5 * 20) = 30
    with pytest.raises(ValueError, match="window"):
        joint_bilateral(g, s, 3, 10.0, 2.0, window="diamond")
    with pytest.raises(ValueError, match="color_norm"):
        joint_bilateral(g, s, 3, 10.0, 2.0, color_norm="linf")
    with pytest.raises(ValueError, match="border"):
        joint_bilateral(g, s, 3, 10.0, 2.0, border="wrap")


@pytest.mark.parametrize("args, kwargs, error, name", [
    ((32, 10.0, 2.0), {}, ValueError, "d"),  # radius 16: the largest window is 31 x 31
    ((2**70, 10.0, 2.0), {}, ValueError, "d"),
    ((True, 10.0, 2.0), {}, TypeError, "d"),
    ((np.float64(3), 10.0, 2.0), {}, TypeError, "d"),
    ((3, 1e-300, 2.0), {}, ValueError, "sigma_color"),  # 2 sigma**2 underflowed: a table of NaN cast to int32
    ((3, 10.0, 1e-200), {}, ValueError, "sigma_space"),  # ZeroDivisionError
    ((3, True, 2.0), {}, TypeError, "sigma_color"),
    ((3, 10.0, 1 + 2j), {}, TypeError, "sigma_space"),
    ((0, 10.0, 1.7e308), {}, ValueError, "sigma_space"),  # round(inf): OverflowError
    ((0, 10.0, 10.34), {}, ValueError, "sigma_space"),  # radius round(15.51) = 16
    ((3, 10.0, 2.0), dict(channel_axis=0), ValueError, "channel_axis"),
    ((3, 10.0, 2.0), dict(border=None), ValueError, "border"),
])
def test_bad_parameters_raise_naming_them(args, kwargs, error, name):
    g, s = np.zeros((6, 7, 3), np.uint8), np.zeros((6, 7), np.uint8)
    with pytest.raises(error, match=name):
        joint_bilateral(g, s, *args, **kwargs)


@pytest.mark.parametrize("joint, src, error, name", [
    (np.zeros((6, 7, 3), np.uint8), [[1, 2], [3]], ValueError, "src"),  # NumPy's ragged-list message named nothing
    ([[1, 2], [3]], np.zeros((6, 7), np.uint8), ValueError, "joint"),
    (np.zeros((6, 7, 3), np.uint8), np.zeros((6, 7), np.uint16), TypeError, "src"),
    (np.zeros((6, 7, 3), np.uint8), np.zeros((6, 7, 5), np.uint8), ValueError, "same"),
    (np.zeros((2, 6, 7, 3), np.uint8), np.zeros((6, 7), np.uint8), ValueError, "same"),
    (None, np.zeros((6, 7), np.uint8), TypeError, "joint"),
    (np.zeros((6, 7, 3), np.uint8), np.zeros((0, 7), np.uint8), ValueError, "src"),
])
def test_bad_images_raise_naming_them(joint, src, error, name):
    with pytest.raises(error, match=name):
        joint_bilateral(joint, src, 3, 10.0, 2.0)


def test_strided_read_only_and_fortran_inputs_give_the_contiguous_result(backend):
    rng = np.random.default_rng(16)
    g, s = rng.integers(0, 256, (18, 21, 3), dtype=np.uint8), rng.integers(0, 256, (18, 21), dtype=np.uint8)
    want = on_backend("numpy", joint_bilateral, g, s, 16, 25.0, 6.0)  # compiled for JAX by the test above
    wide_g, wide_s = np.zeros((36, 42, 3), np.uint8), np.zeros((18, 42), np.uint8)
    wide_g[::2, ::2], wide_s[:, ::2] = g, s
    frozen_g, frozen_s = g.copy(), s.copy()
    frozen_g.flags.writeable = frozen_s.flags.writeable = False
    for joint, src in [(wide_g[::2, ::2], wide_s[:, ::2]), (frozen_g, frozen_s), (np.asfortranarray(g), s[::-1][::-1]),
                       (np.ascontiguousarray(g[:, :, ::-1])[:, :, ::-1], np.asfortranarray(s))]:
        assert_same_bits(want, on_backend(backend, joint_bilateral, joint, src, 16, 25.0, 6.0))


def test_inputs_are_not_modified_or_aliased():
    rng = np.random.default_rng(1)
    g, s = rng.integers(0, 256, (10, 12, 3), dtype=np.uint8), rng.integers(0, 256, (10, 12), dtype=np.uint8)
    g0, s0 = g.copy(), s.copy()
    out = on_backend("numpy", joint_bilateral, g, s, 5, 20.0, 2.0)
    assert_same_bits(g0, g)
    assert_same_bits(s0, s)
    assert not np.shares_memory(out, g) and not np.shares_memory(out, s)
