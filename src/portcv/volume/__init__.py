"""Spatio-temporal filtering of video: exact 3-D convolution (Lin et al.'s video-parallelization
article, eq. 1), its kernels (quantized real kernels, Gabor banks) and a streaming form for live
video.

Video is ``(..., T, H, W)`` uint8, uint16 or int16; kernels are integer taps ``(kt, kh, kw)`` or
banks ``(F, kt, kh, kw)``. Every method (direct sum, 3-D FFT, per-frame 2-D FFT) returns the same
bits on every backend: integer sums, and float64 FFTs only within a proven rounding bound.
"""

from __future__ import annotations

from ._convolve3d import METHODS, convolve3d, fft_error_bound
from ._kernels import gabor_kernel3d, quantize_kernel
from ._stream import Convolver3D
from . import _convolve3d_cuda, _convolve3d_pallas  # noqa: F401  (register the CuPy and JAX overrides)

__all__ = [
    "convolve3d",
    "fft_error_bound",
    "quantize_kernel",
    "gabor_kernel3d",
    "Convolver3D",
    "METHODS",
]
