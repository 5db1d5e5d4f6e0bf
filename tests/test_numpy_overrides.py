"""The NumPy overrides' paths that the per-domain property tests' small images do not reach.

The property tests compare ``numpy`` (the overrides) with ``numpy:readonly`` (the portable
versions) on images of a few dozen pixels, which fit one row band. Here the bands are shrunk to
two rows, so every band boundary (the separable and 2-D filters' and Canny candidates' halo rows, the
median's tile rows, the integral's running rows) lies inside small images, and the bands run on
the thread pool; and the byte-pair histogram of big gray frames gets a frame of its own. Every
override also runs on strided, negatively strided and transposed views of the arrays its public
function passes it (the readonly backend runs the portable versions on contiguous arrays only).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import portcv
import portcv.backends.numpy as host
from portcv._kernel import KERNELS

from .helpers import assert_same_bits


@pytest.fixture(autouse=True, params=["compiled", "vectorized"])
def numpy_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs each override twice: its loops compiled with Numba (the ``cpu``
    extra) and its vectorized NumPy path (``PORTCV_NUMBA=0``, the path without numba)."""
    if request.param == "compiled" and importlib.util.find_spec("numba") is None:
        pytest.skip("the compiled path needs numba (pip install 'portcv[cpu]')")
    monkeypatch.setenv("PORTCV_NUMBA", "1" if request.param == "compiled" else "0")
    return request.param


@pytest.fixture
def two_row_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    real = host.row_bands
    monkeypatch.setattr(host, "row_bands", lambda rows, row_elements, *, planes=1, target=0:
                        real(rows, row_elements, planes=planes, target=2 * row_elements))
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")


def _same_as_portable(name: str, *arrays: np.ndarray, **params: object) -> None:
    # the domains' kernels register on import
    for domain in (portcv.color, portcv.filters, portcv.edges, portcv.transform, portcv.detect):
        assert domain.__all__
    k = KERNELS[name]
    expected = k.portable(portcv.backends.get("numpy").xp, *arrays, **params)
    actual = k.overrides["numpy"].fn(*arrays, **params)
    if isinstance(expected, tuple):
        for e, a in zip(expected, actual, strict=True):
            assert_same_bits(e, a)
    else:
        assert_same_bits(expected, actual)


SHAPES = [((7, 9), False), ((2, 5, 11), False), ((6, 5, 3), True)]


@pytest.mark.usefixtures("two_row_bands")
@pytest.mark.parametrize("shape, has_channels", SHAPES)
def test_banded_overrides_equal_the_portable_versions(shape: tuple, has_channels: bool) -> None:
    """Row bands of two rows give the portable bits for every banded override and border."""
    rng = np.random.default_rng(len(shape))
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    for border in ("reflect101", "replicate", "constant"):
        for kx, ky, finish in (((22, 62, 88, 62, 22), (1, 2, 1), ("shift", 12, 0, "uint8")),
                               ((-1, 0, 1), (3, 10, 3), ("shift", 0, 0, "int16")),
                               ((1,) * 4, (1,) * 3, ("box_multiply", 6, 699051, "uint8"))):
            _same_as_portable("separable_filter", img, kx=kx, ky=ky, has_channels=has_channels, border=border,
                              border_value=9, finish=finish)
        _same_as_portable("convolve2d", img, taps=((0, -1, 2), (5, -9, 1)), has_channels=has_channels,
                          border=border, border_value=9, finish=("shift", 2, 0, "int16"))
        for ksize in (3, 5):
            _same_as_portable("median_filter", img, ksize=ksize, has_channels=has_channels, border=border,
                              border_value=9)
    _same_as_portable("integral", img, has_channels=has_channels, squared=True, dtype="int32")
    if not has_channels:
        gx, gy = (rng.integers(-1020, 1021, shape).astype(np.int16) for _ in range(2))
        for l2 in (False, True):
            _same_as_portable("canny_candidates", gx, gy, low=100 if not l2 else 10**4, high=600 if not l2 else 10**5,
                              l2=l2)


#: (kx, ky, finish) reaching every loop of the separable pass: 1-, 3-, 5- and 7-tap passes (the
#: fused and generic loops), symmetric, antisymmetric, equal and asymmetric taps, 16-bit and
#: 32-bit sums, and every finish (saturating shifts to each dtype, a floor division of negative
#: sums, OpenCV's box multiply and its float32 scale).
_SEPARABLE_CASES = (
    ((22, 62, 88, 62, 22), (1, 4, 6, 4, 1), ("shift", 16, 0, "uint8")),
    ((-1, 0, 1), (1, 2, 1), ("shift", 0, 0, "int16")),
    ((1, -2, 1), (-1, -2, 0, 2, 1), ("shift", 0, 0, "int16")),
    ((1,) * 5, (1,) * 5, ("box_multiply", 13, 335544, "uint8")),
    ((1,) * 17, (1,) * 17, ("box_float32", 289, int(np.float32(1 / 289).view(np.uint32)), "uint8")),
    ((1,), (3, -7, 2, 0, 1, 9, -4), ("floor_div", 7, 0, "uint8")),
    ((3, -7, 2, 0, 1, 9), (2, -3, 4, 5, 1, 1, 1), ("shift", 3, 0, "int16")),
    ((0, 0, 0), (5, 0, 5), ("shift", 1, 0, "uint8")),
    ((120, 900, -4000), (2000, -300, 70, 1), ("shift", 2, 0, "int32")),
    ((40000, 3), (1, 1, 1), ("shift", 20, 0, "uint8")),
)


