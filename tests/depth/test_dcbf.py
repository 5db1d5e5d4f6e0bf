"""portcv.depth.dcbf (Lin et al.'s depth-colour bilateral filter): every backend equals NumPy,
NumPy equals the naive loop, known pixels stay, and the real motorcycle map's holes are filled."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv.depth import dcbf
from portcv._bilateral import accumulator_is_wide

from ..filters import oracle_bilateral as oracle
from ..helpers import assert_same_bits, matches_numpy, on_backend, runs_its_overrides

windows = st.sampled_from(["square", "disk"])
updates = st.sampled_from(["holes", "all"])
norms = st.sampled_from(["l1", "l2"])
dcbf_borders = st.sampled_from(["reflect101", "replicate", "constant"])
sigmas = st.sampled_from([0.7, 3.0, 20.0])
# JAX compiles each (shape, window) pair: these few cases.
JAX_CASES = [((9, 13), (9, 13, 3), 5, np.uint8, "square", "l1"), ((2, 8, 7), (2, 8, 7), 3, np.uint16, "disk", "l1"),
             ((10, 6), (10, 6, 3), 7, np.uint8, "square", "l2")]


@st.composite
def depth_maps(draw, *, max_h=22, max_w=25, batch=True):
    """``(depth, color, unknown)``: uint8 or uint16 depth with holes (a few to most pixels),
    grey or RGB colour; maybe a batch."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lead = (draw(st.integers(1, 2)),) if batch and draw(st.booleans()) else ()
    plane = lead + (draw(st.integers(1, max_h)), draw(st.integers(5 if lead else 1, max_w)))
    dtype = draw(st.sampled_from([np.uint8, np.uint16]))
    top = int(np.iinfo(dtype).max)
    unknown = draw(st.sampled_from([0, 0, top]))
    depth = rng.integers(0, top + 1, plane, dtype=np.int64)
    holes = rng.random(plane) < draw(st.sampled_from([0.0, 0.1, 0.5, 0.95]))
    depth = np.where(holes, unknown, depth).astype(dtype)
    color = rng.integers(0, 256, plane + draw(st.sampled_from([(), (3,)])), dtype=np.uint8)
    return depth, color, unknown


@functools.lru_cache(maxsize=1)
def motorcycle_depth():
    """The motorcycle pair's left image and its disparity x4 as uint8 (holes: 0; 27,226 of them)."""
    data = pytest.importorskip("skimage.data")
    left, _, disp = data.stereo_motorcycle()
    known = np.isfinite(disp)
    d8 = np.where(known, np.clip(np.rint(np.where(known, disp, 0) * 4), 1, 255), 0).astype(np.uint8)
    return left, d8


@given(data=st.data(), window=windows, update=updates, norm=norms, ss=sigmas, sc=sigmas)
def test_dcbf_same_bits_on_every_backend(backend, data, window, update, norm, ss, sc):
    if backend == "jax":
        dshape, cshape, k, dtype, window, norm = data.draw(st.sampled_from(JAX_CASES))
        rng = np.random.default_rng(data.draw(st.integers(0, 99)))
        depth = np.where(rng.random(dshape) < 0.3, 0, rng.integers(1, 200, dshape)).astype(dtype)
        color, unknown, border = rng.integers(0, 256, cshape, dtype=np.uint8), 0, "reflect101"
        ss = 3.0  # the window's taps are static: one compilation per case, window and update
    else:
        depth, color, unknown = data.draw(depth_maps())
        k = data.draw(st.sampled_from([1, 3, 5, 7, 11]))
        border = data.draw(dcbf_borders)
    with runs_its_overrides("joint_bilateral"):
        out = matches_numpy(backend, dcbf, depth, color, k, ss, sc, window=window, update=update, unknown=unknown,
                            border=border, color_norm=norm)
    assert out.shape == depth.shape and out.dtype == depth.dtype


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_table5_window_on_a_frame_same_bits_on_every_backend(backend, dtype):
    """Table 5's 11 x 11 square with holes on a 200 x 300 RGB-guided frame (uint16: the int64 sums)."""
    rng = np.random.default_rng(12)
    depth = rng.integers(1, np.iinfo(dtype).max, (200, 300)).astype(dtype)
    depth[rng.random(depth.shape) < 0.2] = 0
    color = rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)
    with runs_its_overrides("joint_bilateral"):
        matches_numpy(backend, dcbf, depth, color, 11, 3.0, 20.0, window="square", unknown=0)


@pytest.mark.parametrize("ksize, dtype, update", [(1, np.uint8, "all"), (31, np.uint16, "holes")])
def test_every_window_size_same_bits_on_every_backend(backend, ksize, dtype, update):
    """From a single pixel to the largest window, 31 x 31 (961 offsets, int64 sums). JAX's program
    loops over a table of the offsets: with the offsets unrolled into it, a 31 x 31 window did not
    compile in minutes on a CPU."""
    rng = np.random.default_rng(ksize)
    depth = rng.integers(1, np.iinfo(dtype).max, (18, 21)).astype(dtype)
    depth[rng.random(depth.shape) < 0.4] = 0
    color = rng.integers(0, 256, (18, 21, 3), dtype=np.uint8)
    with runs_its_overrides("joint_bilateral"):
        matches_numpy(backend, dcbf, depth, color, ksize, 4.0, 20.0, update=update)


