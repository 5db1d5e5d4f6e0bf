"""histogram, thresholds (two peaks, Otsu), binarize and the channel-layout helpers of portcv.color."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import color
from portcv.color import _histogram, _histogram_pallas

from ..helpers import assert_same_bits, images, matches_numpy, on_backend
from . import oracle_histogram as oracle

cv2 = pytest.importorskip("cv2")

bins_values = st.sampled_from([1, 2, 4, 16, 64, 128, 256, 256, 256])
rules = st.sampled_from(_histogram.RULES)


@contextlib.contextmanager
def opencv_ipp(enabled: bool):
    """OpenCV with or without its IPP back end (x86-64 wheels call IPP's Otsu by default)."""
    before = cv2.ipp.useIPP()
    cv2.ipp.setUseIPP(enabled)
    try:
        yield
    finally:
        cv2.ipp.setUseIPP(before)


def frames_of(img: np.ndarray, has_channels: bool) -> np.ndarray:
    """``img`` as a stack of (H, W) or (H, W, C) frames."""
    per_frame = img.shape[-3:] if has_channels else img.shape[-2:]
    return img.reshape((-1,) + per_frame)


def opencv_otsu(gray: np.ndarray) -> int:
    return int(cv2.threshold(np.ascontiguousarray(gray), 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[0])


@st.composite
def histograms(draw: st.DrawFn, max_rows: int = 6) -> np.ndarray:
    """(rows, 256) int64 histograms rich in equal counts, empty bins and lone peaks."""
    rows = draw(st.sampled_from([1, 4, max_rows]))  # few shapes: JAX compiles each once
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    high = draw(st.sampled_from([2, 3, 5, 1000]))
    hist = rng.integers(0, high, (rows, 256)).astype(np.int64)
    hist *= rng.random((rows, 256)) < draw(st.sampled_from([0.02, 0.1, 0.5, 1.0]))  # sparse or dense
    return hist


def symmetric_histograms(count: int, seed: int = 0) -> np.ndarray:
    """Few-level histograms with mirror-symmetric counts: two thresholds then split the
    histogram into mirror-image classes of exactly equal between-class variance, and OpenCV's
    double rounding decides which one wins."""
    rng = np.random.default_rng(seed)
    out = np.zeros((count, 256), np.int64)
    for r in range(count):
        k = int(rng.integers(3, 6))
        start, step = int(rng.integers(0, 120)), int(rng.integers(1, 30))
        counts = rng.integers(1, 60, k)
        counts = np.concatenate([counts[: (k + 1) // 2], counts[: k // 2][::-1]])
        out[r, start + step * np.arange(k)] = counts * int(rng.integers(1, 50))
    return out


def exact_first_argmax_otsu(hist: np.ndarray) -> int:
    """Otsu in exact integers: first t maximizing (N s1 - n1 S)^2 / (n1 n2) over non-empty classes."""
    h = [int(v) for v in hist]
    n, s = sum(h), sum(i * v for i, v in enumerate(h))
    best_num, best_den, best_t = 0, 1, 0
    n1 = s1 = 0
    for t in range(256):
        n1 += h[t]
        s1 += t * h[t]
        n2 = n - n1
        if n1 == 0 or n2 == 0:
            continue
        num, den = (n * s1 - n1 * s) ** 2, n1 * n2
        if num * best_den > best_num * den:
            best_num, best_den, best_t = num, den, t
    return best_t


# ---------------------------------------------------------------- histogram
@given(data=images(channels=(None, 1, 3, 4)), bins=bins_values)
def test_histogram_same_bits_on_every_backend(backend, data, bins):
    img, axis = data
    out = matches_numpy(backend, color.histogram, img, bins=bins, channel_axis=axis)
    lead = img.shape[:-3] if axis == -1 else img.shape[:-2]
    assert out.dtype == np.int64
    assert out.shape == lead + ((img.shape[-1], bins) if axis == -1 else (bins,))


def test_histogram_strided_batched_and_large_inputs(backend):
    rgb = portcv.data.synthetic_rgb(271, 389, seed=3)
    gray = color.rgb_to_gray(rgb)
    matches_numpy(backend, color.histogram, gray)
    matches_numpy(backend, color.histogram, rgb, bins=64)  # 3 interleaved channels
    matches_numpy(backend, color.histogram, rgb[::2, 1::3])  # non-contiguous view
    # Frames of 17 * 19 bytes: every frame after the first starts off a 16-byte boundary.
    matches_numpy(backend, color.histogram, np.stack([gray[:17, :19], gray[5:22, 7:26], gray[:17, 1:20]]))
    matches_numpy(backend, color.histogram, np.stack([rgb[:33, :31], rgb[1:34, :31]]), bins=32)


def test_histogram_threshold_and_binarize_take_strided_big_gray_planes():
    """A gray plane of 2**16 pixels or more that is a view (a channel of an RGB frame, flipped,
    transposed) takes the NumPy histogram's byte-pair path: the bits of its contiguous copy."""
    rgb = np.random.default_rng(5).integers(0, 256, (256, 257, 3), dtype=np.uint8)
    for plane in (rgb[..., 1], rgb[::-1, ::-1, 0], rgb[..., 2].T):
        copy = np.ascontiguousarray(plane)
        with portcv.using("numpy"):
            for fn in (color.histogram, color.threshold_otsu, color.binarize_auto):
                assert_same_bits(fn(copy), fn(plane))


@given(data=images(channels=(None, 1, 3), max_h=7, max_w=9), bins=bins_values)
def test_histogram_equals_counting_loop(data, bins):
    img, axis = data
    ref = oracle.histogram(img, bins, has_channels=axis == -1)
    np.testing.assert_array_equal(color.histogram(img, bins=bins, channel_axis=axis), ref)


@given(data=images(channels=(None, 3)), bins=bins_values)
def test_histogram_equals_opencv_calchist(data, bins):
    img, axis = data
    has_channels = axis == -1
    out = portcv.to_numpy(color.histogram(img, bins=bins, channel_axis=axis))
    channels = img.shape[-1] if has_channels else 1
    out = out.reshape(-1, channels, bins)
    for frame, counts in zip(frames_of(img, has_channels), out):
        for c in range(channels):
            ref = cv2.calcHist([np.ascontiguousarray(frame)], [c], None, [bins], [0, 256]).reshape(-1)
            np.testing.assert_array_equal(counts[c], ref.astype(np.int64))


def test_histogram_counts_sum_to_the_pixel_count():
    img = portcv.data.synthetic_rgb(61, 83, seed=5)
    assert (color.histogram(img).sum(axis=-1) == 61 * 83).all()
    assert color.histogram(img, channel_axis=None).shape == (61, 256)  # 61 planes of 83 x 3


@given(data=images(channels=(None, 1), max_h=40, max_w=70), bins=bins_values)
def test_pallas_histogram_kernel_equals_numpy_in_interpret_mode(data, bins):
    """The JAX backend's GPU kernel (Pallas, one-hot MMAs), run by Pallas' interpreter on the
    CPU: the same counts as the portable version, whatever the padding of the last step."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    img, axis = data
    has_channels = axis == -1
    counted = _histogram_pallas.pallas_histogram(img.shape, bins, has_channels, interpret=True)
    if counted is None:  # several channels or an empty image: the scatter-add runs instead
        assert img.size == 0
        return
    with portcv.using("jax"):
        out = counted(img)
    assert_same_bits(_histogram.histogram_kernel.portable(np, img, bins=bins, has_channels=has_channels), out)


# ---------------------------------------------------------------- threshold_two_peaks
@given(hist=histograms(), rule=rules)
def test_threshold_two_peaks_same_bits_on_every_backend(backend, hist, rule):
    out = matches_numpy(backend, color.threshold_two_peaks, hist, rule=rule)
    assert out.dtype == np.int64 and out.shape == hist.shape[:-1]
    assert ((out >= 50) & (out <= 200)).all()
    matches_numpy(backend, color.threshold_two_peaks, hist[0], rule=rule)  # one histogram: 0-d


@given(hist=histograms())
def test_threshold_two_peaks_equals_the_report_listings(hist):
    loops = {
        "two_largest": lambda h: oracle.two_peaks_cpu(h, as_printed=False),
        "report_cpu": lambda h: oracle.two_peaks_cpu(h, as_printed=True),
        "report_gpu": oracle.two_peaks_gpu,
    }
    for rule, loop in loops.items():
        ours = portcv.to_numpy(color.threshold_two_peaks(hist, rule=rule))
        np.testing.assert_array_equal(ours, [loop(h) for h in hist], err_msg=rule)


def test_threshold_two_peaks_tie_rules():
    h = np.zeros(256, np.int64)
    h[[100, 140]] = 5  # equal largest counts: the later bin is the first peak, the earlier the second
    h[[90, 160]] = 3
    assert int(color.threshold_two_peaks(h)) == 120
    assert int(color.threshold_two_peaks(h, rule="report_cpu")) == 120
    # even bins 90, 100, 140, 160: 100 and 140 tie, the tournament keeps 100; odd bins are all 0 -> 1
    assert int(color.threshold_two_peaks(h, rule="report_gpu")) == 50
    h = np.zeros(256, np.int64)
    h[[70, 120, 150, 190]] = [4, 9, 4, 4]  # second largest 4 on both sides of the peak: the one before wins
    assert int(color.threshold_two_peaks(h)) == 95
    h[70] = 3  # now only after the peak: the first one after wins
    assert int(color.threshold_two_peaks(h)) == 135
    assert int(color.threshold_two_peaks(h, rule="report_cpu")) == 95  # as printed: only bins before the peak


# ---------------------------------------------------------------- threshold_otsu
@given(data=images(channels=(None, 1, 3)))
def test_threshold_otsu_same_bits_on_every_backend(backend, data):
    img, axis = data
    out = matches_numpy(backend, color.threshold_otsu, img, channel_axis=axis)
    lead = img.shape[:-3] if axis == -1 else img.shape[:-2]
    assert out.dtype == np.int64 and out.shape == lead + ((img.shape[-1],) if axis == -1 else ())


def test_threshold_otsu_rounds_like_opencv_where_exact_arithmetic_ties(backend):
    hist = symmetric_histograms(600)
    ref = np.array([oracle.otsu_opencv(h) for h in hist])
    decided_by_rounding = ref != np.array([exact_first_argmax_otsu(h) for h in hist])
    assert decided_by_rounding.sum() >= 100  # 170 of 600: the set exercises OpenCV's double rounding
    with portcv.using(backend):
        out = _histogram.otsu_kernel(portcv.asarray(hist))
    np.testing.assert_array_equal(portcv.to_numpy(out), ref)
    with opencv_ipp(False):  # OpenCV's own code (what the IPP-less builds run)
        for h, r in zip(hist[::10], ref[::10]):
            assert opencv_otsu(np.repeat(np.arange(256, dtype=np.uint8), h)[None]) == r


@given(data=images(channels=(None,)))
def test_threshold_otsu_equals_opencv(data):
    img, _ = data
    ours = portcv.to_numpy(color.threshold_otsu(img, channel_axis=None)).reshape(-1)
    with opencv_ipp(False):
        ref = [opencv_otsu(f) for f in frames_of(img, False)]
    np.testing.assert_array_equal(ours, ref)


@given(data=images(channels=(None,)))
def test_threshold_otsu_agrees_with_opencv_ipp_except_at_exact_ties(data):
    img, _ = data
    ours = portcv.to_numpy(color.threshold_otsu(img, channel_axis=None)).reshape(-1)
    with opencv_ipp(True):
        ref = [opencv_otsu(f) for f in frames_of(img, False)]
    for frame, o, r in zip(frames_of(img, False), ours, ref):
        if o != r:  # IPP's rounding may pick the other of two exactly equal maxima, nothing else
            hist = np.bincount(frame.reshape(-1), minlength=256)
            n, s = hist.sum(), (np.arange(256) * hist).sum()

            def variance(t):
                n1, s1 = int(hist[: t + 1].sum()), int((np.arange(t + 1) * hist[: t + 1]).sum())
                return (int(n) * s1 - n1 * int(s)) ** 2, n1 * (int(n) - n1)

            (a, b), (c, d) = variance(int(o)), variance(int(r))
            assert a * d == c * b, (o, r)


def test_threshold_otsu_per_channel_and_on_a_single_value():
    rgb = portcv.data.synthetic_rgb(40, 50, seed=1)
    per_channel = portcv.to_numpy(color.threshold_otsu(rgb))
    with opencv_ipp(False):
        assert per_channel.tolist() == [opencv_otsu(rgb[..., c]) for c in range(3)]
    assert int(color.threshold_otsu(np.full((5, 7), 93, np.uint8))) == 0  # no split: OpenCV's 0


# ---------------------------------------------------------------- binarize
@st.composite
def images_and_thresholds(draw: st.DrawFn, max_h: int = 70, max_w: int = 90) -> tuple:
    img, axis = draw(images(channels=(None, 1, 3), max_h=max_h, max_w=max_w))
    lead = img.shape[:-3] if axis == -1 else img.shape[:-2]
    target = lead + ((img.shape[-1],) if axis == -1 else ())
    if draw(st.booleans()):
        return img, axis, draw(st.integers(0, 255))
    shape = target[draw(st.integers(0, len(target))) :]  # trailing part: broadcasts
    dtype = draw(st.sampled_from([np.int64, np.int32, np.int16, np.uint8, np.uint64]))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.integers(max(info.min, -3), min(info.max, 300) + 1, shape)
    return img, axis, values.astype(dtype)


@given(data=images_and_thresholds())
def test_binarize_same_bits_on_every_backend(backend, data):
    img, axis, threshold = data
    out = matches_numpy(backend, color.binarize, img, threshold, channel_axis=axis)
    assert out.dtype == np.uint8 and out.shape == img.shape


@given(data=images_and_thresholds(max_h=6, max_w=7))
def test_binarize_equals_loop(data):
    img, axis, threshold = data
    t = np.asarray(threshold)
    if t.ndim:
        t = t[..., None, None, :] if axis == -1 else t[..., None, None]
    ref = oracle.binarize(img, np.broadcast_to(t, img.shape))
    np.testing.assert_array_equal(color.binarize(img, threshold, channel_axis=axis), ref)


@given(data=images(channels=(None, 3)), threshold=st.integers(0, 255))
def test_binarize_equals_opencv(data, threshold):
    img, axis = data
    out = portcv.to_numpy(color.binarize(img, threshold, channel_axis=axis))
    for frame, got in zip(frames_of(img, axis == -1), frames_of(out, axis == -1)):
        ref = cv2.threshold(np.ascontiguousarray(frame), threshold, 255, cv2.THRESH_BINARY)[1]
        np.testing.assert_array_equal(got, ref.reshape(got.shape))


def test_binarize_straddling_frames_and_device_thresholds(backend):
    gray = color.rgb_to_gray(portcv.data.synthetic_rgb(67, 91, seed=4))
    frames = np.stack([gray[:17, :19], gray[3:20, 5:24], gray[9:26, 1:20], gray[:17, 2:21]])  # 323-byte frames
    thresholds = np.array([0, 90, 255, 140])
    matches_numpy(backend, color.binarize, frames, thresholds)
    with portcv.using(backend):
        on_device = portcv.asarray(thresholds)
    assert_same_bits(color.binarize(frames, thresholds), color.binarize(frames, on_device))


# ---------------------------------------------------------------- binarize_auto
@given(data=images(channels=(None, 3)), method=st.sampled_from(["two_peaks", "otsu"]))
def test_binarize_auto_same_bits_on_every_backend(backend, data, method):
    img, axis = data
    out = matches_numpy(backend, color.binarize_auto, img, method=method, channel_axis=axis)
    assert out.shape == (img.shape[:-1] if axis == -1 else img.shape)


@given(data=images(channels=(None, 3)))
def test_binarize_auto_is_gray_histogram_threshold_binarize(data):
    img, axis = data
    gray = color.rgb_to_gray(img) if axis == -1 else img
    expected = color.binarize(gray, color.threshold_two_peaks(color.histogram(gray, channel_axis=None)), channel_axis=None)
    assert_same_bits(expected, color.binarize_auto(img, channel_axis=axis))
    with opencv_ipp(False):
        for frame, got in zip(frames_of(np.asarray(gray), False), frames_of(color.binarize_auto(img, method="otsu", channel_axis=axis), False)):
            ref = cv2.threshold(frame, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]
            np.testing.assert_array_equal(got, ref)


def test_binarize_auto_takes_rgba_and_single_channel():
    rgb = portcv.data.synthetic_rgb(30, 41, seed=2)
    rgba = np.concatenate([rgb, np.full(rgb.shape[:-1] + (1,), 7, np.uint8)], axis=-1)
    assert_same_bits(color.binarize_auto(rgb), color.binarize_auto(rgba))
    gray = color.rgb_to_gray(rgb)
    assert_same_bits(color.binarize_auto(gray), color.binarize_auto(gray[..., None]))


def test_binarize_auto_never_reads_the_device():
    """Under jax.jit every value is a tracer: any int() or host copy would raise."""
    jax = pytest.importorskip("jax")
    try:
        portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    img = portcv.data.synthetic_rgb(30, 41, seed=2)
    with portcv.using("jax"):
        for method in ("two_peaks", "otsu"):
            traced = jax.jit(lambda x, m=method: color.binarize_auto(x, method=m))(img)
            assert_same_bits(on_backend("numpy", color.binarize_auto, img, method=method), traced)


# ---------------------------------------------------------------- channel layout
@given(data=images(channels=(None,)))
def test_gray_to_rgb_same_bits_and_equals_opencv(backend, data):
    img, _ = data
    out = matches_numpy(backend, color.gray_to_rgb, img, channel_axis=None)  # a batch of gray frames
    assert out.shape == img.shape + (3,)
    frame = np.ascontiguousarray(frames_of(img, False)[0])
    np.testing.assert_array_equal(frames_of(out, True)[0], cv2.cvtColor(frame, cv2.COLOR_GRAY2RGB))
    assert_same_bits(out, color.gray_to_rgb(img[..., None], channel_axis=-1))


@given(data=images(channels=(3, 4)))
def test_rgb_to_bgr_same_bits_and_equals_opencv(backend, data):
    img, _ = data
    out = matches_numpy(backend, color.rgb_to_bgr, img)
    matches_numpy(backend, color.bgr_to_rgb, img)
    code = cv2.COLOR_RGB2BGR if img.shape[-1] == 3 else cv2.COLOR_RGBA2BGRA
    for frame, got in zip(frames_of(img, True), frames_of(out, True)):
        np.testing.assert_array_equal(got, cv2.cvtColor(np.ascontiguousarray(frame), code))
    assert_same_bits(img, color.bgr_to_rgb(out))


def test_rgb_to_bgr_returns_a_copy():
    img = portcv.data.synthetic_rgb(5, 6)
    out = color.rgb_to_bgr(img)
    out[...] = 0
    assert img.any()


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)
RGB = np.zeros((6, 7, 3), np.uint8)
HIST = np.zeros(256, np.int64)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: color.histogram(GRAY.astype(np.float32)), TypeError, "image must have dtype uint8"),
        (lambda: color.histogram(GRAY[0]), ValueError, "at least 2 dimensions"),
        (lambda: color.histogram(GRAY[:0]), ValueError, "image must not be empty"),
        (lambda: color.histogram(GRAY, bins=3), ValueError, "bins must divide 256"),
        (lambda: color.histogram(GRAY, bins=0), ValueError, "bins must be in"),
        (lambda: color.histogram(GRAY, bins=512), ValueError, "bins must be in"),
        (lambda: color.histogram(GRAY, bins=16.0), TypeError, "bins must be an integer"),
        (lambda: color.histogram(GRAY, bins=float("nan")), TypeError, "bins must be an integer"),
        (lambda: color.histogram(GRAY, channel_axis=0), ValueError, "channel_axis"),
        (lambda: color.threshold_two_peaks(HIST.astype(np.float64)), TypeError, "hist must hold integer"),
        (lambda: color.threshold_two_peaks(np.full(256, np.nan)), TypeError, "hist must hold integer"),
        (lambda: color.threshold_two_peaks(HIST.astype(bool)), TypeError, "hist must hold integer"),
        (lambda: color.threshold_two_peaks([[1] * 256, [1] * 255]), ValueError, "hist must be a rectangular array"),
        (lambda: color.threshold_two_peaks(HIST[:255]), ValueError, "hist must have 256 bins"),
        (lambda: color.threshold_two_peaks(np.int64(3)), TypeError, "hist must be an array"),
        (lambda: color.threshold_two_peaks(np.zeros((0, 256), np.int64)), ValueError, "hist must not be empty"),
        (lambda: color.threshold_two_peaks("hist"), TypeError, "hist must be an array"),
        (lambda: color.threshold_two_peaks(HIST, rule="median"), ValueError, "rule"),
        (lambda: color.threshold_otsu(GRAY.astype(np.int16)), TypeError, "image must have dtype uint8"),
        (lambda: color.threshold_otsu(np.zeros(5, np.uint8)), ValueError, "at least 2 dimensions"),
        (lambda: color.binarize(GRAY, 256), ValueError, "threshold must be in"),
        (lambda: color.binarize(GRAY, -1), ValueError, "threshold must be in"),
        (lambda: color.binarize(GRAY, 1.5), TypeError, "threshold must be an integer"),
        (lambda: color.binarize(GRAY, float("nan")), TypeError, "threshold must be an integer"),
        (lambda: color.binarize(GRAY, True), TypeError, "threshold must be an integer"),
        (lambda: color.binarize(GRAY, None), TypeError, "threshold must be an integer"),
        (lambda: color.binarize(GRAY, np.array([1.5])), TypeError, "threshold must be an integer or an integer array"),
        (lambda: color.binarize(np.zeros((2, 6, 7), np.uint8), np.array([1, 2, 3])), ValueError, "threshold of shape"),
        (lambda: color.binarize(RGB, np.array([1, 2])), ValueError, "threshold of shape"),
        (lambda: color.binarize(GRAY.astype(np.float64), 3), TypeError, "image must have dtype uint8"),
        (lambda: color.binarize_auto(RGB, method="mean"), ValueError, "method"),
        (lambda: color.binarize_auto(np.zeros((6, 7, 2), np.uint8)), ValueError, "1, 3 or 4 channels"),
        (lambda: color.binarize_auto(GRAY[:, :0]), ValueError, "image must not be empty"),
        (lambda: color.gray_to_rgb(RGB, channel_axis=-1), ValueError, "image looks like a colour image"),
        (lambda: color.gray_to_rgb(RGB), ValueError, "its last axis has 3 entries.*rgb_to_gray"),
        (lambda: color.gray_to_rgb(np.zeros((6, 7, 2), np.uint8)), ValueError, "image must be gray: its last axis has 2"),
        (lambda: color.gray_to_rgb(GRAY[0]), ValueError, "at least 2 dimensions"),
        (lambda: color.gray_to_rgb(GRAY.astype(np.float32)), TypeError, "image must have dtype uint8"),
        (lambda: color.rgb_to_bgr(GRAY), ValueError, "at least 3 dimensions"),
        (lambda: color.rgb_to_bgr(np.zeros((6, 7, 2), np.uint8)), ValueError, "3 or 4 channels"),
        (lambda: color.bgr_to_rgb([[1, 2, 3]]), TypeError, "image must have dtype uint8"),
    ],
)
def test_histogram_functions_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
