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
    image, _ = img
    if min(image.shape[-2:]) <= 2 * int(np.ceil(R)):
        image = np.pad(image, [(0, 0)] * (image.ndim - 2) + [(3, 3), (3, 3)])
    out = matches_numpy(backend, recognize.lbp_histograms, image, P=P, R=R, method=method, region_size=region)
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