@pytest.mark.usefixtures("two_row_bands")
@pytest.mark.parametrize("shape, has_channels", [((1, 1), False), ((2, 3), False), ((3, 1), False),
                                                 ((2, 4, 3, 2), True), ((9, 13), False)])
def test_compiled_filters_at_their_edges_equal_the_portable_versions(shape: tuple, has_channels: bool) -> None:
    """The separable pass, the direct 2-D filter and the gradients at the edges of their loops:
    axes shorter than the taps (reflect101 reflecting more than once), every border and a
    constant's value, batches of channels, read-only inputs, every finish, tap length and sum
    type (``_SEPARABLE_CASES``), rows of zero taps, on images of noise and of 0 / 255 (the
    saturating sums)."""
    rng = np.random.default_rng(sum(shape))
    noise = rng.integers(0, 256, shape, dtype=np.uint8)
    binary = (rng.integers(0, 2, shape) * 255).astype(np.uint8)
    binary.flags.writeable = False
    for img in (noise, binary):
        for border in ("reflect101", "replicate", "constant"):
            for kx, ky, finish in _SEPARABLE_CASES:
                _same_as_portable("separable_filter", img, kx=kx, ky=ky, has_channels=has_channels, border=border,
                                  border_value=200, finish=finish)
            for taps, finish in ((((0, -1, 2), (0, 0, 0), (5, -9, 1)), ("shift", 2, 0, "int16")),
                                 (((1, 4, 6, 4, 1),) * 5, ("shift", 8, 0, "uint8")),
                                 (((3, -1),), ("floor_div", 3, 0, "int16")),
                                 (((0,) * 7,) * 2, ("shift", 0, 0, "int32")),
                                 ((tuple(range(-3, 4)),) * 4, ("box_multiply", 3, 1 << 21, "uint8"))):
                _same_as_portable("convolve2d", img, taps=taps, has_channels=has_channels, border=border,
                                  border_value=200, finish=finish)
            for ksize in (3, -1, 1, 5, 7):
                _same_as_portable("gradients", img, ksize=ksize, has_channels=has_channels, border=border)


def test_big_frames_equal_the_portable_versions() -> None:
    """The byte-pair histogram of gray frames of 2**16 pixels or more (an odd count here), and
    rgb_to_gray over more than one of its bands, give the portable bits."""
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (2, 257, 257), dtype=np.uint8)
    for bins in (256, 16):
        _same_as_portable("histogram", gray, bins=bins, has_channels=False)
    rgb = rng.integers(0, 256, (131, 129, 3), dtype=np.uint8)
    for method in ("weighted", "average"):
        _same_as_portable("rgb_to_gray", rgb, method=method)


