"""portcv.edges: gradient, magnitude, direction_sector, detect (Rice, Algorithm 1), canny."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
from portcv import edges

from ..helpers import assert_same_bits, borders, images, matches_numpy, on_backend
from . import oracle_edges as oracle

cv2 = pytest.importorskip("cv2")

gray = images(channels=(None,))
small_gray = images(channels=(None,), max_h=20, max_w=24, batch=False)
variants = st.sampled_from(["pseudocode", "listing"])
# Small and large aprons; 10 and 16 take the CUDA kernel's 16- and 8-row tiles.
alphas = st.sampled_from([0, 1, 2, 2, 3, 5, 10, 16])
# Integers and fractions; magnitudes of noise reach ~1400, of low-contrast images ~100.
thresholds = st.one_of(st.integers(0, 600), st.floats(0, 600, allow_nan=False)).map(float)


def opencv_g_theta(img: np.ndarray, ksize: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The paper's G and theta of one gray frame, from OpenCV's blur and Sobel (not portcv's)."""
    blurred = cv2.GaussianBlur(img, (ksize, ksize), 0)
    gx = cv2.Sobel(blurred, cv2.CV_16S, 1, 0, ksize=3)
    gy = cv2.Sobel(blurred, cv2.CV_16S, 0, 1, ksize=3)
    return oracle.magnitude_and_angle(gx, gy)


def np_sector_oracle(gx: np.ndarray, gy: np.ndarray, closed_at_pi: bool = True) -> np.ndarray:
    """Vectorized ``oracle.sector_code``: the paper's angle intervals on float64 atan2."""
    t = np.arctan2(gy.astype(np.float64), gx.astype(np.float64))
    pi = math.pi
    upper = (5 * pi / 6 < t) & ((t <= pi) if closed_at_pi else (t < pi))
    horizontal = ((-pi / 6 < t) & (t < pi / 6)) | ((-pi < t) & (t < -5 * pi / 6)) | upper
    pos = ((pi / 6 < t) & (t < pi / 3)) | ((-5 * pi / 6 < t) & (t < -2 * pi / 3))
    vertical = ((pi / 3 < t) & (t < 2 * pi / 3)) | ((-2 * pi / 3 < t) & (t < -pi / 3))
    neg = ((2 * pi / 3 < t) & (t < 5 * pi / 6)) | ((-pi / 3 < t) & (t < -pi / 6))
    code = np.select([horizontal, pos, vertical, neg], [0, 1, 2, 3], 4)
    return np.where((gx == 0) & (gy == 0), 4, code).astype(np.uint8)


