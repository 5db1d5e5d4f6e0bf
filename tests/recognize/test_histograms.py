"""lbp_histograms: region layout (Table 4.2's feature lengths), counts equal to naive loops,
the same bits on every backend, the portable counting equal to NumPy's bincount."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import recognize
from portcv.recognize._histograms import region_histograms_kernel
from portcv.recognize._lbp import bin_count

from ..helpers import assert_same_bits, images, matches_numpy

# The thesis's Table 4.2: LBP type, region size (w x h) and feature length, 130 x 150 faces.
TABLE_4_2 = [(8, (11, 13), 8496), (8, (18, 21), 2891), (8, (26, 30), 1475), (16, (18, 21), 11907), (16, (26, 30), 6075)]


@pytest.mark.parametrize("P, region_size, length", TABLE_4_2)
def test_table_4_2_feature_lengths(P, region_size, length):
    face = np.random.default_rng(P).integers(0, 256, (150, 130), dtype=np.uint8)
    h = recognize.lbp_histograms(face, P=P, R=2, region_size=region_size)
    assert h.size == length
    assert int(h.sum()) == 126 * 146  # every interior pixel counted once
    assert h.dtype == (np.uint8 if region_size == (11, 13) else np.uint16)


def naive_histograms(labels: np.ndarray, ny: int, nx: int, h: int, w: int, bins: int) -> np.ndarray:
    out = np.zeros((ny, nx, bins), np.int64)
    for y in range(min(labels.shape[0], ny * h)):
        for x in range(min(labels.shape[1], nx * w)):
            out[y // h, x // w, labels[y, x]] += 1
    return out


@given(img=images(channels=(None,), max_h=30, max_w=30, batch=False), P=st.sampled_from([4, 8, 16]),
       method=st.sampled_from(["u2", "uniform", "nri_uniform"]), data=st.data())
def test_counts_equal_naive_loops(img, P, method, data):
    image, _ = img
    if min(image.shape) < 5:
        image = np.pad(image, 3)
    H, W = image.shape[0] - 2, image.shape[1] - 2
    labels = portcv.to_numpy(recognize.local_binary_pattern(image, P, 1, method=method, border="valid"))
    if data.draw(st.booleans()):
        w, h = data.draw(st.integers(1, W + 2)), data.draw(st.integers(1, H + 2))
        out = recognize.lbp_histograms(image, P=P, R=1, method=method, region_size=(w, h), dtype="int32")
        ny, nx = -(-H // h), -(-W // w)
    else:
        gx, gy = data.draw(st.integers(1, W)), data.draw(st.integers(1, H))
        out = recognize.lbp_histograms(image, P=P, R=1, method=method, grid=(gx, gy), dtype="int32")
        ny, nx, h, w = gy, gx, H // gy, W // gx
    np.testing.assert_array_equal(portcv.to_numpy(out), naive_histograms(labels, ny, nx, h, w, bin_count(P, method)))


@given(img=images(channels=(None,), max_h=40, max_w=40), P=st.sampled_from([1, 8, 16]), R=st.sampled_from([1, 2, 1.5]),
       region=st.tuples(st.integers(1, 20), st.integers(1, 20)), method=st.sampled_from(["u2", "default", "uniform"]))
def test_same_bits_on_every_backend(backend, img, P, R, region, method):
    image, channel_axis = img  # None: a batch of gray frames, however narrow
    if min(image.shape[-2:]) <= 2 * int(np.ceil(R)):
        image = np.pad(image, [(0, 0)] * (image.ndim - 2) + [(3, 3), (3, 3)])
    out = matches_numpy(backend, recognize.lbp_histograms, image, P=P, R=R, method=method, region_size=region,
                        channel_axis=channel_axis)
    assert out.shape[:-3] == image.shape[:-2]


@given(labels=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(1, 3), st.integers(1, 17), st.integers(1, 19)),
       region=st.tuples(st.integers(1, 8), st.integers(1, 8)))
def test_portable_counting_equals_bincount(labels, shape, region):
    """The numpy:readonly backend runs the portable sort + searchsorted; here it meets bincount directly."""
    lab = np.random.default_rng(labels).integers(0, 59, shape).astype(np.uint16)
    h, w = region
    params = dict(ny=-(-shape[1] // h), nx=-(-shape[2] // w), h=h, w=w, bins=59, dtype="uint16")
    expected = region_histograms_kernel.portable(portcv.backends.get("numpy").xp, lab, **params)
    assert_same_bits(expected, region_histograms_kernel.overrides["numpy"].fn(lab, **params))


@pytest.mark.parametrize("width, height", [(88, 108), (126, 146), (15, 36), (37, 7), (8, 300)])
def test_regions_sized_to_the_face(width, height):
    """regions=(7, 7): ceil-sized regions where their tiling gives 7 per axis (ORL's 88 x 108
    interior: 13 x 16; the thesis's 126 x 146: 18 x 21), floor-sized cells with the remainder
    dropped where it does not (15 and 36 pixels give 5 and 6 ceil-sized regions); counts equal
    the naive loop over that layout."""
    image = np.random.default_rng(width * height).integers(0, 256, (height + 2, width + 2), dtype=np.uint8)
    labels = portcv.to_numpy(recognize.local_binary_pattern(image, 8, 1, method="u2", border="valid"))

    def extent(n):
        size = -(-n // 7)
        return size if -(-n // size) == 7 else n // 7

    h, w = extent(height), extent(width)
    out = portcv.to_numpy(recognize.lbp_histograms(image, P=8, R=1, regions=(7, 7), dtype="int32"))
    assert out.shape == (7, 7, 59)
    np.testing.assert_array_equal(out, naive_histograms(labels, 7, 7, h, w, 59))
    expected = {88: 13, 126: 18, 15: 2, 37: 6, 8: 1, 108: 16, 146: 21, 36: 5, 7: 1, 300: 43}
    assert (w, h) == (expected[width], expected[height])


def test_regions_of_a_thesis_face_are_its_18_x_21_regions():
    face = np.random.default_rng(9).integers(0, 256, (150, 130), dtype=np.uint8)
    assert_same_bits(recognize.lbp_histograms(face), recognize.lbp_histograms(face, regions=(7, 7)))


def test_batches_of_faces():
    faces = np.random.default_rng(1).integers(0, 256, (2, 3, 150, 130), dtype=np.uint8)
    out = portcv.to_numpy(recognize.lbp_histograms(faces, P=16))
    assert out.shape == (2, 3, 7, 7, 243)
    np.testing.assert_array_equal(out[1, 2], portcv.to_numpy(recognize.lbp_histograms(faces[1, 2], P=16)))


def test_bad_input():
    face = np.zeros((20, 20), np.uint8)
    with pytest.raises(TypeError, match="image"):
        recognize.lbp_histograms(face.astype(np.int16))
    with pytest.raises(ValueError, match="too small"):
        recognize.lbp_histograms(face[:4], R=2)
    with pytest.raises(ValueError, match="region_size"):
        recognize.lbp_histograms(face, region_size=(0, 3))
    with pytest.raises(ValueError, match="region_size"):
        recognize.lbp_histograms(face, region_size=(1, 2, 3))
    with pytest.raises(ValueError, match="grid"):
        recognize.lbp_histograms(face, grid=(100, 1))
    with pytest.raises(ValueError, match="dtype"):
        recognize.lbp_histograms(face, dtype="float32")
    with pytest.raises(ValueError, match="uint8"):
        recognize.lbp_histograms(np.zeros((100, 100), np.uint8), region_size=(40, 40), dtype="uint8")
    with pytest.raises(ValueError, match="32767"):
        recognize.lbp_histograms(np.zeros((300, 300), np.uint8), region_size=(200, 200))
    with pytest.raises(ValueError, match="P"):
        recognize.lbp_histograms(face, P=20)
    with pytest.raises(ValueError, match="grid or regions, not both"):
        recognize.lbp_histograms(face, grid=(2, 2), regions=(2, 2))
    with pytest.raises(ValueError, match=r"regions=\(7, 7\) needs .* at least 7 x 7 pixels; these faces give 16 x 6"):
        recognize.lbp_histograms(face[:10], regions=(7, 7))
    with pytest.raises(TypeError, match="regions"):
        recognize.lbp_histograms(face, regions="7x7")
    # 1 x 1 regions of a batch with 16-bit codes: 2.7e9 counts (before: int64 bincount temporaries of 21 GB)
    with pytest.raises(ValueError, match="image with these regions: the output would have"):
        recognize.lbp_histograms(np.broadcast_to(face, (128, 20, 20)), P=16, method="default", R=1, region_size=1)


def test_colour_images_are_refused_with_the_conversion_hint():
    """Before, a (150, 130, 3) colour face was read as 150 faces 3 pixels wide ("too small")."""
    rgb = np.zeros((150, 130, 3), np.uint8)
    for fn in (recognize.lbp_histograms, lambda im, **kw: recognize.local_binary_pattern(im, 8, 1, **kw)):
        with pytest.raises(ValueError, match=r"image looks like a colour image.*rgb_to_gray\(image\)"):
            fn(rgb)
    narrow = np.random.default_rng(0).integers(0, 256, (2, 9, 4), dtype=np.uint8)  # a batch of 9 x 4 frames
    out = recognize.local_binary_pattern(narrow, 4, 1, channel_axis=None)
    assert_same_bits(out, np.stack([recognize.local_binary_pattern(f, 4, 1) for f in narrow]))