@pytest.mark.parametrize("threads", ["2", "3"])
def test_integral_in_bands_of_a_plane_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch,
                                                                  threads: str) -> None:
    """The compiled integral split into bands of a few rows (each band's first row from the
    column sums above it), with channels, batches of fewer planes than threads, single rows and
    columns, both sum types and the squares, gives the portable bits."""
    import portcv.transform._integral as integral

    monkeypatch.setattr(integral, "NUMBA_BAND_PIXELS", 1)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", threads)
    rng = np.random.default_rng(21)
    for shape, has_channels in (((9, 7), False), ((1, 6), False), ((5, 1), False), ((2, 8, 5), False),
                                ((7, 4, 3), True), ((2, 5, 3, 2), True), ((3, 3), False)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        for dtype in ("int32", "int64"):
            for squared in (False, True):
                _same_as_portable("integral", img, has_channels=has_channels, squared=squared, dtype=dtype)
    _same_as_portable("integral", np.full((6, 5), 255, np.uint8), has_channels=False, squared=True, dtype="int32")


def test_resize_halving_in_small_bands_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled 2x reduction in bands of a few output pixels (a band ending inside a plane
    of a batch), with odd sizes (the last row and column dropped), 1 to 4 channels and both
    roundings, gives the portable bits."""
    import portcv.transform._resize as resize

    monkeypatch.setattr(resize, "NUMBA_BAND_PIXELS", 5)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")
    rng = np.random.default_rng(23)
    for shape, has_channels in (((8, 10), False), ((9, 11), False), ((3, 7, 6), False), ((2, 2), False),
                                ((6, 8, 3), True), ((7, 5, 2), True), ((2, 4, 6, 4), True)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        h, w = shape[-3:-1] if has_channels else shape[-2:]
        for arith in ("area2_up", "area2_even"):
            _same_as_portable("resize", img, arith=arith, size=(w // 2, h // 2), inv_scale=(2.0, 2.0),
                              has_channels=has_channels)


def test_histogram_in_small_bands_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled histogram in bands of a few pixels (a frame's counts summed over its bands;
    bands that do not fill the four sub-histograms evenly), with channels, batches, empty
    frames and every bin count, gives the portable bits."""
    import portcv.color._histogram as histogram

    monkeypatch.setattr(histogram, "NUMBA_BAND_PIXELS", 7)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")
    rng = np.random.default_rng(29)
    for shape, has_channels in (((7, 9), False), ((2, 5, 11), False), ((1, 1), False), ((3, 0, 4), False),
                                ((6, 5, 3), True), ((2, 3, 7, 2), True), ((4, 3, 4), True)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        for bins in (256, 16, 1):
            _same_as_portable("histogram", img, bins=bins, has_channels=has_channels)
    _same_as_portable("histogram", np.full((9, 9), 255, np.uint8), bins=256, has_channels=False)


@pytest.mark.parametrize("rows", [1, 2, 4, 32])
def test_median_circuits_in_small_bands_equal_the_portable_version(monkeypatch: pytest.MonkeyPatch,
                                                                  rows: int) -> None:
    """The compiled circuits (generated straight-line loops, two output rows per pass) in bands
    of a few rows over two threads, on odd heights (the extra padded row cropped), tiny and wide
    images, batches, channels, non-contiguous views and every border (a reflect101 pad longer
    than the image), give the portable bits."""
    import portcv.filters._median as median

    monkeypatch.setattr(median, "NUMBA_CIRCUIT_ROWS", rows)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")
    rng = np.random.default_rng(31)
    images = [(rng.integers(0, 256, shape, dtype=np.uint8), has_channels)
              for shape, has_channels in (((7, 9), False), ((1, 1), False), ((2, 3), False), ((3, 70), False),
                                          ((2, 13, 67), False), ((5, 1100), False), ((6, 5, 3), True),
                                          ((2, 9, 17, 2), True))]
    images += [(make(images[4][0][0]), False) for make in LAYOUTS.values()]  # non-contiguous views
    for img, has_channels in images:
        for ksize in (3, 5):
            for border in ("reflect101", "replicate", "constant"):
                _same_as_portable("median_filter", img, ksize=ksize, has_channels=has_channels, border=border,
                                  border_value=9)


@pytest.mark.parametrize("rows", [1, 3, 64])
def test_median_sliding_histogram_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """The compiled sliding-histogram median (ksize 7 to 15) in bands of a few rows over two
    threads, on images narrower and shorter than the window (pads past the image, reflected more
    than once), batches, channels, every border, and few-valued images (the median walking over
    empty and tall bins), gives the portable bits; the vectorized path runs the portable count."""
    import portcv.filters._median as median

    monkeypatch.setattr(median, "NUMBA_HUANG_ROWS", rows)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")
    rng = np.random.default_rng(41)
    images = [(rng.integers(0, 256, shape, dtype=np.uint8), has_channels)
              for shape, has_channels in (((9, 11), False), ((1, 1), False), ((3, 20), False), ((2, 6, 5), False),
                                          ((5, 7, 3), True))]
    images.append(((rng.integers(0, 4, (17, 19)) * 60).astype(np.uint8), False))
    images += [(make(images[0][0]), False) for make in LAYOUTS.values()]  # non-contiguous views
    for img, has_channels in images:
        for ksize in (7, 15) if img.size > 50 else (7, 9, 15):
            for border in ("reflect101", "replicate", "constant"):
                _same_as_portable("median_filter", img, ksize=ksize, has_channels=has_channels, border=border,
                                  border_value=9)


def test_integral_resize_histogram_median_take_read_only_inputs() -> None:
    """A read-only frame (a memory-mapped file, a frame a decoder owns) goes through the
    compiled loops (Numba types it apart from a writable one) and gives the portable bits."""
    img = np.random.default_rng(37).integers(0, 256, (2, 37, 42), dtype=np.uint8)
    img.setflags(write=False)
    _same_as_portable("integral", img, has_channels=False, squared=True, dtype="int64")
    _same_as_portable("resize", img, arith="area2_even", size=(21, 18), inv_scale=(2.0, 2.0), has_channels=False)
    _same_as_portable("histogram", img, bins=64, has_channels=False)
    for ksize in (3, 5, 7):
        _same_as_portable("median_filter", img, ksize=ksize, has_channels=False, border="reflect101", border_value=0)


@pytest.mark.usefixtures("two_row_bands")
def test_yuv420_in_small_bands_equals_the_portable_version() -> None:
    """YUV 4:2:0 to RGB in bands of two block rows on two threads, over batches (a band never
    crosses a frame), for every layout, chroma order and channel order: I420 frames whose W/2 is
    odd (chroma rows starting mid-row), the smallest frame, and a read-only batch."""
    rng = np.random.default_rng(56)
    batch = rng.integers(0, 256, (2, 3, 9, 4), dtype=np.uint8)
    batch.flags.writeable = False
    for yuv in (rng.integers(0, 256, (2, 63, 44), dtype=np.uint8), rng.integers(0, 256, (30, 18), dtype=np.uint8),
                rng.integers(0, 256, (3, 2), dtype=np.uint8), batch):
        for layout in ("nv12", "i420"):
            for chroma_order in ("uv", "vu"):
                for channel_order in ("rgb", "bgr"):
                    _same_as_portable("yuv420_to_rgb", yuv, layout=layout, chroma_order=chroma_order,
                                      channel_order=channel_order)


@pytest.mark.usefixtures("two_row_bands")
def test_mct_overrides_in_small_bands_equal_the_portable_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCT transform in two-row bands over a batch of planes, and the MCT stage sums in bands
    of 7 windows on two threads, give the portable bits."""
    import portcv.detect._mct._mct as mct_detector

    rng = np.random.default_rng(5)
    for shape in ((3, 3), (9, 4), (2, 7, 6)):
        _same_as_portable("mct", rng.integers(0, 256, shape, dtype=np.uint8))
    _same_as_portable("mct", np.full((5, 8), 77, np.uint8))  # ties: 9 I == S everywhere, code 0
    monkeypatch.setattr(mct_detector, "STAGE_SUMS_BAND", 7)
    codes = rng.integers(0, 511, 3000).astype(np.uint16)
    offsets = np.sort(rng.integers(0, 2000, 61)).astype(np.int32)
    pos_off = rng.integers(0, 999, 30).astype(np.int32)
    lut = rng.integers(-32767, 32768, (30, 512)).astype(np.int16).reshape(-1)
    for begin, end in ((0, 30), (4, 5), (29, 30)):
        _same_as_portable("mct_stage_sums", codes, offsets, pos_off, lut, begin=begin, end=end)


@pytest.mark.usefixtures("two_row_bands")
def test_mct_segment_drops_only_windows_that_cannot_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The NumPy segment drops a window once its partial sum exceeds the threshold minus the
    smallest sum the stage's other positions can add (here checked every 3 positions, bands of 7
    slots on two threads): the portable flags for long and short stages, an empty stage,
    thresholds at int32's ends, and thresholds that keep a few windows to the last position."""
    import portcv.detect._mct._mct as mct_detector

    monkeypatch.setattr(mct_detector, "STAGE_SUMS_BAND", 7)
    monkeypatch.setattr(mct_detector, "SEGMENT_CHECK_EVERY", 3)
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 511, 4000).astype(np.uint16)
    offsets = rng.integers(0, 3000, 300).astype(np.int32)
    plan = np.sort(rng.choice(300, 200, replace=False)).astype(np.int32)
    pos_off = rng.integers(0, 999, 40).astype(np.int32)
    lut = rng.integers(-400, 400, (40, 512)).astype(np.int16)
    lut[::5, 7] = -32767  # a low entry few codes reach: a weak bound at those positions
    sums = [lut[k][codes[offsets[plan] + pos_off[k]]].astype(np.int64) for k in range(40)]
    near = int(np.sort(np.sum(sums[5:40], axis=0))[150])  # about a quarter of the windows pass
    i32 = np.iinfo(np.int32)
    for thresholds, stages, count in (
        ([0, 100, near], ((0, (0, 5)), (1, (5, 5)), (2, (5, 40))), 180),
        ([i32.max, i32.min, 0], ((0, (0, 40)), (1, (3, 4)), (2, (4, 9))), 200),
        ([near, -1, 0], ((0, (5, 40)), (1, (9, 9))), 173),
        ([0], ((0, (0, 40)),), 0),
    ):
        th = np.array(thresholds, np.int32)
        expected = mct_detector.segment_alive_kernel.portable(
            np, codes, offsets, plan, np.int32(count), pos_off, lut.reshape(-1), th, stages=stages)
        actual = mct_detector.segment_alive_kernel.overrides["numpy"].fn(
            codes, offsets, plan, np.int32(count), pos_off, lut.reshape(-1), th, stages=stages)
        assert_same_bits(expected, actual)
    # the first case keeps some windows and drops others
    th = np.array([0, 100, near], np.int32)
    flags = mct_detector.segment_alive_kernel.portable(np, codes, offsets, plan, np.int32(200), pos_off,
                                                       lut.reshape(-1), th, stages=((2, (5, 40)),))
    assert 0 < int(flags.sum()) < 200


@pytest.mark.parametrize("variant", ["pseudocode", "listing"])
def test_detector_in_small_row_bands_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch,
                                                                 variant: str) -> None:
    """The edge detector in bands of the fewest rows its halo allows (a band's own border rows and
    the apron's reach are the cases), on two threads, gives the portable bits."""
    import portcv.edges._edges as edges

    monkeypatch.setattr(edges, "DETECT_BAND_PIXELS", 1)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", "2")
    rng = np.random.default_rng(4)
    frames = (portcv.data.synthetic_rgb(130, 41, seed=3)[..., 1], rng.integers(0, 256, (2, 67, 23), dtype=np.uint8))
    for img in frames:
        for blur in ((), (16, 64, 96, 64, 16)):
            for alpha in (0, 2, 3):
                for border in ("reflect101", "constant"):
                    _same_as_portable("edges_detect", img, blur_taps=blur, low_sq=400, high_sq=3600, alpha=alpha,
                                      variant=variant, border=border)