@given(data=depth_maps(max_h=8, max_w=9, batch=False), k=st.sampled_from([1, 3, 5, 7]), window=windows,
       update=updates, norm=norms, ss=sigmas, sc=sigmas, border=dcbf_borders)
def test_dcbf_equals_the_pixel_loop(data, k, window, update, norm, ss, sc, border):
    depth, color, unknown = data
    out = portcv.to_numpy(dcbf(depth, color, k, ss, sc, window=window, update=update, unknown=unknown,
                               border=border, color_norm=norm))
    expected = oracle.bilateral_pixel_loop(color, depth, k // 2, sc, ss, window=window, norm=norm, border=border,
                                           hole=unknown, keep_known=update == "holes")
    np.testing.assert_array_equal(out, expected)


@given(data=depth_maps(), k=st.sampled_from([3, 5, 11]), window=windows)
def test_update_holes_never_changes_a_known_pixel(data, k, window):
    depth, color, unknown = data
    out = portcv.to_numpy(dcbf(depth, color, k, 3.0, 20.0, window=window, unknown=unknown))
    known = depth != unknown
    np.testing.assert_array_equal(out[known], depth[known])
    # a filled hole takes a value between its window's known depths: never the hole marker unless W = 0
    assert out.dtype == depth.dtype


def test_a_hole_with_no_known_neighbour_stays_a_hole(backend):
    depth = np.full((15, 15), 100, np.uint8)
    depth[3:12, 3:12] = 0  # a 9 x 9 hole: its centre is 5 pixels from any known depth
    color = np.zeros((15, 15), np.uint8)
    out = matches_numpy(backend, dcbf, depth, color, 5, 2.0, 20.0)
    assert out[7, 7] == 0 and out[3, 3] == 100 and (out[5:10, 5:10] == 0).all()
    assert (out != 0).sum() == 15 * 15 - 25


def test_accumulator_bounds():
    """uint8 depth, 11 x 11: N <= 121 * 2**15 * 255 = 1.01e9 < 2**31 (int32); uint16 needs int64."""
    assert not accumulator_is_wide(121, 255) and not accumulator_is_wide(225, 255)
    assert accumulator_is_wide(121, 65535) and accumulator_is_wide(289, 255)


def test_real_motorcycle_map_holes_filled():
    left, d8 = motorcycle_depth()
    out = portcv.to_numpy(dcbf(d8, left, 11, 5.0, 25.0))
    before, after = int((d8 == 0).sum()), int((out == 0).sum())
    print(f"dcbf 11x11 square, sigma_space 5, sigma_color 25 on the motorcycle map: {before} -> {after} unknown")
    assert before == 27226 and after == 275
    np.testing.assert_array_equal(out[d8 != 0], d8[d8 != 0])


def test_uint16_depth_same_as_uint8_scaled():
    """The int64 path of uint16 depth gives the uint8 result times 256 where the sums scale exactly."""
    left, d8 = motorcycle_depth()
    crop, col = d8[200:260, 300:380], left[200:260, 300:380]
    out8 = portcv.to_numpy(dcbf(crop, col, 11, 5.0, 25.0, update="all")).astype(np.int64)
    out16 = portcv.to_numpy(dcbf(crop.astype(np.uint16) * 256, col, 11, 5.0, 25.0, update="all")).astype(np.int64)
    assert np.abs(out16 - out8 * 256).max() <= 128  # the same weights; only the last rounding differs


def test_bad_input_raises_naming_the_argument():
    d, c = np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8)
    with pytest.raises(ValueError, match="ksize"):
        dcbf(d, c, 4)
    with pytest.raises(ValueError, match="ksize"):
        dcbf(d, c, 33)
    for bad in (0.0, -2.0, float("nan")):
        with pytest.raises(ValueError, match="sigma_space"):
            dcbf(d, c, 3, bad)
        with pytest.raises(ValueError, match="sigma_color"):
            dcbf(d, c, 3, 2.0, bad)
    with pytest.raises(ValueError, match="same"):
        dcbf(d, c[:5], 3)
    with pytest.raises(ValueError, match="color"):
        dcbf(d, np.zeros((6, 7, 2), np.uint8), 3)
    with pytest.raises(TypeError, match="depth"):
        dcbf(d.astype(np.float32), c, 3)
    with pytest.raises(TypeError, match="color"):
        dcbf(d, c.astype(np.uint16), 3)
    with pytest.raises(ValueError, match="update"):
        dcbf(d, c, 3, update="some")
    with pytest.raises(ValueError, match="unknown"):
        dcbf(d, c, 3, unknown=256)
    with pytest.raises(ValueError, match="window"):
        dcbf(d, c, 3, window="cross")


