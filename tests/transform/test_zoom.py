from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import portcv
from portcv import transform
from portcv.transform import _zoom
from portcv.transform._zoom import MAX_COEFFICIENT, MAX_WEIGHT_SUM, ROUNDED_WEIGHT_SUM, prefilter_taps, spline_axis

from ..helpers import assert_same_bits, images, jax_without_x64, matches_numpy, on_backend, runs_its_overrides
from . import oracle_zoom as oracle

ndimage = pytest.importorskip("scipy.ndimage")

orders = st.sampled_from(transform.SPLINE_ORDERS)
#: Factors: integer (exact weights), simple rationals, and ones whose period needs rounded weights.
factors = st.sampled_from([2, 3, 7, 1, 0.5, 1.5, (2, 3), (1.37, 0.8), 2.37, (0.3, 5)])
# JAX compiles each shape: its examples come from these few inputs and factors.
JAX_SHAPES = [((9, 13), None), ((2, 11, 7), None), ((6, 10, 3), -1)]
JAX_FACTORS = [2, (1.5, 7), 0.6]


def per_plane(fn, img, axis):
    """``fn`` on every 2-D plane of ``(..., H, W[, C])``, stacked back."""
    a = np.moveaxis(img, -1, 0) if axis == -1 else img[None]
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.stack([fn(p) for p in flat])
    out = out.reshape(a.shape[:-2] + out.shape[1:])
    return np.moveaxis(out, 0, -1) if axis == -1 else out[0]


@functools.lru_cache(maxsize=None)
def camera(shape: tuple[int, int]) -> np.ndarray:
    """scikit-image's camera, anti-aliased down to ``shape`` (QCIF is 144 x 176)."""
    data = pytest.importorskip("skimage.data")
    resize = pytest.importorskip("skimage.transform").resize
    img = (resize(data.camera(), shape, anti_aliasing=True) * 255).round().astype(np.uint8)
    img.flags.writeable = False
    return img


def fits(img, axis, factor):
    """Whether ``factor`` leaves at least one pixel on both axes."""
    h, w = img.shape[-3:-1] if axis == -1 else img.shape[-2:]
    fy, fx = factor if isinstance(factor, tuple) else (factor, factor)
    return round(h * fy) >= 1 and round(w * fx) >= 1


def scipy_zoom(img, factor, order):
    return ndimage.zoom(img, factor, order=order, mode="mirror", grid_mode=True)


# --------------------------------------------------------------------------------------------
# every backend equals NumPy
# --------------------------------------------------------------------------------------------
@given(data=st.data(), order=orders, prefilter=st.booleans())
def test_zoom_same_bits_on_every_backend(backend, data, order, prefilter):
    if backend == "jax":
        shape, axis = data.draw(st.sampled_from(JAX_SHAPES))
        img = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, 256, shape, dtype=np.uint8)
        factor = data.draw(st.sampled_from(JAX_FACTORS))
    else:
        img, axis = data.draw(images(max_h=23, max_w=29))
        factor = data.draw(factors)
    assume(fits(img, axis, factor))
    if not prefilter:
        with portcv.using("numpy"):
            img = portcv.to_numpy(transform.spline_filter(img, order=order, channel_axis=axis))
    with runs_its_overrides("spline_prefilter", "spline_zoom"):
        matches_numpy(backend, transform.zoom, img, factor, order=order, prefilter=prefilter, channel_axis=axis)


@given(data=st.data(), order=orders)
def test_spline_filter_same_bits_on_every_backend(backend, data, order):
    if backend == "jax":
        shape, axis = data.draw(st.sampled_from(JAX_SHAPES))
        img = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, 256, shape, dtype=np.uint8)
    else:
        img, axis = data.draw(images(max_h=40, max_w=45))
    with runs_its_overrides("spline_prefilter"):
        out = matches_numpy(backend, transform.spline_filter, img, order=order, channel_axis=axis)
    assert out.dtype == np.int32 and out.shape == img.shape


def test_table4_size_same_bits_on_every_backend(backend):
    """The article's QCIF x7 frame, a batch of them and 256^2 x2: the int64 paths at full size."""
    qcif = camera((144, 176))
    matches_numpy(backend, transform.zoom, np.stack([qcif, qcif[::-1]]), 7)
    matches_numpy(backend, transform.zoom, camera((256, 256)), 2, order=1)


