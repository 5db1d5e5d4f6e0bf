"""convolve3d: eq. (1) of the video-parallelization article, exact on every backend and method."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
from portcv import volume
from portcv.volume import _convolve3d, _convolve3d_pallas

from ..helpers import assert_same_bits, jax_without_x64, matches_numpy
from . import oracle_convolve3d as oracle

METHODS = ("direct", "fft", "hybrid")
DTYPES = {"uint8": (0, 255), "uint16": (0, 65535), "int16": (-32768, 32767)}


@st.composite
def videos(draw, *, max_t: int = 9, max_h: int = 23, max_w: int = 37, dtypes=("uint8", "uint8", "int16", "uint16")):
    """(T, H, W) or a batch (B, T, H, W) of integer video: odd, non-multiple-of-32 sizes, a third
    of the examples saturated (every sample at the dtype's extreme, the worst case of the bounds)."""
    dtype = draw(st.sampled_from(dtypes))
    lo, hi = DTYPES[dtype]
    shape = (draw(st.integers(1, max_t)), draw(st.integers(1, max_h)), draw(st.integers(1, max_w)))
    if draw(st.booleans()):
        shape = (draw(st.integers(1, 3)),) + shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 2)) == 0:
        return rng.choice(np.array([lo, hi], dtype=dtype), shape)
    return rng.integers(lo, hi + 1, shape, dtype=dtype)


@st.composite
def kernels(draw, *, max_side: int = 7, bank: bool = True):
    """Odd integer kernels (kt, kh, kw), or banks of 1..3 of them, some taps zero; small enough
    that int16/uint16 video stays within int32."""
    sides = tuple(draw(st.sampled_from(range(1, max_side + 1, 2))) for _ in range(3))
    f = draw(st.integers(1, 3)) if bank and draw(st.booleans()) else None
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = sides if f is None else (f,) + sides
    k = rng.integers(-9, 10, shape)
    return np.where(rng.random(shape) < 0.2, 0, k)


def _fits(video: np.ndarray, kernel: np.ndarray) -> bool:
    return video.shape[-3] >= kernel.shape[-3]


@given(video=videos(), kernel=kernels(), method=st.sampled_from(METHODS), shift=st.integers(0, 6),
       out_dtype=st.sampled_from([None, "int32", "int16", "uint8"]),
       border=st.sampled_from(["reflect101", "replicate", "constant"]), time_mode=st.sampled_from(["valid", "same"]),
       value=st.integers(0, 255))
def test_convolve3d_same_bits_on_every_backend(backend, video, kernel, method, shift, out_dtype, border, time_mode, value):
    if time_mode == "valid" and not _fits(video, kernel):
        return
    matches_numpy(backend, volume.convolve3d, video, kernel, shift=shift, out_dtype=out_dtype, border=border,
                  border_value=value, time_mode=time_mode, method=method, channel_axis=None)


@given(video=videos(), kernel=kernels(), border=st.sampled_from(["reflect101", "replicate", "constant"]),
       time_mode=st.sampled_from(["valid", "same"]))
def test_every_method_gives_the_same_bits(video, kernel, border, time_mode):
    if time_mode == "valid" and not _fits(video, kernel):
        return
    # channel_axis=None: clips of frames 3 or 4 pixels wide are gray too
    direct = volume.convolve3d(video, kernel, border=border, time_mode=time_mode, method="direct", channel_axis=None)
    for method in ("fft", "hybrid", "auto"):
        assert_same_bits(direct, volume.convolve3d(video, kernel, border=border, time_mode=time_mode, method=method,
                                                   channel_axis=None))


@pytest.mark.parametrize("k", [9, 15])
@pytest.mark.parametrize("method", METHODS)
def test_big_kernels_same_bits_on_every_backend(backend, k, method):
    """The article's kernel sizes on odd frames; a 16-bit kernel (the float32 paths' bound)."""
    rng = np.random.default_rng(k)
    video = rng.integers(0, 256, (k + 1, 37, 45), dtype=np.uint8)
    real = rng.standard_normal((k, k, k))
    taps, _ = volume.quantize_kernel(real, bits=16)
    matches_numpy(backend, volume.convolve3d, video, taps, method=method)