@pytest.mark.parametrize("depth, color, kwargs, error, name", [
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(ksize=True), TypeError, "ksize"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(ksize=3.0), TypeError, "ksize"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(ksize=2**70), ValueError, "ksize"),
    # 2 sigma**2 underflowed: ZeroDivisionError, or a range table of NaN cast to int32 (all holes, no error)
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(sigma_space=1e-200), ValueError, "sigma_space"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(sigma_color=1e-300), ValueError, "sigma_color"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(sigma_color=float("inf")), ValueError,
     "sigma_color"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(unknown=True), TypeError, "unknown"),
    (np.zeros((6, 7), np.uint16), np.zeros((6, 7, 3), np.uint8), dict(unknown=-1), ValueError, "unknown"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(border="wrap"), ValueError, "border"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(color_norm="l3"), ValueError, "color_norm"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), dict(channel_axis=2), ValueError, "channel_axis"),
    ([[1, 2], [3]], np.zeros((6, 7, 3), np.uint8), {}, ValueError, "depth"),  # NumPy's ragged-list message
    # a colour depth map: the library's colour rule (the message was "the same (..., H, W) shape, got
    # (6, 7, 3) and (6, 7, 3)")
    (np.zeros((6, 7, 3), np.uint8), np.zeros((6, 7, 3), np.uint8), {}, ValueError, "depth looks like a colour image"),
    (np.zeros((6, 7), np.int32), np.zeros((6, 7, 3), np.uint8), {}, TypeError, "depth"),
    (np.zeros((6, 7), np.uint8), np.zeros((6, 7, 3), bool), {}, TypeError, "color"),
    (np.zeros((2, 6, 7), np.uint8), np.zeros((6, 7, 3), np.uint8), {}, ValueError, "same"),
])
def test_bad_parameters_raise_naming_them(depth, color, kwargs, error, name):
    with pytest.raises(error, match=name):
        dcbf(depth, color, **kwargs)


def test_strided_read_only_and_fortran_inputs_give_the_contiguous_result(backend):
    rng = np.random.default_rng(6)
    d = np.where(rng.random((18, 21)) < 0.4, 0, rng.integers(1, 65535, (18, 21))).astype(np.uint16)
    c = rng.integers(0, 256, (18, 21, 3), dtype=np.uint8)
    want = on_backend("numpy", dcbf, d, c, 31, 4.0, 20.0)  # compiled for JAX by the test above
    wide_d, wide_c = np.zeros((36, 21), np.uint16), np.zeros((18, 42, 3), np.uint8)
    wide_d[::2], wide_c[:, ::2] = d, c
    frozen_d, frozen_c = d.copy(), c.copy()
    frozen_d.flags.writeable = frozen_c.flags.writeable = False
    for depth, color in [(wide_d[::2], wide_c[:, ::2]), (frozen_d, frozen_c), (np.asfortranarray(d), np.asfortranarray(c))]:
        assert_same_bits(want, on_backend(backend, dcbf, depth, color, 31, 4.0, 20.0))


def test_inputs_are_not_modified_or_aliased():
    rng = np.random.default_rng(2)
    d = np.where(rng.random((9, 11)) < 0.4, 0, rng.integers(1, 255, (9, 11))).astype(np.uint8)
    c = rng.integers(0, 256, (9, 11, 3), dtype=np.uint8)
    d0, c0 = d.copy(), c.copy()
    out = on_backend("numpy", dcbf, d, c, 5)
    assert_same_bits(d0, d)
    assert_same_bits(c0, c)
    assert not np.shares_memory(out, d)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_uint16_depth_needs_64_bit_integers_on_jax():
    from ..helpers import jax_without_x64

    with jax_without_x64(), pytest.raises(RuntimeError, match="jax_enable_x64"):
        dcbf(np.full((5, 6), 900, np.uint16), np.zeros((5, 6), np.uint8), 3)


@given(data=depth_maps(max_h=30, max_w=20), band=st.sampled_from([1, 9, 50]))
def test_numpy_bands_equal_the_portable_code(data, band):
    """DCBF through NumPy's banded override (holes, both dtypes): the portable code's bits."""
    from portcv import _bilateral

    depth, color, unknown = data
    old, _bilateral.NUMPY_BAND = _bilateral.NUMPY_BAND, band
    try:
        for update in ("holes", "all"):
            portable = on_backend("numpy:readonly", dcbf, depth, color, 7, 2.0, 15.0, unknown=unknown, update=update)
            assert_same_bits(portable, on_backend("numpy", dcbf, depth, color, 7, 2.0, 15.0, unknown=unknown,
                                                  update=update))
    finally:
        _bilateral.NUMPY_BAND = old


def test_without_holes_dcbf_is_the_joint_bilateral_filter_opencv_agrees_with():
    """On a complete map, ``dcbf(update="all", window="disk")`` is ``joint_bilateral`` (the filter
    compared with cv2.ximgproc.jointBilateralFilter) with the same window and sigmas."""
    left, d8 = motorcycle_depth()
    complete = np.maximum(d8[100:220, 200:380], 1)
    guide = np.minimum(left[100:220, 200:380], 254)
    ours = dcbf(complete, guide, 11, 5.0, 25.0, window="disk", update="all")
    assert_same_bits(portcv.filters.joint_bilateral(guide, complete, 11, 25.0, 5.0), ours)