def _interpolation(coef: np.ndarray, factor: float) -> np.ndarray:
    """The interpolation kernel itself on any int32 samples (zoom refuses those outside
    spline_filter's range; the kernel's bounds hold for every int32)."""
    h, w = coef.shape
    size = (round(h * factor), round(w * factor))
    return _zoom.spline_zoom_kernel(portcv.asarray(coef), order=3, size=size, has_channels=False, frac_bits=16)


@pytest.mark.parametrize("factor", [7, 19 / 2])
def test_extreme_int32_coefficients_same_bits_on_every_backend(backend, factor):
    """int32 coefficients at both ends through exact (x7) and rounded (x19/2) weights."""
    coef = np.array([[2**31 - 1, -(2**31), 5], [-(2**31), 2**31 - 1, -7], [0, 2**31 - 1, -(2**31)]], np.int32)
    with runs_its_overrides("spline_zoom"):
        matches_numpy(backend, _interpolation, coef, factor)
    edge = np.array([[MAX_COEFFICIENT, -MAX_COEFFICIENT, 5], [-MAX_COEFFICIENT, MAX_COEFFICIENT, -7]], np.int32)
    with runs_its_overrides("spline_zoom"):  # spline_filter's extremes through zoom itself
        matches_numpy(backend, transform.zoom, edge, factor, prefilter=False)


@pytest.mark.parametrize("value", [MAX_COEFFICIENT + 1, -MAX_COEFFICIENT - 1, 2**31 - 1, -(2**31)])
def test_prefilter_false_refuses_samples_no_spline_filter_returns(value):
    """Beyond spline_filter's |c| <= 2295 * 2**16 the output was clipped garbage, silently."""
    coef = np.zeros((3, 4), np.int32)
    coef[1, 2] = value
    with pytest.raises(ValueError, match=rf"image: with prefilter=False .* \|c\| <= 2295 \* 2\*\*16 = "
                                         rf"{MAX_COEFFICIENT}; got values from"):
        transform.zoom(coef, 2, prefilter=False)
    # check=False skips the read back (the caller vouches for the coefficients): clipped, no error.
    assert portcv.to_numpy(transform.zoom(coef, 2, prefilter=False, check=False)).shape == (6, 8)
    with pytest.raises(TypeError, match="check must be a bool"):
        transform.zoom(coef, 2, prefilter=False, check="no")


def test_more_rows_than_one_grid_dimension_same_bits_on_every_backend(backend):
    """A batch of 70 gray frames of 1000 rows: 70,000 rows of samples (the CUDA kernels' rows
    stride past 65,535 grid rows)."""
    img = np.random.default_rng(8).integers(0, 256, (70, 1000, 8), dtype=np.uint8)
    with runs_its_overrides("spline_prefilter", "spline_zoom"):
        matches_numpy(backend, transform.spline_filter, img, channel_axis=None)
        matches_numpy(backend, transform.zoom, img, (1, 2), order=1, channel_axis=None)


def test_large_shrink_same_bits_on_every_backend(backend):
    """4,000 rows shrunk 400x: each output row reads 4 source rows 400 apart, so the CUDA
    interpolation's tiles (whose band of source rows must fit shared memory) are one row high."""
    img = np.random.default_rng(9).integers(0, 256, (4000, 12), dtype=np.uint8)
    with runs_its_overrides("spline_prefilter", "spline_zoom"):
        out = matches_numpy(backend, transform.zoom, img, (1 / 400, 1.5), channel_axis=None)
    assert out.shape == (10, 18)


@given(data=images(max_h=23, max_w=29), order=orders, factor=factors, block=st.sampled_from([1, 7, 64, 500]))
def test_numpy_blocks_equal_the_portable_code(data, order, factor, block):
    """NumPy's overrides work by blocks of frames and bands of rows: the portable code's bits."""
    img, axis = data
    assume(fits(img, axis, factor))
    from portcv.transform import _zoom

    old, _zoom.NUMPY_BLOCK = _zoom.NUMPY_BLOCK, block
    try:
        portable = on_backend("numpy:readonly", transform.zoom, img, factor, order=order, channel_axis=axis)
        assert_same_bits(portable, on_backend("numpy", transform.zoom, img, factor, order=order, channel_axis=axis))
        portable = on_backend("numpy:readonly", transform.spline_filter, img, channel_axis=axis)
        assert_same_bits(portable, on_backend("numpy", transform.spline_filter, img, channel_axis=axis))
    finally:
        _zoom.NUMPY_BLOCK = old


