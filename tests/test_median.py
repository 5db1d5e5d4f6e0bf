"""median_filter: every backend equals NumPy, NumPy equals the sort-the-window loop, and the
default border equals cv2.medianBlur bit-for-bit."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
import portcv._median
from portcv import filters

from .helpers import assert_same_bits, images, matches_numpy
from .oracles import median as oracle

cv2 = pytest.importorskip("cv2")

ksizes = st.sampled_from([3, 5, 7, 9, 11, 13, 15])
borders = st.sampled_from(filters.BORDERS)
MEDIAN_CU = Path(portcv.__file__).parent / "backends" / "cuda" / "median.cu"


def opencv_median(img, channel_axis, k):
    """cv2.medianBlur per 2-D image of a batch (it takes (H, W) or (H, W, C), C in 1, 3, 4)."""
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([cv2.medianBlur(np.ascontiguousarray(p), k).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


# ---------------------------------------------------------------- backends agree
@given(data=images(channels=(None, 1, 3, 4)), k=ksizes, border=borders, value=st.integers(0, 255))
def test_median_filter_same_bits_on_every_backend(backend, data, k, border, value):
    img, axis = data
    matches_numpy(backend, filters.median_filter, img, k, border=border, border_value=value, channel_axis=axis)


def test_median_filter_row_chunks_change_nothing(backend, monkeypatch):
    """The portable code filters large inputs in row chunks; force many small ones."""
    img = portcv.data.synthetic_rgb(29, 23, seed=4)
    ref = cv2.medianBlur(img, 5)
    monkeypatch.setattr(portcv._median, "CHUNK_ELEMENTS", 25 * 23 * 3 * 3)  # 3 rows per chunk
    with portcv.using(backend):
        assert_same_bits(ref, filters.median_filter(img, 5))


# ---------------------------------------------------------------- the algorithm
@given(data=images(max_h=8, max_w=9, batch=False), k=ksizes, border=borders, value=st.integers(0, 255))
def test_median_filter_equals_sorting_each_window(data, k, border, value):
    img, axis = data
    ref = oracle.median_filter(img, k, border, value, has_channels=axis == -1)
    out = filters.median_filter(img, k, border=border, border_value=value, channel_axis=axis)
    assert_same_bits(ref, out)


def test_median_filter_removes_salt_and_pepper():
    """The report's table 22: an 89 among small values does not survive a 3x3 median."""
    img = np.full((7, 7), 5, np.uint8)
    img[3, 3], img[1, 5] = 89, 0
    np.testing.assert_array_equal(filters.median_filter(img, 3), 5)


# ---------------------------------------------------------------- OpenCV peer
@given(data=images(channels=(None, 1, 3, 4)), k=ksizes)
def test_median_filter_equals_opencv(data, k):
    img, axis = data
    assert_same_bits(opencv_median(img, axis, k), filters.median_filter(img, k, channel_axis=axis))


@pytest.mark.parametrize("k", [3, 5, 7, 9, 11, 13, 15])
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (2, 3), (1, 1, 3), (1, 6, 3), (5, 1, 4), (17, 23, 3)])
def test_median_filter_equals_opencv_on_tiny_images(k, shape):
    img = np.random.default_rng(k * 100 + len(shape)).integers(0, 256, shape, dtype=np.uint8)
    assert_same_bits(cv2.medianBlur(img, k).reshape(shape), filters.median_filter(img, k))


# ---------------------------------------------------------------- the CUDA networks
def _network(name: str) -> list[tuple[int, int]]:
    text = MEDIAN_CU.read_text()
    body = re.search(rf"BEGIN {name} \*/(.*?)/\* END {name}", text, re.S).group(1)
    return [(int(a), int(b)) for a, b in re.findall(r"X\((\d+), (\d+)\)", body)]


@pytest.mark.parametrize("name, n, exchanges", [("median9", 9, 19), ("median25", 25, 99)])
def test_cuda_selection_networks_select_the_median(name, n, exchanges):
    """0-1 principle: a comparator network leaves the rank-(n // 2) value on wire n // 2 for every
    input iff it does for all 2^n inputs of zeros and ones. Input i sets wire j to bit j of i;
    inputs are packed 64 to a uint64 word (the low 6 bits of i index the bit in the word)."""
    net = _network(name)
    assert len(net) == exchanges
    words = np.arange(1 << (n - 6), dtype=np.uint64)
    in_word = [0xAAAAAAAAAAAAAAAA, 0xCCCCCCCCCCCCCCCC, 0xF0F0F0F0F0F0F0F0, 0xFF00FF00FF00FF00,
               0xFFFF0000FFFF0000, 0xFFFFFFFF00000000]
    wires = [np.full(words.shape, in_word[j], np.uint64) if j < 6
             else np.where((words >> np.uint64(j - 6)) & np.uint64(1), ~np.uint64(0), np.uint64(0))
             for j in range(n)]
    for a, b in net:
        wires[a], wires[b] = wires[a] & wires[b], wires[a] | wires[b]
    # The median of n zeros and ones is 1 iff at least n // 2 + 1 of them are ones: input
    # (word w, bit b) needs popcount(b) >= n // 2 + 1 - popcount(w); at_least[t] marks those b.
    at_least = np.array([sum(1 << b for b in range(64) if bin(b).count("1") >= t) for t in range(8)], np.uint64)
    need = np.clip(n // 2 + 1 - np.bitwise_count(words).astype(np.int64), 0, 7)  # 7: no b qualifies
    expected = at_least[need]
    np.testing.assert_array_equal(wires[n // 2], expected)


# ---------------------------------------------------------------- bad input
GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: filters.median_filter(GRAY.astype(np.float32), 3), TypeError, "image must have dtype uint8"),
        (lambda: filters.median_filter(GRAY.astype(np.uint16), 3), TypeError, "image must have dtype uint8"),
        (lambda: filters.median_filter(GRAY[0], 3), ValueError, "image must have at least 2 dimensions"),
        (lambda: filters.median_filter(GRAY[:, :0], 3), ValueError, "image must not be empty"),
        (lambda: filters.median_filter("gray", 3), TypeError, "image must be an array"),
        (lambda: filters.median_filter(GRAY, 4), ValueError, "ksize must be odd"),
        (lambda: filters.median_filter(GRAY, 1), ValueError, r"ksize must be in \[3, 15\]"),
        (lambda: filters.median_filter(GRAY, -3), ValueError, "ksize must be in"),
        (lambda: filters.median_filter(GRAY, 17), ValueError, "ksize must be in"),
        (lambda: filters.median_filter(GRAY, 3.0), TypeError, "ksize must be an integer"),
        (lambda: filters.median_filter(GRAY, float("nan")), TypeError, "ksize must be an integer"),
        (lambda: filters.median_filter(GRAY, (3, 3)), TypeError, "ksize must be an integer"),
        (lambda: filters.median_filter(GRAY, True), TypeError, "ksize must be an integer"),
        (lambda: filters.median_filter(GRAY, 3, border="wrap"), ValueError, "border must be one of"),
        (lambda: filters.median_filter(GRAY, 3, border="constant", border_value=256), ValueError, "border_value"),
        (lambda: filters.median_filter(GRAY, 3, border_value=-1), ValueError, "border_value"),
        (lambda: filters.median_filter(GRAY, 3, border_value=float("nan")), TypeError, "border_value"),
        (lambda: filters.median_filter(GRAY, 3, channel_axis=0), ValueError, "channel_axis"),
        (lambda: filters.median_filter(GRAY, 3, channel_axis=-1), ValueError, "channel_axis"),
    ],
)
def test_median_filter_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
