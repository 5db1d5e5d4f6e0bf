"""Neighbourhood filters on uint8 images, exact integer arithmetic on every backend.

Every filter here is a separable integer correlation (Del Vecchio et al.'s eq. 2-3: one horizontal
1-D pass, one vertical 1-D pass, O(k) work per pixel instead of O(k^2)) followed by a single
rounding step, except ``convolve2d`` (and ``gaussian_blur(rule='report')``), the direct 2-D
form of eq. 1 for kernels that do not factor. Images are ``(..., H, W)`` or ``(..., H, W, C)``;
leading axes are a batch.
"""

from __future__ import annotations

from .. import _bilateral_cuda, _bilateral_pallas, _derivatives_cuda, _separable_pass_cuda  # noqa: F401
from . import _convolve_cuda  # noqa: F401  (registers convolve2d's CuPy override)
from .._border import BORDERS
from ._convolve import convolve2d
from ._gaussian import gaussian_blur, gaussian_kernel, gaussian_taps_q8
from ._gradients import gradients, sobel
from ._joint_bilateral import joint_bilateral
from ._median import median_filter
from ._separable import box_blur, mean_filter, sep_filter

# The twins imported first register the CuPy and JAX overrides of the core kernels these filters
# run (portcv/_bilateral.py, _derivatives.py, _separable_pass.py); importing them imports neither.

__all__ = [
    "sep_filter",
    "gaussian_blur",
    "gaussian_taps_q8",
    "box_blur",
    "BORDERS",
    "convolve2d",
    "mean_filter",
    "gaussian_kernel",
    "sobel",
    "gradients",
    "median_filter",
    "joint_bilateral",
]