@pytest.mark.parametrize("threads", ["2", "7"])
def test_hysteresis_in_small_row_bands_equals_the_portable_version(monkeypatch: pytest.MonkeyPatch,
                                                                   threads: str) -> None:
    """Canny's hysteresis labelled in bands of a few rows (components crossing every cut, joined
    through the label pairs along it, diagonally too), over a batch, gives the portable edges."""
    import portcv.edges._edges as edges

    monkeypatch.setattr(edges, "HYSTERESIS_MIN_BAND_ROWS", 1)
    monkeypatch.setenv("PORTCV_NUMPY_THREADS", threads)
    rng = np.random.default_rng(11)
    for shape, density in (((23, 31), 0.5), ((3, 17, 9), 0.7), ((40, 5), 0.3), ((1, 1), 1.0)):
        candidate = rng.random(shape) < density
        state = np.where(candidate, np.where(rng.random(shape) < 0.03, 2, 1), 0).astype(np.uint8)
        _same_as_portable("canny_hysteresis", state)
    diagonal = np.zeros((6, 6), np.uint8)  # one component, a diagonal crossing every one-row cut
    diagonal[np.arange(6), np.arange(6)] = 1
    diagonal[5, 5] = 2
    _same_as_portable("canny_hysteresis", diagonal)
    _same_as_portable("canny_hysteresis", diagonal[:, ::-1].copy())