@pytest.mark.parametrize("dtype", ["uint8", "int16"])
def test_the_float32_bound_edge_same_bits_on_every_backend(backend, dtype):
    """sum|K| * max|v| just below and just above 2**24: XLA's float32 convolution on one side, the
    float64 FFT on the other; both exact."""
    vmax = 255 if dtype == "uint8" else 32768
    lo, hi = DTYPES[dtype]
    video = np.random.default_rng(1).choice(np.array([lo, hi], dtype=dtype), (5, 19, 21))
    for l1 in ((2**24 - 1) // vmax, (2**24 - 1) // vmax + 1):
        kernel = np.zeros((3, 3, 3), dtype=np.int64)
        kernel[1, 1, 1] = l1 - 26 * (l1 // 40)
        kernel[kernel == 0] = -(l1 // 40)
        assert np.abs(kernel).sum() == l1
        assert _convolve3d.exact_in_float32(video.dtype, kernel[None]) == (l1 * vmax < 2**24)
        matches_numpy(backend, volume.convolve3d, video, kernel, method="direct")


@given(video=videos(max_t=5, max_h=6, max_w=7, dtypes=("uint8", "int16")), kernel=kernels(max_side=3, bank=False),
       border=st.sampled_from(["reflect101", "replicate", "constant"]), time_mode=st.sampled_from(["valid", "same"]),
       value=st.integers(0, 255))
@settings(max_examples=40)
def test_convolve3d_equals_the_naive_loops_of_eq_1(video, kernel, border, time_mode, value):
    if video.ndim == 4:
        video = video[0]
    if time_mode == "valid" and not _fits(video, kernel):
        return
    expected = oracle.convolve3d(video, kernel, border, value, time_mode)
    for method in METHODS:
        out = volume.convolve3d(video, kernel, border=border, border_value=value, time_mode=time_mode, method=method,
                                channel_axis=None)
        np.testing.assert_array_equal(portcv.to_numpy(out), expected)


@given(video=videos(dtypes=("uint8", "int16")), kernel=kernels(bank=False))
@settings(max_examples=30)
def test_convolve3d_equals_scipy_ndimage_and_fftconvolve(video, kernel):
    """scipy.ndimage.convolve with mode='mirror' (= reflect101) in float64 (exact: every sum is
    below 2**53), and the rounded 'valid' scipy.signal.fftconvolve of the padded clip."""
    ndimage = pytest.importorskip("scipy.ndimage")
    signal = pytest.importorskip("scipy.signal")
    if video.ndim == 4:
        video = video[0]
    if not _fits(video, kernel):
        return
    kt, kh, kw = kernel.shape
    ours = portcv.to_numpy(volume.convolve3d(video, kernel, channel_axis=None))
    full = ndimage.convolve(video.astype(np.float64), kernel.astype(np.float64), mode="mirror")
    np.testing.assert_array_equal(ours, full[kt // 2: video.shape[0] - kt // 2].astype(np.int32))
    padded = np.pad(video.astype(np.float64), ((0, 0), (kh // 2,) * 2, (kw // 2,) * 2), mode="reflect")
    by_fft = np.rint(signal.fftconvolve(padded, kernel.astype(np.float64), mode="valid")).astype(np.int32)
    np.testing.assert_array_equal(ours, by_fft)


def test_the_fft_guard_falls_back_to_direct():
    """uint16 video of 16 M samples and one tap of 32767 (max|v| * sum|K| just within int32): the
    3-D FFT's bound passes 0.25, so method='fft' runs direct, with the same bits (hybrid's bound,
    over kt frames only, is smaller)."""
    video = np.random.default_rng(3).integers(0, 65536, (4, 2000, 2000), dtype=np.uint16)
    kernel = np.zeros((3, 3, 3), dtype=np.int64)
    kernel[1, 1, 1] = 32767
    assert volume.fft_error_bound(video.shape, video.dtype, kernel) >= _convolve3d.FFT_BOUND_LIMIT
    padded = (4, 2002, 2002)
    assert _convolve3d.choose_method("fft", video.dtype, padded, kernel) == "direct"
    hybrid_ok = volume.fft_error_bound(video.shape, video.dtype, kernel, method="hybrid") < _convolve3d.FFT_BOUND_LIMIT
    assert _convolve3d.choose_method("hybrid", video.dtype, padded, kernel) == ("hybrid" if hybrid_ok else "direct")
    assert _convolve3d.choose_method("fft", np.uint8, (4, 22, 22), kernel) == "fft"
    expected = video[1:3].astype(np.int32) * 32767
    assert_same_bits(expected, volume.convolve3d(video, kernel, method="fft"))


@pytest.mark.slow
def test_fft_rounding_distance_at_the_articles_size_is_far_below_the_bound():
    """k + 3 saturated adversarial frames of 720 x 560 (every sample 0 or 255 in the sign pattern of
    the kernel), a 16-bit kernel of k = 15: the float64 FFT result is within 1e-6 of an integer
    (the bound is ~1e-4; rounding needs < 0.5)."""
    rng = np.random.default_rng(15)
    taps, _ = volume.quantize_kernel(rng.standard_normal((15, 15, 15)), bits=16)
    flipped = taps[::-1, ::-1, ::-1] > 0
    video = np.zeros((18, 560 + 14, 720 + 14), dtype=np.uint8)
    video[:] = np.where(np.tile(flipped, (2, 39, 49))[:18, :574, :734], 255, 0)
    sizes = _convolve3d.fft_shape(video.shape, 3)
    axes = (0, 1, 2)
    y = np.fft.irfftn(np.fft.rfftn(video.astype(np.float64), sizes, axes) * np.fft.rfftn(taps.astype(np.float64), sizes, axes),
                      sizes, axes)
    valid = y[14:18, 14:574, 14:734]
    assert np.abs(valid - np.rint(valid)).max() < 1e-6
    assert volume.fft_error_bound((18, 560, 720), np.uint8, taps) < _convolve3d.FFT_BOUND_LIMIT


def test_auto_picks_by_the_cost_model():
    small = np.ones((3, 3, 3), dtype=np.int64)
    big = np.ones((15, 15, 15), dtype=np.int64)
    paper = (18, 574, 734)
    with portcv.using("numpy"):  # the host's costs: the FFT (hybrid) wins at the article's size
        assert _convolve3d.choose_method("auto", np.uint8, (5, 10, 10), small) == "direct"
        assert _convolve3d.choose_method("auto", np.uint8, paper, big) == "hybrid"


@pytest.mark.parametrize("name, hybrid_from", [("cupy", 15), ("jax", 9)])
def test_auto_uses_the_gpu_backends_own_costs(name, hybrid_from, monkeypatch):
    """On a GPU, each backend's direct kernel has its own cost per multiply-add (JAX's Pallas
    kernel is about 3x CuPy's CUDA one, their FFTs alike): at the article's size hybrid takes
    over from k = 15 on CuPy and from k = 9 on JAX. Only what the backend declares is read (its
    place, whether it compiles whole programs), so this runs without a GPU."""
    declared = portcv.backends.registered(name)
    gpu = types.SimpleNamespace(name=name, runs_on_host=False, compiles_programs=declared.compiles_programs)
    monkeypatch.setattr(_convolve3d, "backend", lambda: gpu)
    for k in (5, 7, 9, 11, 13, 15):
        chosen = _convolve3d.choose_method("auto", np.uint8, (k + 3, 559 + k, 719 + k), np.ones((k, k, k), np.int64))
        assert chosen == ("hybrid" if k >= hybrid_from else "direct"), k


def test_a_bank_stacks_its_kernels_before_time():
    rng = np.random.default_rng(5)
    video = rng.integers(0, 256, (2, 6, 11, 13), dtype=np.uint8)
    bank = rng.integers(-4, 5, (3, 3, 5, 3))
    out = portcv.to_numpy(volume.convolve3d(video, bank))
    assert out.shape == (2, 3, 4, 11, 13)
    for f in range(3):
        np.testing.assert_array_equal(out[:, f], portcv.to_numpy(volume.convolve3d(video, bank[f])))


def test_shift_rounds_half_up_and_floors_negative_halves():
    video = np.zeros((1, 1, 1), dtype=np.uint8) + 1
    for tap, expected in ((5, 3), (-5, -2), (-7, -3), (3, 2)):  # 2.5 -> 3, -2.5 -> -2, -3.5 -> -3, 1.5 -> 2
        out = volume.convolve3d(video, np.full((1, 1, 1), tap), shift=1)
        assert int(portcv.to_numpy(out).ravel()[0]) == expected


def test_out_dtype_saturates():
    video = np.full((3, 4, 4), 255, dtype=np.uint8)
    k = np.ones((3, 3, 3), dtype=np.int64)
    # 4 x 4 gray frames: channel_axis=None (with "auto" a last axis of 4 reads as RGBA)
    assert portcv.to_numpy(volume.convolve3d(video, k, out_dtype="uint8", channel_axis=None)).max() == 255
    assert portcv.to_numpy(volume.convolve3d(video, -k, out_dtype="uint8", channel_axis=None)).max() == 0
    assert portcv.to_numpy(volume.convolve3d(video, k * 10, out_dtype="int16", channel_axis=None)).min() == 32767


def test_the_callers_arrays_are_not_changed():
    rng = np.random.default_rng(2)
    video = rng.integers(0, 256, (5, 9, 9), dtype=np.uint8)
    kernel = rng.integers(-3, 4, (3, 3, 3))
    v0, k0 = video.copy(), kernel.copy()
    for method in METHODS:
        volume.convolve3d(video, kernel, method=method, time_mode="same")
    np.testing.assert_array_equal(video, v0)
    np.testing.assert_array_equal(kernel, k0)


def test_a_kernel_changed_between_calls_is_read_again():
    """The checked kernel is cached by its contents: a kernel edited in place after a call gives
    the new kernel's sums (and a bad one its error) on the next call, not the cached ones."""
    rng = np.random.default_rng(3)
    video = rng.integers(0, 256, (5, 9, 9), dtype=np.uint8)
    kernel = rng.integers(-3, 4, (3, 3, 3))
    volume.convolve3d(video, kernel)
    kernel[1, 1, 1] += 5
    np.testing.assert_array_equal(portcv.to_numpy(volume.convolve3d(video, kernel)),
                                  oracle.convolve3d(video, kernel, "reflect101", 0, "valid").astype(np.int32))
    kernel[:] = 2**24  # now too large for the int32 sums
    for _ in range(2):
        with pytest.raises(ValueError, match="overflow the int32"):
            volume.convolve3d(video, kernel)
    taps, _ = _convolve3d.check_kernel(np.ones((3, 3, 3), int))
    assert not taps.flags.writeable  # shared by the calls that use this kernel


def test_a_bank_of_large_kernels_is_planned_once():
    """A bank of 40 15-cubes (1 MB) is checked and flipped once, not on every call (its flip into
    the static taps takes tens of ms): an equal bank gets the same plan back."""
    bank = np.ones((40, 15, 15, 15), np.int64)
    assert _convolve3d.kernel_plan(bank) is _convolve3d.kernel_plan(bank.copy())


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(kernel=np.ones((2, 3, 3), int)), ValueError, "odd"),
        (dict(kernel=np.ones((3, 3), int)), ValueError, "3-D kernel"),
        (dict(kernel=np.ones((0, 3, 3), int)), ValueError, "empty"),
        (dict(kernel=np.ones((33, 3, 3), int)), ValueError, "at most 31"),
        (dict(kernel=np.full((3, 3, 3), 0.3)), TypeError, "quantize_kernel"),
        (dict(kernel=np.full((3, 3, 3), 2**24)), ValueError, "overflow the int32"),
        (dict(video=np.zeros((2, 8, 8), np.uint8)), ValueError, "time_mode='valid' needs"),
        (dict(video=np.zeros((8, 8), np.uint8)), ValueError, "at least 3 dimensions"),
        (dict(video=np.zeros((4, 8, 8), np.float32)), TypeError, "uint8, uint16 or int16"),
        (dict(video=np.zeros((4, 8, 8), np.int32)), TypeError, "uint8, uint16 or int16"),
        (dict(video=np.zeros((4, 0, 8), np.uint8)), ValueError, "empty"),
        (dict(video=[[[1]]]), TypeError, "dtype"),
        (dict(method="winograd"), ValueError, "method"),
        (dict(time_mode="full"), ValueError, "time_mode"),
        (dict(border="wrap"), ValueError, "border"),
        (dict(out_dtype="float32"), ValueError, "out_dtype"),
        (dict(shift=31), ValueError, "shift"),
        (dict(shift=1.5), TypeError, "shift"),
        (dict(border="constant", border_value=256), ValueError, "border_value"),
        (dict(video=np.zeros((4, 8, 8, 3), np.uint8)), ValueError, r"video looks like a colour image .*rgb_to_gray"),
        (dict(video=np.zeros((4, 8, 4), np.uint8)), ValueError, r"video looks like a colour image"),
        (dict(channel_axis=-1), ValueError, "channel_axis must be 'auto' or None"),
        (dict(kernel=None), TypeError, "kernel must be an array of integer taps"),
        (dict(kernel=[[[1, 2], [1]]]), ValueError, "kernel must be an array of integer taps"),
        (dict(kernel=np.ones((600, 1, 1, 1), int), video=np.zeros((1, 2000, 2000), np.uint8)), ValueError,
         r"kernel: a bank of 600 kernels .* 2400000000 output samples"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(kwargs, error, match):
    args = dict(video=np.zeros((4, 8, 8), np.uint8), kernel=np.ones((3, 3, 3), int))
    args.update(kwargs)
    video, kernel = args.pop("video"), args.pop("kernel")
    with pytest.raises(error, match=match):
        volume.convolve3d(video, kernel, **args)


def test_fft_error_bound_refuses_bad_arguments():
    with pytest.raises(ValueError, match="method"):
        volume.fft_error_bound((4, 8, 8), np.uint8, np.ones((3, 3, 3), int), method="direct")
    with pytest.raises(TypeError, match="video_dtype"):
        volume.fft_error_bound((4, 8, 8), np.float32, np.ones((3, 3, 3), int))
    with pytest.raises(TypeError, match="video_dtype must be uint8, uint16 or int16, got 'bogus'"):
        volume.fft_error_bound((4, 8, 8), "bogus", np.ones((3, 3, 3), int))


@pytest.mark.parametrize("video_shape, error, match", [
    (None, ValueError, r"video_shape must be a \(\.\.\., T, H, W\) tuple"),
    ((8, 8), ValueError, r"video_shape must be a \(\.\.\., T, H, W\) tuple"),
    ("abc", ValueError, "video_shape must be a"),
    ((4, -8, 8), ValueError, r"video_shape must be in \[1,"),
    ((0, 8, 8), ValueError, r"video_shape must be in \[1,"),
    ((4, 8.5, 8), TypeError, "video_shape must be an integer"),
    ((4, 10**9, 10**9), ValueError, "video_shape .* samples; at most 2147483647"),
    ((2, 8, 8), ValueError, "video_shape has 2 frames; time_mode='valid' needs at least kt = 3"),
])
def test_fft_error_bound_checks_video_shape(video_shape, error, match):
    """It took a math domain error, an AttributeError or a bound for an impossible video before."""
    with pytest.raises(error, match=match):
        volume.fft_error_bound(video_shape, np.uint8, np.ones((3, 3, 3), int))


def test_a_gabor_filtered_real_clip_is_the_same_on_every_backend(backend):
    """A clip of the astronaut panning right 2 px a frame, through a bank of moving Gabor filters:
    the filter moving with the pan answers more strongly than the one moving against it."""
    data = pytest.importorskip("skimage.data")
    gray = (data.astronaut()[100:260, 100:300] @ np.array([0.299, 0.587, 0.114])).astype(np.uint8)
    clip = np.stack([gray[:, 2 * t: 2 * t + 120] for t in range(12)])[..., ::-1]  # content moves right
    bank, shift = volume.gabor_kernel3d(9, 2.5, 8.0, theta=0.0, speed=[-2.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no portable fallback on any backend
        out = matches_numpy(backend, volume.convolve3d, clip, bank, shift=shift)
    energy = (out.astype(np.int64) ** 2).sum(axis=(1, 2, 3))
    assert energy[1] > 2 * energy[0]


@pytest.mark.parametrize("method", ["fft", "hybrid"])
def test_jax_without_64_bit_mode_refuses_the_fft_methods(method):
    """The trace-time check: with x64 off, JAX would compute the float64 FFT in float32 and round
    to wrong integers; portcv raises instead."""
    video = np.zeros((4, 6, 7), np.uint8)
    with jax_without_x64(), pytest.raises(RuntimeError, match="jax_enable_x64 is on"):
        volume.convolve3d(video, np.ones((3, 3, 3), int), method=method)


@given(video=videos(max_t=7, max_h=20, max_w=70, dtypes=("uint8", "int16", "uint16")),
       kernel=kernels(max_side=5))
@settings(max_examples=12, deadline=None)
def test_pallas_conv3d_equals_the_valid_sums_in_interpret_mode(video, kernel):
    """The JAX backend's GPU kernel for the direct method (Pallas), run by Pallas' interpreter on
    the CPU: the exact 'valid' sums of a padded volume, whatever the tiles' overhang in frames,
    rows and columns, for banks and batches."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    from hypothesis import assume

    bank = kernel if kernel.ndim == 4 else kernel[None]
    shape = bank.shape
    taps = tuple(int(v) for v in bank.reshape(-1))
    assume(all(s >= k for s, k in zip(video.shape[-3:], shape[1:])))
    assume(_convolve3d._float32_exact_for(video.dtype.name, taps, shape))
    conv = _convolve3d_pallas.pallas_conv3d(video.shape, shape, interpret=True)
    got = np.asarray(conv(video, bank.astype(np.float32)))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _valid_sums(video, bank))


def _valid_sums(padded: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """The 'valid' correlation sums of a padded volume (..., Tp, Hp, Wp) with a bank (F, kt, kh,
    kw), one shifted slice per tap in int64: what the Pallas kernel must return."""
    (kt, kh, kw), (tp, hp, wp) = bank.shape[1:], padded.shape[-3:]
    t_out, h, w = tp - kt + 1, hp - kh + 1, wp - kw + 1
    want = np.zeros(padded.shape[:-3] + (bank.shape[0], t_out, h, w), np.int64)
    for f in range(bank.shape[0]):
        for l in range(kt):
            for n in range(kh):
                for m in range(kw):
                    want[..., f, :, :, :] += int(bank[f, l, n, m]) * padded[..., l:l + t_out, n:n + h, m:m + w].astype(np.int64)
    return want


@pytest.mark.parametrize("lead, t_out, h, w, k", [
    ((), 4, 16, 128, 3),       # no tile overhangs: no masks at all
    ((2,), 4, 20, 128, 3),     # rows only
    ((), 5, 16, 128, 5),       # frames only
    ((3,), 6, 17, 129, 5),     # every axis
])
def test_pallas_conv3d_masks_only_the_axes_whose_tiles_overhang(lead, t_out, h, w, k):
    """The Pallas kernel's masked loads and stores, axis by axis, in Pallas' interpreter: each
    combination of overhanging frames, rows and columns gives the exact 'valid' sums."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    rng = np.random.default_rng(k + t_out + h + w)
    video = rng.integers(0, 256, lead + (t_out + k - 1, h + k - 1, w + k - 1), dtype=np.uint8)
    bank = rng.integers(-3, 4, (1, k, k, k))
    got = np.asarray(_convolve3d_pallas.pallas_conv3d(video.shape, bank.shape, interpret=True)(video, bank.astype(np.float32)))
    np.testing.assert_array_equal(got, _valid_sums(video, bank))


def test_pallas_conv3d_is_declined_where_it_would_not_pay():
    """No Pallas program for kernels whose unrolled loads would take minutes to compile: XLA's
    convolution runs instead."""
    pytest.importorskip("jax.experimental.pallas.triton")
    assert _convolve3d_pallas.pallas_conv3d((8, 40, 40), (1, 5, 5, 5), interpret=True) is not None
    assert _convolve3d_pallas.pallas_conv3d((18, 40, 40), (1, 15, 15, 15), interpret=True) is None