@given(data=images(max_h=19, max_w=40), order=orders, coefficients=st.booleans(), dh=st.integers(1, 50),
       dw=st.integers(1, 90))
@settings(max_examples=10, deadline=None)
def test_pallas_zoom_equals_the_portable_code_in_interpret_mode(data, order, coefficients, dh, dw):
    """The JAX backend's GPU interpolation (Pallas), run by Pallas' interpreter on the CPU: the
    portable version's bits on pixels and on Q16 coefficients, for any output size (exact and
    rounded weights; tiles overhanging the output's last rows and columns), channels and batches."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    from portcv.transform import _zoom, _zoom_pallas

    img, axis = data
    has_channels = axis == -1
    coef = _zoom.spline_prefilter_kernel.portable(np, img, has_channels=has_channels) if coefficients else img
    params = dict(order=order, size=(dh, dw), has_channels=has_channels, frac_bits=16 if coefficients else 0)
    want = _zoom.spline_zoom_kernel.portable(np, coef, **params)
    run = _zoom_pallas.pallas_zoom(coef.shape, coef.dtype.name, **params, interpret=True)
    with portcv.using("jax") as b:
        got = run(b.xp.asarray(coef))
    assert_same_bits(want, got)


@given(data=images(max_h=40, max_w=90))
@settings(max_examples=10, deadline=None)
def test_pallas_prefilter_equals_the_portable_code_in_interpret_mode(data):
    """The JAX backend's GPU prefilter (two Pallas kernels), run by Pallas' interpreter on the CPU:
    the portable version's bits for any size (narrower than the taps' reach too: mirrored more
    than once; tiles overhanging the last rows and columns), channels and batches."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    from portcv.transform import _zoom, _zoom_pallas

    img, axis = data
    has_channels = axis == -1
    want = _zoom.spline_prefilter_kernel.portable(np, img, has_channels=has_channels)
    run = _zoom_pallas.pallas_prefilter(img.shape, has_channels=has_channels, interpret=True)
    with portcv.using("jax") as b:
        got = run(b.xp.asarray(img))
    assert_same_bits(want, got)