@pytest.mark.usefixtures("two_row_bands")
def test_canny_candidates_over_the_gradient_range_equal_the_portable_version(numpy_path: str) -> None:
    """Canny's candidates on gradients up to the kernel's bound (|g| <= 24480, aperture 7), ties
    between neighbours, and thresholds beyond int32 and negative, in bands of two rows over a
    batch, one row and one column: the portable states. The compiled loop also over all of int16
    (tangent sums that wrap in int32 for |gx| > 27146, L2 magnitudes that wrap at
    gx = gy = -32768), where the vectorized path's uint16 magnitude does not reach."""
    rng = np.random.default_rng(23)
    for bound in (24480, 32768) if numpy_path == "compiled" else (24480,):
        gx = rng.integers(-bound, min(bound + 1, 32768), (2, 9, 13)).astype(np.int16)
        gy = rng.integers(-bound, min(bound + 1, 32768), (2, 9, 13)).astype(np.int16)
        gx[0, 4, :5] = gy[0, 4, :5] = -bound
        gx[1, ::2, 3:] = bound - 1  # equal magnitudes along rows: the >= and > ties
        gy[1, :, 6:] = rng.integers(-3, 4, (9, 7))
        ties = (rng.integers(-2, 3, (7, 8)).astype(np.int16), rng.integers(-2, 3, (7, 8)).astype(np.int16))
        for t in ties:
            t.flags.writeable = False  # read-only inputs
        for a, b in ((gx, gy), ties, (gx[0, :1], gy[0, :1]), (gx[1, :, :1], gy[1, :, :1])):
            for l2 in (False, True):
                for low, high in ((0, 0), (-5, 40000), (2**31 - 1, 2**31), (10**4, 2**40), (-2**31, 1)):
                    _same_as_portable("canny_candidates", a, b, low=low, high=high, l2=l2)