# ---------------------------------------------------------------- every backend == NumPy
#: Under JAX every example compiles its own (shape, parameters) pipeline (~2 s on a CPU core):
#: the two end-to-end tests run half the profile's examples.
END_TO_END = settings(max_examples=max(10, settings.default.max_examples // 2))


@END_TO_END
@given(data=gray, t_low=thresholds, t_high=thresholds, alpha=alphas, variant=variants, border=borders,
       blur=st.sampled_from([(1, None), (3, None), (3, None), (5, None), (5, 1.7), (0, 0.8)]))
def test_detect_same_bits_on_every_backend(backend, data, t_low, t_high, alpha, variant, border, blur):
    img, _ = data
    ksize, sigma = blur
    out = matches_numpy(backend, edges.detect, img, t_low, t_high, alpha=alpha, ksize=ksize, sigma=sigma,
                        variant=variant, border=border, channel_axis=None)
    assert set(np.unique(out).tolist()) <= {0, 255}


@END_TO_END
@given(data=gray, t_low=thresholds, t_high=thresholds, ksize=st.sampled_from([3, 5, 7]), l2=st.booleans())
def test_canny_same_bits_on_every_backend(backend, data, t_low, t_high, ksize, l2):
    img, _ = data
    scale = 1 if ksize == 3 else 8
    matches_numpy(backend, edges.canny, img, t_low * scale, t_high * scale, ksize=ksize, l2gradient=l2,
                  channel_axis=None)


@pytest.mark.parametrize("shape, ksize, border", [((37, 45), 3, "reflect101"), ((2, 3, 70), 5, "constant")])
def test_gradient_same_bits_on_every_backend(backend, shape, ksize, border):
    """A thin wrapper of filters.gradients (property-tested there) with no channel axis."""
    img = np.random.default_rng(7).integers(0, 256, shape, dtype=np.uint8)
    gx, gy = on_backend("numpy", edges.gradient, img, ksize=ksize, border=border)
    bx, by = on_backend(backend, edges.gradient, img, ksize=ksize, border=border)
    assert_same_bits(gx, bx)
    assert_same_bits(gy, by)


int16s = st.integers(0, 2**32 - 1).map(
    lambda seed: np.random.default_rng(seed).integers(-32768, 32768, (2, 3, 37), dtype=np.int16)
)


@given(gx=int16s, gy=int16s, kind=st.sampled_from(["l2", "l1"]))
def test_magnitude_same_bits_on_every_backend(backend, gx, gy, kind):
    gx[0, 0, :4], gy[0, 0, :4] = (-32768, -32768, 0, 32767), (-32768, 0, 0, 32767)
    matches_numpy(backend, edges.magnitude, gx, gy, kind=kind)


@pytest.mark.parametrize("border", portcv.filters.BORDERS)
@pytest.mark.parametrize("ksize", [3, 7, 9])
def test_detect_across_cuda_tiles_and_image_borders(backend, border, ksize):
    """Several 128-column tiles, a width that is no multiple of 4, every border: the CUDA
    detector low-passes inside its own tile up to 7 taps (and refills the blurred image's border
    cells), longer kernels run the separable filter first."""
    rng = np.random.default_rng(ksize)
    img = cv2.GaussianBlur(rng.integers(0, 256, (2, 75, 301), dtype=np.uint8).reshape(150, 301), (3, 3), 1)
    img[:, :3] = 255  # strong edges on the borders, where the border rules differ
    img[:2] = 0
    out = matches_numpy(backend, edges.detect, img.reshape(2, 75, 301), 20, 45, ksize=ksize, border=border)
    assert 0 < np.count_nonzero(out) < out.size


@given(gx=int16s, gy=int16s, variant=variants, small=st.booleans())
def test_direction_sector_same_bits_on_every_backend(backend, gx, gy, variant, small):
    if small:  # many exact zeros, ties and axis-aligned gradients
        gx, gy = (gx % 7 - 3).astype(np.int16), (gy % 7 - 3).astype(np.int16)
    matches_numpy(backend, edges.direction_sector, gx, gy, variant=variant)


def test_detect_keeps_the_batch_shape_and_frames_are_independent(backend):
    rng = np.random.default_rng(5)
    frames = cv2.GaussianBlur(rng.integers(0, 256, (3 * 40, 50), dtype=np.uint8), (5, 5), 2).reshape(3, 40, 50)
    batch = on_backend(backend, edges.detect, frames, 20, 40)
    assert batch.shape == frames.shape
    for t in range(3):
        assert_same_bits(on_backend("numpy", edges.detect, frames[t], 20, 40), portcv.to_numpy(batch)[t])


# ---------------------------------------------------------------- oracles (the paper, literally)
@given(data=small_gray, t_low=thresholds, t_high=thresholds, alpha=st.integers(0, 3))
def test_detect_equals_algorithm_1(data, t_low, t_high, alpha):
    img, _ = data
    G, theta = opencv_g_theta(img)
    ref = oracle.algorithm1(G, theta, alpha, t_high, t_low)
    np.testing.assert_array_equal(portcv.to_numpy(edges.detect(img, t_low, t_high, alpha=alpha)), ref)


@given(data=small_gray, t_low=thresholds, t_high=thresholds, alpha=st.integers(0, 3))
def test_detect_listing_variant_equals_listing_4(data, t_low, t_high, alpha):
    img, _ = data
    G, theta = opencv_g_theta(img)
    ref = oracle.listing4(G, theta, alpha, t_high, t_low)
    np.testing.assert_array_equal(
        portcv.to_numpy(edges.detect(img, t_low, t_high, alpha=alpha, variant="listing")), ref
    )


@pytest.mark.parametrize("ksize", [5, 7])
def test_detect_equals_algorithm_1_with_a_larger_gaussian(ksize):
    rng = np.random.default_rng(ksize)
    img = rng.integers(0, 256, (18, 21), dtype=np.uint8)
    G, theta = opencv_g_theta(img, ksize)
    for t_low, t_high in [(20, 40), (50.5, 60.25), (0, 0)]:
        ref = oracle.algorithm1(G, theta, 2, t_high, t_low)
        np.testing.assert_array_equal(portcv.to_numpy(edges.detect(img, t_low, t_high, ksize=ksize)), ref)


def test_theta_pi_is_horizontal_by_default_and_dropped_by_the_listing():
    """A straight vertical edge bright on its left: gx < 0, gy = 0, atan2 = +pi exactly."""
    img = np.zeros((12, 14), np.uint8)
    img[:, :7] = 200
    img[:, 7] = 100
    gx, gy = edges.gradient(cv2.GaussianBlur(img, (3, 3), 0))
    gx, gy = portcv.to_numpy(gx), portcv.to_numpy(gy)
    assert (gy == 0).all() and gx.min() < 0
    sector = portcv.to_numpy(edges.direction_sector(gx, gy))
    assert (sector[gx < 0] == edges.SECTOR_HORIZONTAL).all()
    listing = portcv.to_numpy(edges.direction_sector(gx, gy, variant="listing"))
    assert (listing[gx < 0] == edges.SECTOR_NONE).all()
    assert portcv.to_numpy(edges.detect(img, 100, 200))[5].tolist() == [0] * 6 + [255] * 3 + [0] * 5
    assert not portcv.to_numpy(edges.detect(img, 100, 200, variant="listing")).any()
    # The literal reading of the pseudocode (theta < pi) is what the listing does.
    G, theta = opencv_g_theta(img)
    assert not oracle.algorithm1(G, theta, 2, 200, 100, closed_at_pi=False).any()
    # Mirrored (gx > 0, theta = 0) both variants find it.
    assert portcv.to_numpy(edges.detect(img[:, ::-1].copy(), 100, 200, variant="listing")).any()


def test_plateaus_are_not_maxima():
    """The paper's strict G > G_neighbours: two equal magnitudes side by side reject both."""
    img = np.zeros((11, 12), np.uint8)
    img[:, 6:] = 200  # blurred: 0 0 50 150 200: |gx| = 600, 600 at columns 5 and 6
    assert not portcv.to_numpy(edges.detect(img, 10, 100)).any()


# ---------------------------------------------------------------- sectors: exact predicates
def test_direction_sector_equals_the_angle_intervals_on_a_dense_grid():
    v = np.arange(-150, 151, dtype=np.int16)
    gx, gy = np.meshgrid(v, v)
    for variant, closed in (("pseudocode", True), ("listing", False)):
        got = portcv.to_numpy(edges.direction_sector(gx, gy, variant=variant))
        np.testing.assert_array_equal(got, np_sector_oracle(gx, gy, closed))


def test_direction_sector_equals_the_angle_intervals_on_full_range_gradients():
    rng = np.random.default_rng(0)
    gx = rng.integers(-32768, 32768, 200_000, dtype=np.int16)
    gy = rng.integers(-32768, 32768, 200_000, dtype=np.int16)
    # Pairs closest to each boundary: gx ~ sqrt(3) gy and gy ~ sqrt(3) gx.
    b = rng.integers(1, 18918, 20_000)
    a = np.round(b * math.sqrt(3)).astype(np.int64)
    sign = rng.choice([-1, 1], (2, b.size))
    gx = np.concatenate([gx, (sign[0] * a).astype(np.int16), (sign[0] * b).astype(np.int16)])
    gy = np.concatenate([gy, (sign[1] * b).astype(np.int16), (sign[1] * a).astype(np.int16)])
    np.testing.assert_array_equal(portcv.to_numpy(edges.direction_sector(gx, gy)), np_sector_oracle(gx, gy))


def test_no_integer_gradient_lies_on_a_sector_boundary():
    """tan^2 of +-pi/6, +-5pi/6 is 1/3 and of +-pi/3, +-2pi/3 is 3: a^2 = 3 b^2 needs a = b = 0."""
    for b in range(1, 32769):
        a = math.isqrt(3 * b * b)
        assert a * a != 3 * b * b


def test_zero_gradient_has_no_sector():
    z = np.zeros(3, np.int16)
    assert portcv.to_numpy(edges.direction_sector(z, z)).tolist() == [edges.SECTOR_NONE] * 3


# ---------------------------------------------------------------- magnitude: exact isqrt
def test_magnitude_is_the_exact_integer_square_root():
    rng = np.random.default_rng(1)
    gx = rng.integers(-32768, 32768, 50_000, dtype=np.int16)
    gy = rng.integers(-32768, 32768, 50_000, dtype=np.int16)
    r = rng.integers(1, 46341, 2000)  # perfect squares and their neighbours: s = r^2 - 1, r^2, r^2 + 1
    gx = np.concatenate([gx, np.int16([-32768, -32768, 32767, 0, 1, 3]), (r % 32768).astype(np.int16)])
    gy = np.concatenate([gy, np.int16([-32768, 0, 32767, 0, 1, 4]), np.zeros(r.size, np.int16)])
    got = portcv.to_numpy(edges.magnitude(gx, gy))
    ref = [math.isqrt(int(x) ** 2 + int(y) ** 2) for x, y in zip(gx, gy)]
    np.testing.assert_array_equal(got, np.asarray(ref, np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(portcv.to_numpy(edges.magnitude(gx, gy, kind="l1")),
                                  np.abs(gx.astype(np.int32)) + np.abs(gy.astype(np.int32)))


# ---------------------------------------------------------------- peers: OpenCV
@pytest.mark.parametrize("ksize", [1, 3, 5, 7, 9, 11, 15])
def test_detect_low_pass_is_opencv_gaussian_blur_with_sigma_0(ksize):
    img = np.random.default_rng(ksize).integers(0, 256, (23, 29), dtype=np.uint8)
    # OpenCV's own fixed-point path: its IPP path for this 5x5 case rounds differently on some
    # CPUs (25 of 667 pixels on the GPU machine's host, none on AVX-512 here).
    use_ipp = cv2.ipp.useIPP()
    cv2.ipp.setUseIPP(False)
    try:
        expected = cv2.GaussianBlur(img, (ksize, ksize), 0)
    finally:
        cv2.ipp.setUseIPP(use_ipp)
    assert_same_bits(expected, edges._detect._low_pass(img, ksize, None, "reflect101"))


@given(data=gray)
def test_gradient_equals_opencv_sobel(data):
    img, _ = data
    gx, gy = edges.gradient(img, channel_axis=None)
    planes = img.reshape((-1,) + img.shape[-2:])
    assert_same_bits(np.stack([cv2.Sobel(p, cv2.CV_16S, 1, 0) for p in planes]).reshape(img.shape), gx)
    assert_same_bits(np.stack([cv2.Sobel(p, cv2.CV_16S, 0, 1) for p in planes]).reshape(img.shape), gy)


@given(data=images(channels=(None,), batch=False), t_low=thresholds, t_high=thresholds,
       ksize=st.sampled_from([3, 5, 7]), l2=st.booleans())
def test_canny_equals_opencv(data, t_low, t_high, ksize, l2):
    img, _ = data
    scale = 1 if ksize == 3 else 8  # aperture 5 and 7 gradients are ~8x and ~4x larger
    lo, hi = t_low * scale, t_high * scale
    assert_same_bits(cv2.Canny(img, lo, hi, apertureSize=ksize, L2gradient=l2),
                     edges.canny(img, lo, hi, ksize=ksize, l2gradient=l2))


#: Measured agreement of canny with cv2.Canny 4.13 on the synthetic frames below: every pixel.
CANNY_AGREEMENT = 1.0


@pytest.mark.parametrize("ksize, l2, t_low, t_high", [(3, False, 50, 150), (3, True, 30, 90), (5, False, 400, 1200),
                                                      (7, True, 300, 900)])
def test_canny_agreement_with_opencv_on_a_natural_frame(ksize, l2, t_low, t_high):
    frame = cv2.cvtColor(portcv.data.synthetic_rgb(240, 320, seed=3), cv2.COLOR_RGB2GRAY)
    ref = cv2.Canny(frame, t_low, t_high, apertureSize=ksize, L2gradient=l2)
    got = portcv.to_numpy(edges.canny(frame, t_low, t_high, ksize=ksize, l2gradient=l2))
    assert ref.any() and np.mean(ref == got) >= CANNY_AGREEMENT


def test_canny_swaps_thresholds_like_opencv():
    img = cv2.GaussianBlur(np.random.default_rng(2).integers(0, 256, (30, 40), dtype=np.uint8), (5, 5), 1.5)
    assert_same_bits(cv2.Canny(img, 90, 30), edges.canny(img, 90, 30))
    assert_same_bits(edges.canny(img, 30, 90), edges.canny(img, 90, 30))


# ---------------------------------------------------------------- hysteresis across tiles
def serpentine_state(h: int, w: int) -> np.ndarray:
    """A weak path snaking through the whole frame (every other row, joined at alternate ends),
    with one strong pixel at its far end: hysteresis must walk it all, across every CUDA tile."""
    state = np.zeros((h, w), np.uint8)
    for y in range(0, h, 2):
        state[y, :] = 1
        if y + 1 < h:
            state[y + 1, w - 1 if (y // 2) % 2 == 0 else 0] = 1
    last = h - 1 if (h - 1) % 2 == 0 else h - 2
    state[last, 0 if (last // 2) % 2 == 0 else w - 1] = 2
    return state


@pytest.mark.parametrize("shape", [(67, 90), (130, 70), (3, 33, 65)])
def test_hysteresis_walks_a_path_through_every_tile(backend, shape):
    from portcv.edges._edges import hysteresis_kernel

    state = np.stack([serpentine_state(*shape[-2:])] * (shape[0] if len(shape) == 3 else 1)).reshape(shape)
    if len(shape) == 3:
        state[1] = np.where(state[1] == 2, 1, state[1])  # a frame without a strong pixel: no edges
    expected = np.stack([oracle.hysteresis(s) for s in state.reshape((-1,) + shape[-2:])]).reshape(shape)
    with portcv.using(backend):
        got = hysteresis_kernel(portcv.asarray(state))
    assert_same_bits(expected, got)


@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 70), st.integers(1, 90)),
    density=st.sampled_from([0.2, 0.5, 0.8]),
    seed=st.integers(0, 2**32 - 1),
)
def test_hysteresis_on_random_candidate_maps(backend, shape, density, seed):
    """Dense random maps make long, branching, merging components: every union order of the
    CUDA union-find (and every labelling) must give the oracle's edges, frame by frame."""
    from portcv.edges._edges import hysteresis_kernel

    rng = np.random.default_rng(seed)
    candidate = rng.random(shape) < density
    strong = rng.random(shape) < 0.01
    state = np.where(candidate, np.where(strong, 2, 1), 0).astype(np.uint8)
    expected = np.stack([oracle.hysteresis(s) for s in state])
    with portcv.using(backend):
        got = hysteresis_kernel(portcv.asarray(state))
    assert_same_bits(expected, got)


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)
G16 = np.zeros((6, 7), np.int16)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: edges.detect(GRAY.astype(np.float32), 1, 2), TypeError, "image must have dtype uint8"),
        (lambda: edges.detect(GRAY[0], 1, 2), ValueError, "image must have at least 2"),
        (lambda: edges.detect(GRAY[:0], 1, 2), ValueError, "image must not be empty"),
        (lambda: edges.detect("img", 1, 2), TypeError, "image must be an array"),
        (lambda: edges.detect(GRAY, -1, 2), ValueError, "t_low must be >= 0"),
        (lambda: edges.detect(GRAY, 1, float("nan")), ValueError, "t_high must be finite"),
        (lambda: edges.detect(GRAY, 1, float("inf")), ValueError, "t_high must be finite"),
        (lambda: edges.detect(GRAY, "1", 2), TypeError, "t_low must be a real number"),
        (lambda: edges.detect(GRAY, 1, 2, alpha=-1), ValueError, "alpha must be in"),
        (lambda: edges.detect(GRAY, 1, 2, alpha=17), ValueError, "alpha must be in"),
        (lambda: edges.detect(GRAY, 1, 2, alpha=2.0), TypeError, "alpha must be an integer"),
        (lambda: edges.detect(GRAY, 1, 2, ksize=4), ValueError, "ksize must be odd"),
        (lambda: edges.detect(GRAY, 1, 2, ksize=0), ValueError, "ksize must be in"),
        (lambda: edges.detect(GRAY, 1, 2, ksize=33), ValueError, "ksize must be in"),
        (lambda: edges.detect(GRAY, 1, 2, sigma=-1.0), ValueError, "sigma must be >= 0"),
        (lambda: edges.detect(GRAY, 1, 2, sigma=float("nan")), ValueError, "sigma must be finite"),
        (lambda: edges.detect(GRAY, 1, 2, variant="cuda"), ValueError, "variant must be one of"),
        (lambda: edges.detect(GRAY, 1, 2, border="wrap"), ValueError, "border must be one of"),
        (lambda: edges.canny(GRAY.astype(np.int16), 1, 2), TypeError, "image must have dtype uint8"),
        (lambda: edges.canny(GRAY, -5, 2), ValueError, "t_low must be >= 0"),
        (lambda: edges.canny(GRAY, 1, float("nan")), ValueError, "t_high must be finite"),
        (lambda: edges.canny(GRAY, 1, 2, ksize=1), ValueError, "ksize must be one of"),
        (lambda: edges.canny(GRAY, 1, 2, ksize=4), ValueError, "ksize must be one of"),
        (lambda: edges.canny(GRAY, 1, 2, l2gradient=1), TypeError, "l2gradient must be a bool"),
        (lambda: edges.gradient(GRAY, ksize=2), ValueError, "ksize must be one of"),
        (lambda: edges.gradient(GRAY.astype(bool)), TypeError, "image must have dtype uint8"),
        (lambda: edges.magnitude(G16, G16.astype(np.int32)), TypeError, "gy must have dtype int16"),
        (lambda: edges.magnitude(GRAY, G16), TypeError, "gx must have dtype int16"),
        (lambda: edges.magnitude(G16, G16[:3]), ValueError, "same shape"),
        (lambda: edges.magnitude(G16, G16, kind="l3"), ValueError, "kind must be one of"),
        (lambda: edges.magnitude(G16[:0], G16[:0]), ValueError, "gx must not be empty"),
        (lambda: edges.direction_sector(G16, G16, variant="x"), ValueError, "variant must be one of"),
        (lambda: edges.direction_sector(G16.astype(np.float64), G16), TypeError, "gx must have dtype int16"),
    ],
)
def test_edges_reject_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_tiny_images_have_no_edges_and_keep_their_shape():
    for shape in [(1, 1), (1, 9), (9, 1), (4, 4), (2, 5, 5)]:
        img = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
        out = portcv.to_numpy(edges.detect(img, 0, 0))
        assert out.shape == shape and not out.any()  # no pixel has alpha + 1 rows/columns on both sides
        assert portcv.to_numpy(edges.canny(img, 10, 20)).shape == shape


# ---------------------------------------------------------------- colour input
@pytest.mark.parametrize("ksize, l2, t_low, t_high", [(3, False, 50, 150), (3, True, 30, 90), (5, False, 400, 1200),
                                                      (7, True, 300, 900)])
@pytest.mark.parametrize("order", ["rgb", "bgr", "rgba"])
def test_canny_on_colour_equals_opencv(ksize, l2, t_low, t_high, order):
    """cv2.Canny on a colour image: per pixel, the gradient of the channel with the largest
    magnitude (the first on a tie); ties are common in the equal-channel corner of the frame."""
    rgb = cv2.GaussianBlur(portcv.data.synthetic_rgb(77, 95, seed=ksize), (3, 3), 0)
    rgb[:20, :30] = rgb[:20, :30, :1]  # equal channels: every magnitude ties
    img = {"rgb": rgb, "bgr": rgb[..., ::-1].copy(), "rgba": cv2.cvtColor(rgb, cv2.COLOR_RGB2RGBA)}[order]
    ref = cv2.Canny(img if order != "rgba" else img[..., :3], t_low, t_high, apertureSize=ksize, L2gradient=l2)
    got = edges.canny(img, t_low, t_high, ksize=ksize, l2gradient=l2)
    if order != "rgba":  # OpenCV takes 1 or 3 channels; 4 follows the same rule
        assert_same_bits(ref, got)
    assert ref.any()


@given(data=images(channels=(2, 3, 4), max_h=40, max_w=50), ksize=st.sampled_from([3, 5, 7]), l2=st.booleans())
def test_canny_on_colour_same_bits_on_every_backend(backend, data, ksize, l2):
    img, channel_axis = data
    matches_numpy(backend, edges.canny, img, 40 * ksize, 120 * ksize, ksize=ksize, l2gradient=l2,
                  channel_axis=channel_axis)


@pytest.mark.parametrize("call", [
    lambda img, **kw: edges.detect(img, 70, 80, **kw),
    lambda img, **kw: edges.gradient(img, **kw),
], ids=["detect", "gradient"])
@pytest.mark.parametrize("channels", [3, 4])
def test_gray_only_functions_refuse_colour_and_accept_a_declared_batch(call, channels):
    """A colour image into a gray-only function used to be taken as a batch of narrow frames
    (all-zero edges); now it is refused unless channel_axis=None declares the batch."""
    img = np.random.default_rng(channels).integers(0, 256, (20, 30, channels), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"image looks like a colour image .*rgb_to_gray.*channel_axis=None"):
        call(img)
    out = call(img, channel_axis=None)  # a batch of 20 frames of 30 x channels
    first = out[0] if isinstance(out, tuple) else out
    assert tuple(first.shape) == (20, 30, channels)
    with pytest.raises(ValueError, match="channel_axis must be 'auto' or None"):
        call(img, channel_axis=-1)