def test_pallas_prefilter_extremes_in_interpret_mode():
    """Alternating 0 / 255 (the largest sums of either sign) and a white frame, against the
    portable version."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    from portcv.transform import _zoom, _zoom_pallas

    checker = ((np.indices((37, 70)).sum(axis=0) % 2) * 255).astype(np.uint8)
    for img in (checker, 255 - checker, np.full((20, 30), 255, np.uint8)):
        want = _zoom.spline_prefilter_kernel.portable(np, img, has_channels=False)
        run = _zoom_pallas.pallas_prefilter(img.shape, has_channels=False, interpret=True)
        with portcv.using("jax") as b:
            assert_same_bits(want, run(b.xp.asarray(img)))


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_zoom_needs_64_bit_integers_on_jax():
    with jax_without_x64(), pytest.raises(RuntimeError, match="jax_enable_x64 is on"):
        transform.zoom(np.zeros((5, 6), np.uint8), 3)


# --------------------------------------------------------------------------------------------
# naive oracle
# --------------------------------------------------------------------------------------------
@given(data=images(max_h=7, max_w=8, batch=False, channels=(None,)), order=orders,
       factor=st.sampled_from([2, 3, 0.5, (1.5, 2.5), (7, 1), (2.7, 2.4), (1.1, 1.3)]))
def test_zoom_equals_per_pixel_transcription(data, order, factor):
    img, _ = data
    assume(fits(img, None, factor))
    pair = factor if isinstance(factor, tuple) else (factor, factor)
    np.testing.assert_array_equal(transform.zoom(img, factor, order=order), oracle.zoom(img, pair, order))


def test_oracle_covers_rounded_weights():
    """Factors whose period is long use weights rounded to 2**-30: both kinds are exercised."""
    assert spline_axis(3, 7, 19).total == ROUNDED_WEIGHT_SUM and not spline_axis(3, 7, 19).exact
    img = np.random.default_rng(3).integers(0, 256, (7, 9), dtype=np.uint8)
    np.testing.assert_array_equal(transform.zoom(img, (19 / 7, 2.4)), oracle.zoom(img, (19 / 7, 2.4), 3))


@given(data=images(max_h=9, max_w=11, batch=False, channels=(None,)))
def test_spline_filter_equals_per_pixel_transcription(data):
    img, _ = data
    np.testing.assert_array_equal(transform.spline_filter(img), np.array(oracle.prefilter_plane(img), np.int32))


# --------------------------------------------------------------------------------------------
# the fixed-point design
# --------------------------------------------------------------------------------------------
def test_prefilter_taps_sum_to_2_24():
    h = prefilter_taps()
    assert h[0] + 2 * sum(h[1:]) == 2**24
    assert list(h) == oracle.taps()
    assert abs(h[0] - math.sqrt(3) * 2**24) <= 2  # only rounding moved the centre
    assert round(math.sqrt(3) * (math.sqrt(3) - 2) ** len(h) * 2**24) == 0  # the next tap rounds to 0


@pytest.mark.parametrize("u", range(1, 18))
def test_integer_factor_weights_are_exact_rationals(u):
    """Every phase's weights sum to the table's total, which divides 48 u^3, for u up to 17 (odd)
    or 8 (even); each weight equals its B-spline value exactly."""
    t = spline_axis(3, 5, 5 * u)
    if u % 2 == 0 and u > 8:
        assert not t.exact and t.total == ROUNDED_WEIGHT_SUM
    else:
        assert t.exact and (48 * u**3) % t.total == 0 and t.total <= MAX_WEIGHT_SUM
        table, _ = oracle.axis(3, 5, 5 * u)
        assert [[w * t.total for _, w in row] for row in table] == t.weight.tolist()
    assert (t.weight.sum(axis=1) == t.total).all() and (t.weight >= 0).all()
    assert ((t.index >= 0) & (t.index < 5)).all()


@given(data=images(max_h=20, max_w=20), order=orders, factor=factors, value=st.integers(0, 255))
def test_constant_image_stays_constant(data, order, factor, value):
    img, axis = data
    assume(fits(img, axis, factor))
    flat = np.full_like(img, value)
    out = transform.zoom(flat, factor, order=order, channel_axis=axis)
    assert (out == value).all()
    coef = transform.spline_filter(flat, order=order, channel_axis=axis)
    assert (coef == value << 16).all()


@given(data=images(max_h=30, max_w=30), order=orders)
def test_factor_one_returns_the_image(data, order):
    img, axis = data
    np.testing.assert_array_equal(transform.zoom(img, 1, order=order, channel_axis=axis), img)


@given(data=images(max_h=15, max_w=17), order=orders, factor=factors)
def test_batches_and_channels_are_planes(data, order, factor):
    img, axis = data
    assume(fits(img, axis, factor))
    expected = per_plane(lambda p: transform.zoom(p, factor, order=order), img, axis)
    np.testing.assert_array_equal(transform.zoom(img, factor, order=order, channel_axis=axis), expected)
    coef = transform.spline_filter(img, order=order, channel_axis=axis)
    np.testing.assert_array_equal(coef, per_plane(lambda p: transform.spline_filter(p, order=order), img, axis))


@given(data=images(max_h=15, max_w=17), order=orders, factor=factors)
def test_prefilter_false_takes_the_coefficients(data, order, factor):
    img, axis = data
    assume(fits(img, axis, factor))
    coef = transform.spline_filter(img, order=order, channel_axis=axis)
    np.testing.assert_array_equal(transform.zoom(coef, factor, order=order, prefilter=False, channel_axis=axis),
                                  transform.zoom(img, factor, order=order, channel_axis=axis))


def test_extreme_int32_coefficients_do_not_overflow():
    """Any int32 coefficients, not only spline_filter's: the kernel's bounds hold at +-2**31 (saturating)."""
    coef = np.array([[2**31 - 1, -(2**31)], [-(2**31), 2**31 - 1]], np.int32)
    for factor in (7, 19 / 2):
        with portcv.using("numpy"):
            out = _interpolation(coef, factor)
        ref = oracle.zoom_plane(coef.tolist(), out.shape, 3, 16)
        np.testing.assert_array_equal(out, ref)


# --------------------------------------------------------------------------------------------
# peer: scipy.ndimage
# --------------------------------------------------------------------------------------------
def _agreement(ours, ref):
    diff = np.abs(ours.astype(np.int64) - ref)
    return float((diff == 0).mean()), int(diff.max())


PEER_CASES = {
    "camera QCIF x7": (lambda: camera((144, 176)), 7),
    "camera 256x256 x2": (lambda: camera((256, 256)), 2),
    "random 37x53 x3": (lambda: np.random.default_rng(1).integers(0, 256, (37, 53), dtype=np.uint8), 3),
    "random 97x131 x1.5": (lambda: np.random.default_rng(2).integers(0, 256, (97, 131), dtype=np.uint8), 1.5),
    "random 64x80 x(2.37, 0.6)": (lambda: np.random.default_rng(4).integers(0, 256, (64, 80), dtype=np.uint8),
                                  (2.37, 0.6)),
}


@pytest.mark.parametrize("case", list(PEER_CASES))
def test_zoom_agrees_with_scipy(case):
    """Order 3: >= 99.99 % of pixels equal to scipy.ndimage.zoom(order=3, mode="mirror",
    grid_mode=True), the rest off by 1 (values within the prefilter's 1e-4 of a .5 boundary)."""
    make, factor = PEER_CASES[case]
    img = make()
    ref = scipy_zoom(img, factor, 3)
    ours = transform.zoom(img, factor)
    assert ours.shape == ref.shape
    equal, worst = _agreement(ours, ref)
    assert equal >= 0.9999 and worst <= 1, (equal, worst)


def _exact_sums(img, factor, order):
    """``(acc, D)`` of the one-rounding formula for pixels (orders 0, 1): ``v = acc / D`` exactly."""
    fy, fx = factor if isinstance(factor, tuple) else (factor, factor)
    (h, w), (dh, dw) = img.shape, (round(img.shape[0] * fy), round(img.shape[1] * fx))
    mats = []
    for n_in, n_out in ((h, dh), (w, dw)):
        t = spline_axis(order, n_in, n_out)
        assert t.exact
        m = np.zeros((n_out, n_in), np.int64)
        np.add.at(m, (np.arange(n_out)[:, None], t.index), t.weight)
        mats.append((m, t.total))
    (my, sy), (mx, sx) = mats
    return my @ img.astype(np.int64) @ mx.T, sy * sx


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("case", list(PEER_CASES))
def test_nearest_and_linear_equal_scipy_except_at_exact_ties(case, order):
    """Orders 0 and 1 have no prefilter: portcv's value is the exact rational, so a pixel differs
    from scipy's float64 only where that value is exactly halfway (floor(v + 0.5) in float64 then
    falls either way)."""
    make, factor = PEER_CASES[case]
    img = make()
    ref = scipy_zoom(img, factor, order)
    ours = transform.zoom(img, factor, order=order)
    assert ours.shape == ref.shape
    differ = ours != ref
    if differ.any():
        acc, d = _exact_sums(img, factor, order)
        assert (np.abs(ours.astype(int) - ref)[differ] == 1).all()
        assert (acc[differ] % d == d // 2).all()


@pytest.mark.parametrize("case", list(PEER_CASES))
def test_spline_filter_within_2e4_of_scipy(case):
    img = PEER_CASES[case][0]()
    ours = transform.spline_filter(img) / 2**16
    ref = ndimage.spline_filter(img.astype(np.float64), 3, mode="mirror")
    assert np.abs(ours - ref).max() <= 2e-4


@given(data=images(max_h=40, max_w=40, batch=False, channels=(None,)), order=orders, factor=factors)
def test_zoom_within_one_of_scipy_on_random_images(data, order, factor):
    img, _ = data
    assume(fits(img, None, factor))
    ref = scipy_zoom(img, factor, order)
    ours = transform.zoom(img, factor, order=order)
    assert ours.shape == ref.shape
    assert _agreement(ours, ref)[1] <= 1


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------
GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: transform.zoom(GRAY.astype(np.float32), 2), TypeError, "dtype uint8"),
        (lambda: transform.zoom(GRAY.tolist(), 2), TypeError, "dtype uint8"),
        (lambda: transform.zoom(GRAY[0], 2), ValueError, "at least 2 dimensions"),
        (lambda: transform.zoom(GRAY[:0], 2), ValueError, "empty"),
        (lambda: transform.zoom(GRAY, 0), ValueError, "factor must be > 0"),
        (lambda: transform.zoom(GRAY, -2), ValueError, "factor must be > 0"),
        (lambda: transform.zoom(GRAY, float("nan")), ValueError, "factor must be finite"),
        (lambda: transform.zoom(GRAY, (2, float("inf"))), ValueError, "factor must be finite"),
        (lambda: transform.zoom(GRAY, (2, 2, 2)), ValueError, "factor"),
        (lambda: transform.zoom(GRAY, "2"), TypeError, "factor"),
        (lambda: transform.zoom(GRAY, 0.01), ValueError, "factor"),
        (lambda: transform.zoom(GRAY, 1e5), ValueError, "factor: the output would have"),
        (lambda: transform.zoom(GRAY, 2, order=2), ValueError, "order must be one of"),
        (lambda: transform.zoom(GRAY, 2, order=5), ValueError, "order must be one of"),
        (lambda: transform.zoom(GRAY, 2, order=3.0), TypeError, "order"),
        (lambda: transform.zoom(GRAY, 2, border="constant"), ValueError, "border"),
        (lambda: transform.zoom(GRAY, 2, prefilter="no"), TypeError, "prefilter"),
        (lambda: transform.zoom(GRAY, 2, prefilter=False), TypeError, "dtype int32"),
        (lambda: transform.zoom(GRAY, 2, channel_axis=0), ValueError, "channel_axis"),
        (lambda: transform.spline_filter(GRAY.astype(np.int16)), TypeError, "dtype uint8"),
        (lambda: transform.spline_filter(GRAY[0]), ValueError, "at least 2 dimensions"),
        (lambda: transform.spline_filter(GRAY[:, :0]), ValueError, "empty"),
        (lambda: transform.spline_filter(GRAY, order=2), ValueError, "order must be one of"),
        (lambda: transform.spline_filter(GRAY, order=True), TypeError, "order"),
        (lambda: transform.spline_filter(GRAY, border="reflect"), ValueError, "border"),
        (lambda: transform.spline_filter(GRAY, channel_axis=2), ValueError, "channel_axis"),
    ],
)
def test_zoom_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# --------------------------------------------------------------------------------------------
# resize(..., interpolation="bspline3"): zoom to an output size, OpenCV-shaped
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((9, 13), None), ((2, 11, 7), None), ((6, 10, 3), -1)])
@pytest.mark.parametrize("size, scale", [((26, 18), None), ((5, 4), None), (None, 3), (None, (1.5, 0.6))])
def test_resize_bspline3_is_zoom_to_the_size(backend, shape, axis, size, scale):
    img = np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8)
    h, w = (shape[-3], shape[-2]) if axis == -1 else shape[-2:]
    if size is not None:
        dw, dh = size
    else:
        fx, fy = (scale, scale) if np.isscalar(scale) else scale
        dw, dh = round(w * fx), round(h * fy)

    def call():
        return transform.resize(portcv.asarray(img), size=size, scale=scale, interpolation="bspline3", channel_axis=axis)

    out = portcv.to_numpy(matches_numpy(backend, call))
    assert out.shape == shape[:-2] + (dh, dw) if axis is None else out.shape == shape[:-3] + (dh, dw, 3)
    # the same bits as zoom when the factors give that size; and scipy's sampling of the size ratio
    ref = per_plane(lambda p: ndimage.zoom(p.astype(np.float64), (dh / h, dw / w), order=3, mode="mirror",
                                           grid_mode=True), img, axis)
    assert np.abs(out.astype(np.int64) - np.clip(np.floor(ref + 0.5), 0, 255)).max() <= 1
    if size is None and np.isscalar(scale):
        assert_same_bits(out, portcv.to_numpy(transform.zoom(img, scale, channel_axis=axis)))


def test_resize_bspline3_equals_scipy_on_a_photo():
    data = pytest.importorskip("skimage.data")
    camera = data.camera()
    out = portcv.to_numpy(transform.resize(camera, size=(700, 300), interpolation="bspline3"))
    ref = ndimage.zoom(camera.astype(np.float64), (300 / 512, 700 / 512), order=3, mode="mirror", grid_mode=True)
    assert np.mean(out != np.clip(np.floor(ref + 0.5), 0, 255)) <= 1e-4


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"size": (0, 4)}, ValueError, "size"),
        ({"scale": 1e-3}, ValueError, "scale"),
        ({"scale": 1e5}, ValueError, "scale: the output would have"),
        ({"size": (4, 4), "scale": 2}, ValueError, "exactly one"),
        ({"size": (4, 4), "interpolation": "bspline5"}, ValueError, "bspline3"),
    ],
)
def test_resize_bspline3_rejects_bad_input(kwargs, error, words):
    kwargs = {"interpolation": "bspline3", **kwargs}
    with pytest.raises(error, match=words):
        transform.resize(GRAY, **kwargs)