@pytest.mark.parametrize("shape", [(40, 37), (3, 12, 10), (1, 9), (9, 1)])
def test_hysteresis_floods_equal_the_portable_version(shape: tuple) -> None:
    """Canny's hysteresis: a weak snake through the whole frame from one strong end (a flood as
    deep as the frame), components on every border and corner, strong pixels inside one
    component and in none, states other than 0, 1 and 2 (weak), a read-only state, and a batch
    of frames on two threads: the portable edges."""
    rng = np.random.default_rng(len(shape) + shape[-1])
    h, w = shape[-2], shape[-1]
    snake = np.zeros((h, w), np.uint8)
    snake[::2] = 1
    snake[1::4, -1] = 1
    snake[3::4, 0] = 1
    snake[-1, -1] = 2
    noise = np.where(rng.random(shape) < 0.6, np.where(rng.random(shape) < 0.05, 2, 1), 0).astype(np.uint8)
    noise[..., 0, 0] = noise[..., -1, -1] = noise[..., 0, -1] = noise[..., -1, 0] = 2
    noise[rng.random(shape) < 0.05] = 7
    read_only = noise.copy()
    read_only.flags.writeable = False
    for state in (snake, noise, np.full(shape, 2, np.uint8), np.ones(shape, np.uint8), read_only):
        _same_as_portable("canny_hysteresis", state)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PORTCV_NUMPY_THREADS", "2")
        _same_as_portable("canny_hysteresis", np.stack([noise.reshape(-1, h, w)[-1], snake, snake * 0]))


