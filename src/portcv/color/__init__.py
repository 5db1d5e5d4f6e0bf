"""Colour conversions on uint8 images, exact integer arithmetic on every backend.
"""

from __future__ import annotations

from ._channels import bgr_to_rgb, gray_to_rgb, rgb_to_bgr
from ._gray import rgb_to_gray
from ._histogram import histogram
from ._nv12 import i420_to_bgr, i420_to_rgb, nv12_to_bgr, nv12_to_rgb
from ._threshold import binarize, binarize_auto, threshold_otsu, threshold_two_peaks
from . import _gray_cuda, _histogram_cuda, _histogram_pallas, _nv12_cuda  # noqa: F401  (register the CuPy and JAX overrides)

__all__ = [
    "rgb_to_gray",
    "gray_to_rgb",
    "rgb_to_bgr",
    "bgr_to_rgb",
    "histogram",
    "threshold_two_peaks",
    "threshold_otsu",
    "binarize",
    "binarize_auto",
    "nv12_to_rgb",
    "nv12_to_bgr",
    "i420_to_rgb",
    "i420_to_bgr",
]
