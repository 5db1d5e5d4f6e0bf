"""local_binary_pattern: exact decimal fixed point, equal to the naive transcription, to
scikit-image except at exact real ties (counted), and the same bits on every backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import recognize
from portcv.recognize._lbp import bin_count, mapping_table

from ..helpers import images, jax_without_x64, matches_numpy
from ..oracles import lbp as oracle

radii = st.sampled_from([1.0, 1.5, 2.0, 3.0, 0.5, 2.7])


@given(img=images(channels=(None,), max_h=40, max_w=45), P=st.integers(1, 16), R=radii,
       method=st.sampled_from(recognize.METHODS), border=st.sampled_from(["constant", "valid"]))
def test_same_bits_on_every_backend(backend, img, P, R, method, border):
    image, channel_axis = img  # None: a batch of gray frames, however narrow
    c = int(np.ceil(R))
    if border == "valid" and min(image.shape[-2:]) <= 2 * c:
        border = "constant"
    out = matches_numpy(backend, recognize.local_binary_pattern, image, P, R, method=method, border=border,
                        channel_axis=channel_axis)
    assert out.dtype == np.uint16
    assert out.shape == (image.shape if border == "constant" else image.shape[:-2] + (image.shape[-2] - 2 * c, image.shape[-1] - 2 * c))
    assert int(out.max()) < bin_count(P, method)


@pytest.mark.parametrize("P, R", [(8, 1.0), (8, 2.0), (16, 2.0), (12, 2.7)])
@pytest.mark.parametrize("border", ["constant", "valid"])
def test_same_bits_on_every_backend_for_a_batch_of_photo_crops(backend, P, R, border):
    """Larger than the hypothesis images: frames that cross many 32 x 8 CUDA blocks, uneven
    edges, a batch, every method (the label tables of 2**16 entries included)."""
    from skimage import data

    photo = data.camera()
    batch = np.stack([photo[100:173, 200:301], photo[300:373, 17:118], photo[-73:, -101:]])
    for method in recognize.METHODS:
        matches_numpy(backend, recognize.local_binary_pattern, batch, P, R, method=method, border=border)


def test_an_image_taller_than_one_cuda_launch(backend):
    """More than 65535 x 8 output rows: the CUDA launcher splits the rows over launches."""
    image = np.random.default_rng(5).integers(0, 256, (8 * 65535 + 21, 5), dtype=np.uint8)
    matches_numpy(backend, recognize.local_binary_pattern, image, 4, 1.0, method="uniform")


@given(img=images(channels=(None,), max_h=9, max_w=9, batch=False), P=st.sampled_from([1, 3, 4, 6, 8, 12]),
       R=radii, method=st.sampled_from(recognize.METHODS))
def test_equals_the_naive_transcription(img, P, R, method):
    image, _ = img
    codes = oracle.codes(image, P, R)
    expected = np.vectorize(lambda c: oracle.label(int(c), P, method))(codes).astype(np.uint16)
    out = portcv.to_numpy(recognize.local_binary_pattern(image, P, R, method=method))
    np.testing.assert_array_equal(out, expected)
    c = int(np.ceil(R))
    if min(image.shape) > 2 * c:
        valid = portcv.to_numpy(recognize.local_binary_pattern(image, P, R, method=method, border="valid"))
        np.testing.assert_array_equal(valid, expected[c:-c, c:-c])


def test_batches_equal_frame_by_frame():
    rng = np.random.default_rng(3)
    faces = rng.integers(0, 256, (2, 3, 30, 26), dtype=np.uint8)
    out = portcv.to_numpy(recognize.local_binary_pattern(faces, 16, 2, method="u2", border="valid"))
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(out[i, j], portcv.to_numpy(
                recognize.local_binary_pattern(faces[i, j], 16, 2, method="u2", border="valid")))


def _skimage_images():
    data = pytest.importorskip("skimage.data")
    return {"camera": data.camera(), "coins": data.coins(), "brick": data.brick(), "moon": data.moon(),
            "astronaut": portcv.to_numpy(portcv.color.rgb_to_gray(data.astronaut()))}


def _exact_ties(image: np.ndarray, P: int, R: float) -> np.ndarray:
    """(H, W, P) bool, vectorized from the oracle's exact sample points: the bilinear value of
    sample i equals the centre exactly (weights scaled by 10**10: integers, int64 exact)."""
    h, w = image.shape
    pad = int(np.ceil(R)) + 1
    src = np.pad(image.astype(np.int64), pad)
    out = np.zeros((h, w, P), bool)
    for i, (dr, dc) in enumerate(oracle.sample_points(P, R)):
        r0, c0 = int(np.floor(dr)), int(np.floor(dc))
        fr, fc = int((dr - r0) * 10**5), int((dc - c0) * 10**5)
        value = np.zeros((h, w), np.int64)
        for dy, wy in ((r0, 10**5 - fr), (r0 + 1, fr)):
            for dx, wx in ((c0, 10**5 - fc), (c0 + 1, fc)):
                value += wy * wx * src[pad + dy:pad + dy + h, pad + dx:pad + dx + w]
        out[..., i] = value == image.astype(np.int64) * 10**10
    return out


SKIMAGE_CASES = [(8, 1.0), (8, 2.0), (16, 2.0), (8, 1.5), (4, 1.0)]


@pytest.mark.parametrize("P, R", SKIMAGE_CASES)
def test_equals_skimage_except_exact_ties(P, R):
    """Every bit that differs from scikit-image's is an exact real tie (value == centre), and
    its mappings are scikit-image's on every code that occurs. Tie counts are printed (-s)."""
    feature = pytest.importorskip("skimage.feature")
    for name, image in _skimage_images().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk_default = feature.local_binary_pattern(image, P, R, method="default").astype(np.int64)
        ours = portcv.to_numpy(recognize.local_binary_pattern(image, P, R)).astype(np.int64)
        diff = ours ^ sk_default
        differing = ((diff[..., None] >> np.arange(P)) & 1).astype(bool)
        n_bits = int(differing.sum())
        if n_bits:
            ties = _exact_ties(image, P, R)
            assert not (differing & ~ties).any(), f"{name} ({P}, {R}): a non-tie bit differs"
        if R == 1.0 and P == 4:  # grid points only: no interpolation, no ties possible
            assert n_bits == 0
        print(f"\n{name} ({P}, {R}): {n_bits} bits in {int((diff != 0).sum())} pixels differ, all exact ties")
        for method in ("ror", "uniform", "nri_uniform"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sk = feature.local_binary_pattern(image, P, R, method=method)
            # scikit-image's mapping is ours: its labels are our table at its own codes
            np.testing.assert_array_equal(sk, mapping_table(P, method)[sk_default])
            ours_m = portcv.to_numpy(recognize.local_binary_pattern(image, P, R, method=method))
            agree = ours_m == sk
            assert (agree | (diff != 0)).all()


def test_mapping_tables():
    assert bin_count(8, "u2") == 59 and int(mapping_table(8, "u2").max()) == 58
    assert bin_count(16, "u2") == 243 and int(mapping_table(16, "u2").max()) == 242
    u2 = mapping_table(8, "u2")
    uniform = np.flatnonzero(u2 < 58)
    assert len(uniform) == 58 and (u2[uniform] == np.arange(58)).all()  # ascending code order
    for P in (1, 2, 5, 8):
        for method in recognize.METHODS:
            table = mapping_table(P, method)
            assert [int(v) for v in table] == [oracle.label(c, P, method) for c in range(1 << P)]
    # nri_uniform is a permutation of u2 (same uniform classes, different numbers)
    nri = mapping_table(8, "nri_uniform")
    assert len(set(zip(nri.tolist(), u2.tolist()))) == 59


def test_bad_input():
    image = np.zeros((10, 10), np.uint8)
    with pytest.raises(TypeError, match="image"):
        recognize.local_binary_pattern(image.astype(np.float32), 8, 1)
    with pytest.raises(TypeError, match="image"):
        recognize.local_binary_pattern("face", 8, 1)
    with pytest.raises(ValueError, match="image"):
        recognize.local_binary_pattern(np.zeros(10, np.uint8), 8, 1)
    with pytest.raises(ValueError, match="image"):
        recognize.local_binary_pattern(np.zeros((0, 4), np.uint8), 8, 1)
    with pytest.raises(ValueError, match="P"):
        recognize.local_binary_pattern(image, 17, 1)
    with pytest.raises(ValueError, match="P"):
        recognize.local_binary_pattern(image, 0, 1)
    with pytest.raises(TypeError, match="P"):
        recognize.local_binary_pattern(image, 8.0, 1)
    with pytest.raises(ValueError, match="R"):
        recognize.local_binary_pattern(image, 8, 0)
    with pytest.raises(ValueError, match="R"):
        recognize.local_binary_pattern(image, 8, float("nan"))
    with pytest.raises(ValueError, match="method"):
        recognize.local_binary_pattern(image, 8, 1, method="var")
    with pytest.raises(ValueError, match="border"):
        recognize.local_binary_pattern(image, 8, 1, border="reflect101")
    with pytest.raises(ValueError, match="border='valid'"):
        recognize.local_binary_pattern(image[:4], 8, 2, border="valid")


@given(img=images(channels=(None,), max_h=30, max_w=30), P=st.sampled_from([4, 8, 16]), R=radii,
       method=st.sampled_from(recognize.METHODS), border=st.sampled_from(["constant", "valid"]),
       band=st.integers(1, 200))
def test_numpy_override_bands_equal_the_portable_version(img, P, R, method, border, band):
    """The NumPy override (row bands with a ceil(R) halo, zero padding for 'constant') equals
    the portable version for any band size."""
    import portcv.recognize._lbp as lbp_module

    image, _ = img
    c = int(np.ceil(R))
    if border == "valid" and min(image.shape[-2:]) <= 2 * c:
        border = "constant"
    expected = lbp_module.lbp_kernel.portable(portcv.backends.get("numpy").xp, image, P=P, R=R, method=method, border=border)
    saved = lbp_module.BAND_PIXELS
    lbp_module.BAND_PIXELS = band
    try:
        with portcv.using("numpy"):
            actual = lbp_module.lbp_kernel.overrides["numpy"].fn(image, P=P, R=R, method=method, border=border)
    finally:
        lbp_module.BAND_PIXELS = saved
    np.testing.assert_array_equal(actual, expected)
    assert actual.dtype == expected.dtype == np.uint16


def test_jax_without_x64_refuses_instead_of_rounding():
    """The exact sums need float64 (chi-square: int64); JAX with x64 off must raise, not round."""
    image = np.random.default_rng(0).integers(0, 256, (20, 20), dtype=np.uint8)
    with jax_without_x64():
        with pytest.raises(RuntimeError, match="x64"):
            recognize.local_binary_pattern(image, 8, 2)
        with pytest.raises(RuntimeError, match="x64"):
            recognize.chi_square(np.ones((2, 3), np.uint16), np.ones((4, 2, 3), np.uint16))
