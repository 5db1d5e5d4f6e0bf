"""Geometric transforms and image tables: integral images, resizing, image pyramids.

Everything here is exact integer arithmetic per pixel on every backend. Where OpenCV has the
same operation, the uint8 result equals OpenCV 4.13's bit for bit: ``integral`` is
``cv2.integral`` / ``cv2.integral2``, ``resize`` is ``cv2.resize`` with ``INTER_NEAREST``,
``INTER_LINEAR`` or ``INTER_LINEAR_EXACT``, and ``pyramid`` builds the levels that
``CascadeClassifier::detectMultiScale`` scans. Images are ``(..., H, W)`` or ``(..., H, W, C)``;
leading axes are a batch.
"""

from __future__ import annotations

from ._integral import integral
from ._pyramid import pack_pyramid, pyramid
from ._resize import INTERPOLATIONS, resize
from ._zoom import SPLINE_BORDERS, SPLINE_ORDERS, spline_filter, zoom
from . import _integral_cuda, _resize_cuda, _zoom_cuda, _zoom_pallas  # noqa: F401  (register the CuPy and JAX overrides)

__all__ = [
    "integral",
    "resize",
    "pyramid",
    "pack_pyramid",
    "INTERPOLATIONS",
    "spline_filter",
    "zoom",
    "SPLINE_ORDERS",
    "SPLINE_BORDERS",
]
