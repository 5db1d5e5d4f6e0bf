"""median_filter: every backend equals NumPy, NumPy equals the sort-the-window loop, and the
default border equals cv2.medianBlur bit-for-bit."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
import portcv.filters._median
from portcv import filters

from ..helpers import assert_same_bits, borders, images, matches_numpy
from . import oracle_median as oracle

cv2 = pytest.importorskip("cv2")

KSIZES = [3, 5, 7, 9, 11, 13, 15]
ksizes = st.sampled_from(KSIZES)
MEDIAN_CU = portcv.filters._median.MEDIAN_CU


def opencv_median(img, channel_axis, k):
    """cv2.medianBlur per 2-D image of a batch (it takes (H, W) or (H, W, C), C in 1, 3, 4)."""
    per_image = img.shape[-3 if channel_axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    out = np.stack([cv2.medianBlur(np.ascontiguousarray(p), k).reshape(per_image) for p in flat])
    return out.reshape(img.shape)


# ---------------------------------------------------------------- backends agree
# One test item per window size, each with its share of the profile's examples (as many per size
# as when one item drew the size): on JAX every example is a new program (border_value and the
# shape are static; k = 15 compiles in 2 s on the CPU and about 10 s on the H200), and the one
# item that drew every size ran for 5 minutes at the end of a parallel run there.


@pytest.mark.parametrize("k", KSIZES)
@settings(max_examples=max(settings().max_examples // len(KSIZES), 5))
@given(data=images(channels=(None, 1, 3, 4)), border=borders, value=st.integers(0, 255))
def test_median_filter_same_bits_on_every_backend(backend, k, data, border, value):
    img, axis = data
    matches_numpy(backend, filters.median_filter, img, k, border=border, border_value=value, channel_axis=axis)


@given(data=images(channels=(None, 1, 3, 4), max_h=40, max_w=40), k=st.sampled_from(portcv.filters._median.CIRCUIT_KSIZES),
       border=borders, value=st.integers(0, 255))
def test_median_filter_circuit_sizes_same_bits_on_every_backend(backend, data, k, border, value):
    """k = 3, 5: the sizes both GPU backends compute with median.cu's tile circuits (JAX as array
    operations over every tile, CuPy in CUDA), drawn on their own so each example exercises them."""
    img, axis = data
    matches_numpy(backend, filters.median_filter, img, k, border=border, border_value=value, channel_axis=axis)


@pytest.mark.parametrize("k", [5, 15])
def test_median_filter_rgb_equals_opencv_on_every_backend(backend, k):
    """An RGB frame on each backend, with a small and the largest window (k = 15: 7 border pixels a side)."""
    img = portcv.data.synthetic_rgb(29, 23, seed=4)
    ref = cv2.medianBlur(img, k)
    with portcv.using(backend):
        assert_same_bits(ref, filters.median_filter(img, k))


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


# ---------------------------------------------------------------- the CUDA circuits
@pytest.mark.parametrize("k", [3, 5])
def test_cuda_median_circuits_select_the_median(k):
    """Each OUT value of median.cu's tile circuit is the median of its own window, for every input.

    A circuit of min and max gates commutes with every threshold t -> [t >= c], so (0-1
    principle) it selects the rank-(n // 2) value of its inputs for all inputs iff it does for
    all 2^n inputs of zeros and ones. Each output's gates are rewritten over its window's
    variables (input (x + i, y + j) of the footprint is variable j * k + i; an input outside the
    window fails the test) into interned (kind, operand, operand) nodes, so outputs that compute
    the same expression share one node. Every node is then evaluated on all 2^(k*k) 0-1
    assignments at once, bit-sliced (variables 0..5 index the bit of a uint64 word, the rest
    the word), and each output must be 1 iff at least n // 2 + 1 variables are 1."""
    tx, ty, gates, outputs = portcv.filters._median.tile_circuit(k)
    fw, fh = tx + k - 1, ty + k - 1
    n_in, n = fw * fh, k * k
    assert sorted(outputs) == [(x, y) for x in range(tx) for y in range(ty)]
    assert portcv.filters._median._define(MEDIAN_CU.read_text(), f"PORTCV_MEDIAN_TILE{k}_VALUES") == n_in + len(gates)
    assert [d for _, d, _, _ in gates] == list(range(n_in, n_in + len(gates)))  # each value set once, in order
    assert all(a < d and b < d for _, d, a, b in gates)  # operands are set before they are read

    nodes: dict[tuple, int] = {("var", i): i for i in range(n)}  # interned; operands come first
    roots = set()
    for (x, y), out in outputs.items():
        window = {(y + j) * fw + x + i: j * k + i for j in range(k) for i in range(k)}
        node = {}
        for v in range(n_in):
            if v in window:
                node[v] = window[v]
        for kind, d, a, b in gates:
            if a in node and b in node:  # else d does not depend on the window alone: not this output's
                key = (kind, min(node[a], node[b]), max(node[a], node[b]))
                node[d] = nodes.setdefault(key, len(nodes))
        assert out in node, f"output {(x, y)} reads inputs outside its window"
        roots.add(node[out])

    in_word = np.array([0xAAAAAAAAAAAAAAAA, 0xCCCCCCCCCCCCCCCC, 0xF0F0F0F0F0F0F0F0, 0xFF00FF00FF00FF00,
                        0xFFFF0000FFFF0000, 0xFFFFFFFF00000000], np.uint64)
    at_least = np.array([sum(1 << b for b in range(64) if bin(b).count("1") >= t) for t in range(8)], np.uint64)
    ops = list(nodes)[n:]
    last_use = {}
    for i, (_, a, b) in enumerate(ops):
        last_use[a] = last_use[b] = n + i
    chunk = min(1 << 14, 1 << max(0, n - 6))  # words per pass: 128 KB per value
    for start in range(0, 1 << max(0, n - 6), chunk):
        words = np.arange(start, start + chunk, dtype=np.uint64)
        value = {i: np.full(chunk, in_word[i]) if i < 6
                 else np.where((words >> np.uint64(i - 6)) & np.uint64(1), ~np.uint64(0), np.uint64(0))
                 for i in range(n)}
        need = np.clip(n // 2 + 1 - np.bitwise_count(words).astype(np.int64), 0, 7)  # 7: no bit qualifies
        for i, (kind, a, b) in enumerate(ops, start=n):
            value[i] = (np.bitwise_and if kind == "MIN" else np.bitwise_or)(value[a], value[b])
            for operand in {a, b}:
                if last_use[operand] == i and operand not in roots:
                    del value[operand]
            if i in roots:
                np.testing.assert_array_equal(value[i], at_least[need])


def test_median_circuits_are_generated():
    """_median.cu's tile blocks and _median_networks.py (the JAX circuits) are what
    tools/generators/median_networks.py generates, from one construction."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "generators" / "median_networks.py"
    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, "_median.cu or _median_networks.py is out of date: run python -m tools.regenerate median-networks"
    # and the Python table equals the C macros gate by gate
    text = MEDIAN_CU.read_text()
    for k in portcv.filters._median.CIRCUIT_KSIZES:
        body = re.search(rf"BEGIN tile{k} \*/(.*?)/\* END tile{k}", text, re.S).group(1)
        gates = tuple((kind, int(d), int(a), int(b)) for kind, d, a, b in re.findall(r"(MIN|MAX)\((\d+), (\d+), (\d+)\)", body))
        outputs = {(int(x), int(y)): int(v) for x, y, v in re.findall(r"OUT\((\d+), (\d+), (\d+)\)", body)}
        assert portcv.filters._median.tile_circuit(k)[2:] == (gates, outputs)


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