# --------------------------------------------------------------------------------------------
# Every override on non-contiguous inputs
# --------------------------------------------------------------------------------------------
def _strided(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a view whose last axis has a stride of two elements (a channel slice)."""
    buffer = np.zeros(a.shape + (2,), a.dtype)
    buffer[..., 0] = a
    return buffer[..., 0]


def _negative(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a view with negative strides on every axis."""
    return np.flip(np.flip(a).copy())


def _transposed(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a transposed layout (Fortran order: the transpose of a C array)."""
    return np.asfortranarray(a)


LAYOUTS = {"strided": _strided, "negative": _negative, "transposed": _transposed}


def _face_cascade_detector(name: str = "haarcascade_frontalface_default.xml") -> object:
    return portcv.detect.CascadeDetector(portcv.detect.load_cascade(name).truncated(3))


def _component_labels() -> object:
    from portcv.detect._scan._kernels import component_labels_kernel

    near = _RNG.random((40, 40)) < 0.04
    return component_labels_kernel(near | near.T)


def _sent(encoded: tuple) -> tuple:
    count, diffs, positions, _ = encoded
    return diffs, positions, count


def _propagate_scene() -> tuple:
    rng = np.random.default_rng(7)
    depth = (40 + 2 * rng.integers(0, 3, (9, 11))).astype(np.uint8)
    K = np.array([[8.0, 0, 5.0], [0, 8.0, 4.0], [0, 0, 1]])
    return depth, K, K, np.eye(3), np.array([1.0, 0.0, 2.0]), (9, 11)


#: kernel -> calls of public functions that reach its NumPy override's fast paths (with the
#: bands, blocks and checks shrunk by the ``small_host_blocks`` fixture), on images of noise; the
#: kernel itself where only a non-host backend's schedule reaches the NumPy override.
_RNG = np.random.default_rng(53)
_GRAY = _RNG.integers(0, 256, (23, 29), dtype=np.uint8)
_RGB = _RNG.integers(0, 256, (17, 19, 3), dtype=np.uint8)
_BATCH = _RNG.integers(0, 256, (2, 22, 26), dtype=np.uint8)
_TALL = _RNG.integers(0, 256, (2, 61, 21), dtype=np.uint8)
_WIDE_GALLERY = _RNG.integers(0, 256, (4100, 4), dtype=np.uint8)
_FEATURES = _RNG.integers(0, 256, (5, 40), dtype=np.uint8), _RNG.integers(0, 256, (9, 40), dtype=np.uint8)
OVERRIDE_DRIVERS = {
    "canny_candidates": lambda: portcv.edges.canny(_BATCH, 40, 120, channel_axis=None),
    "canny_hysteresis": lambda: portcv.edges.canny(_BATCH, 40, 120, channel_axis=None),
    "cascade_candidates": lambda: _face_cascade_detector().detect(_RNG.integers(0, 256, (48, 56), dtype=np.uint8),
                                                                 min_neighbors=0, scale_factor=1.25, split_stage=1),
    "cascade_compact": lambda: OVERRIDE_DRIVERS["cascade_candidates"](),
    "cascade_component_labels": lambda: _component_labels(),  # the device grouping's (CuPy's schedule)
    "cascade_evaluate": lambda: _face_cascade_detector("haarcascade_frontalface_alt2.xml").detect(  # trees
        _RNG.integers(0, 256, (48, 56), dtype=np.uint8), min_neighbors=0, scale_factor=1.25),
    "cascade_evaluate_plan": lambda: OVERRIDE_DRIVERS["cascade_candidates"](),
    "cascade_integrals": lambda: OVERRIDE_DRIVERS["cascade_evaluate"](),
    "cascade_pyramid": lambda: OVERRIDE_DRIVERS["cascade_evaluate"](),
    "chi_square": lambda: (portcv.recognize.chi_square(*_FEATURES, max_count=255),  # a table of the terms
                           portcv.recognize.chi_square(*(f.astype(np.uint16) for f in _FEATURES))),  # float64
    "convolve2d": lambda: portcv.filters.convolve2d(_RGB, np.array([[0, -1, 2], [5, -9, 1]]), 2, dtype="int16"),
    "delta_decode": lambda: portcv.codec.delta_decode(_GRAY, *_sent(portcv.codec.delta_encode(_GRAY ^ 64, _GRAY))),
    "delta_encode": lambda: portcv.codec.delta_encode(_GRAY ^ 64, _GRAY),
    "edges_detect": lambda: portcv.edges.detect(_TALL, 20, 60, channel_axis=None),
    "gradients": lambda: portcv.filters.gradients(_RGB),
    "histogram": lambda: (portcv.color.histogram(_RNG.integers(0, 256, (257, 257), dtype=np.uint8)),
                          portcv.color.histogram(_RGB, bins=16)),
    "integral": lambda: portcv.transform.integral(_RGB, squared=True),
    "joint_bilateral": lambda: portcv.filters.joint_bilateral(_RGB, _RGB, 5, 20.0, 3.0),
    "lexicographic_kmin": lambda: portcv.distance.nearest(_FEATURES[0][:, :4], _WIDE_GALLERY),  # two tiles
    "local_binary_pattern": lambda: portcv.recognize.local_binary_pattern(_GRAY, 8, 1.0),
    "mct": lambda: portcv.detect.mct(_BATCH),
    "mct_segment_alive": lambda: portcv.detect.MCTDetector.default().detect(
        portcv.data.synthetic_rgb(64, 72, seed=1)[..., 1], min_neighbors=0),
    # the detector's segments reach the stage sums only on the vectorized path: called directly
    "mct_stage_sums": lambda: KERNELS["mct_stage_sums"](
        _RNG.integers(0, 511, 3000).astype(np.uint16), np.sort(_RNG.integers(0, 2000, 61)).astype(np.int32),
        _RNG.integers(0, 999, 30).astype(np.int32), _RNG.integers(-32767, 32768, 30 * 512).astype(np.int16),
        begin=2, end=29),
    "median_filter": lambda: (portcv.filters.median_filter(_RGB, 3), portcv.filters.median_filter(_GRAY, 5)),
    "region_histograms": lambda: portcv.recognize.lbp_histograms(_RNG.integers(0, 256, (42, 36), dtype=np.uint8),
                                                                  region_size=(12, 14)),
    "resize": lambda: (portcv.transform.resize(_RNG.integers(0, 256, (22, 26, 3), dtype=np.uint8), size=(13, 11)),
                       portcv.transform.resize(_RNG.integers(0, 256, (22, 26, 2), dtype=np.uint8), size=(13, 11))),
    "yuv420_to_rgb": lambda: (portcv.color.nv12_to_rgb(_RNG.integers(0, 256, (2, 63, 44), dtype=np.uint8)),
                              portcv.color.i420_to_bgr(_RNG.integers(0, 256, (30, 18), dtype=np.uint8))),
    "rgb_to_gray": lambda: portcv.color.rgb_to_gray(_RNG.integers(0, 256, (131, 129, 3), dtype=np.uint8)),
    "separable_filter": lambda: portcv.filters.gaussian_blur(_RGB, ksize=5, sigma=1.2),
    "spline_prefilter": lambda: portcv.transform.zoom(_BATCH, 1.5),
    "spline_zoom": lambda: portcv.transform.zoom(_BATCH, 1.5),
    "sqeuclidean": lambda: portcv.distance.sqeuclidean(*_FEATURES),
    "zbuffer_min": lambda: portcv.depth.propagate(*_propagate_scene()),
}


@pytest.fixture
def small_host_blocks(monkeypatch: pytest.MonkeyPatch, two_row_bands: None) -> None:
    """Every NumPy override's bands and blocks shrunk, so small images take the banded paths."""
    import portcv.detect._cascade._cascade as cascade
    import portcv.detect._mct._mct as mct_detector
    import portcv.edges._edges as edges
    import portcv.transform._zoom as zoom

    monkeypatch.setattr(cascade, "NUMPY_DENSE_MIN", 16)
    monkeypatch.setattr(edges, "DETECT_BAND_PIXELS", 1)
    monkeypatch.setattr(edges, "HYSTERESIS_MIN_BAND_ROWS", 1)
    monkeypatch.setattr(zoom, "NUMPY_BLOCK", 64)
    monkeypatch.setattr(mct_detector, "STAGE_SUMS_BAND", 7)
    monkeypatch.setattr(mct_detector, "SEGMENT_CHECK_EVERY", 3)


def _recorded_calls(name: str, monkeypatch: pytest.MonkeyPatch, limit: int = 2) -> list[tuple[tuple, dict]]:
    """The first ``limit`` (arrays, params) the driver of ``name`` passes to the NumPy override."""
    from portcv._kernel import Override

    k = KERNELS[name]
    original = k.overrides["numpy"]
    calls: list[tuple[tuple, dict]] = []

    def record(*arrays: object, **params: object) -> object:
        if len(calls) < limit:
            calls.append((tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arrays), params))
        return original.fn(*arrays, **params)

    monkeypatch.setitem(k.overrides, "numpy", Override(record, original.supports))
    with portcv.using("numpy"):
        OVERRIDE_DRIVERS[name]()
    monkeypatch.setitem(k.overrides, "numpy", original)
    return calls


def test_every_numpy_override_has_a_non_contiguous_driver() -> None:
    """A new NumPy override cannot be missed by the non-contiguous test below."""
    for domain in portcv.DOMAINS:
        getattr(portcv, domain)  # every domain's kernels registered
    overridden = {name for name, k in KERNELS.items() if "numpy" in k.overrides}
    assert overridden == set(OVERRIDE_DRIVERS)


@pytest.mark.usefixtures("small_host_blocks")
@pytest.mark.parametrize("name", sorted(OVERRIDE_DRIVERS))
def test_numpy_overrides_on_non_contiguous_inputs_equal_the_portable_versions(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each NumPy override, given the arrays its public function passes it as strided, negatively
    strided and transposed views (the same values), returns the portable version's bits and leaves
    them unchanged: an override must not assume a C-contiguous input (a strided gray plane of
    2**16 pixels or more broke the histogram's uint16 view)."""
    calls = _recorded_calls(name, monkeypatch)
    assert calls, f"the driver of {name!r} did not reach its NumPy override"
    k = KERNELS[name]
    xp = portcv.backends.get("numpy").xp
    for arrays, params in calls:
        expected = k.portable(xp, *arrays, **params)
        for layout, make in LAYOUTS.items():
            views = tuple(make(a) if isinstance(a, np.ndarray) and a.ndim >= 1 else a for a in arrays)
            if not any(isinstance(v, np.ndarray) and not v.flags.c_contiguous for v in views):
                assert layout == "transposed"  # 1-D arrays only: their transpose is themselves
                continue
            actual = k.overrides["numpy"].fn(*views, **params)
            for before, after in zip(arrays, views):
                if isinstance(before, np.ndarray):
                    assert np.array_equal(before, after), f"{name} ({layout}) changed an input"
            if isinstance(expected, tuple):
                for e, a in zip(expected, actual, strict=True):
                    assert_same_bits(e, a)
            else:
                assert_same_bits(expected, actual)


@pytest.mark.parametrize("name", ["haarcascade_frontalface_default.xml", "lbpcascade_frontalface_opencv.xml"])
def test_cascade_stages_window_by_window_equal_the_portable_version(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled evaluation takes each window through its stump stages and stops at the first
    it fails: on a real face (scikit-image's astronaut), the statuses of the calls a detection
    makes, of a stage range that starts mid-cascade, and without the variance check, are the
    portable version's."""
    skimage_data = pytest.importorskip("skimage.data")
    face = np.ascontiguousarray(skimage_data.astronaut()[20:180:2, 150:310:2, 0])
    detector = portcv.detect.CascadeDetector(portcv.detect.load_cascade(name).truncated(6))
    k = KERNELS["cascade_evaluate"]
    original = k.overrides["numpy"]
    calls: list[tuple[tuple, dict]] = []

    def record(*arrays: object, **params: object) -> object:
        calls.append((arrays, dict(params)))
        return original.fn(*arrays, **params)

    from portcv._kernel import Override

    monkeypatch.setitem(k.overrides, "numpy", Override(record, original.supports))
    with portcv.using("numpy"):
        detector.detect(face)
    monkeypatch.setitem(k.overrides, "numpy", original)
    statuses = []
    for arrays, params in calls:
        variants = [params, {**params, "stage_begin": min(2, params["stage_end"]), "check_variance": False}]
        for p in variants:
            expected = k.portable(portcv.backends.get("numpy").xp, *arrays, **p)
            actual = original.fn(*arrays, **p)
            assert_same_bits(expected, actual)
            statuses.append(np.asarray(actual))
    every = np.concatenate(statuses)
    assert (every == 1).any() and (every < 0).any()  # windows that pass every stage, and rejects at later stages
