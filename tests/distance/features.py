"""Inputs of the distance tests: random integer feature matrices (hypothesis) and real SIFT
descriptors of scikit-image's sample images."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import strategies as st

from portcv.distance._sqeuclidean import FEATURE_DTYPES

#: Value range drawn per dtype. int32 stays within +-2**20 so that scipy's float64 cdist (the
#: peer) is exact too (l * 2**42 < 2**53); its wide-range cases are separate tests.
RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
          "int32": (-(2**20), 2**20)}


@st.composite
def feature_pairs(draw: st.DrawFn, *, max_rows: int = 24, max_length: int = 40,
                  dtypes: tuple[str, ...] = FEATURE_DTYPES) -> tuple[np.ndarray, np.ndarray]:
    """``(F, D)``: 1..max_rows rows each, a common length of 1..max_length (a fifth of the
    examples 100..300), one integer dtype. Values are uniform over the dtype's range, only its
    two extremes, or a few nearby values (many equal distances: ties for ``nearest``); some
    gallery rows repeat others."""
    dtype = draw(st.sampled_from(dtypes))
    m, n = draw(st.integers(1, max_rows)), draw(st.integers(1, max_rows))
    length = draw(st.one_of(st.integers(1, max_length), st.integers(1, max_length), st.integers(1, max_length),
                            st.integers(1, max_length), st.integers(100, 300)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lo, hi = RANGES[dtype]
    kind = draw(st.sampled_from(["uniform", "extremes", "few"]))

    def values(shape):
        if kind == "uniform":
            return rng.integers(lo, hi, shape, endpoint=True)
        if kind == "extremes":
            return rng.choice(np.array([lo, hi]), shape)
        return rng.integers(lo, lo + 3, shape, endpoint=True)

    F, D = values((m, length)).astype(dtype), values((n, length)).astype(dtype)
    if n > 1 and draw(st.booleans()):  # repeated gallery rows: exact ties at any distance
        D[rng.integers(0, n, n // 2)] = D[rng.integers(0, n, n // 2)]
    return F, D


@functools.cache
def sift_descriptors(name: str) -> np.ndarray:
    """OpenCV SIFT descriptors of ``skimage.data.<name>()`` (gray), as uint8 (read-only).

    OpenCV returns float32 holding integers in [0, 255] (it rounds and saturates 512 x the
    normalized descriptor): the cast to uint8 is lossless, which this asserts.
    """
    cv2 = pytest.importorskip("cv2")
    data = pytest.importorskip("skimage.data")
    if not hasattr(cv2, "SIFT_create"):
        pytest.skip("this OpenCV build has no SIFT (cv2.SIFT_create)")
    image = getattr(data, name)()
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    _, desc = cv2.SIFT_create().detectAndCompute(image, None)
    assert desc is not None and desc.dtype == np.float32 and desc.shape[1] == 128
    assert np.all(desc == np.round(desc)) and desc.min() >= 0 and desc.max() <= 255, "SIFT is not integer-valued"
    out = desc.astype(np.uint8)
    assert np.array_equal(out.astype(np.float32), desc)
    out.flags.writeable = False
    return out
