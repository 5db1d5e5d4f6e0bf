"""OpenCV's derivative taps and the image gradients (gx, gy) kernel shared by ``portcv.filters``
(``sobel``, ``gradients``) and ``portcv.edges`` (Canny and the paper's detectors): two separable
passes. The ``gradients`` kernel is defined here; its CUDA override is ``_derivatives_cuda.py``."""

from __future__ import annotations

import functools
from typing import Any

from ._kernel import kernel
from ._separable_pass import separable_filter_kernel

_INT16 = ("shift", 0, 0, "int16")  # exact sum, saturated to int16 (cv2.Sobel's CV_16S output)


def deriv_size(order: int, ksize: int) -> int:
    """Length of the taps of derivative ``order`` for ``ksize``: ksize 1 means 3 for order > 0."""
    if ksize == -1:
        return 3
    return 3 if ksize == 1 and order > 0 else ksize


@functools.lru_cache(maxsize=None)
def deriv_taps(order: int, ksize: int) -> tuple[int, ...]:
    """OpenCV's integer taps of derivative ``order`` (correlation taps, not flipped).

    Scharr (``ksize=-1``, order 0 or 1): ``[3, 10, 3]``, ``[-1, 0, 1]``. Sobel: size
    ``deriv_size(order, ksize)``; size 1 is ``[1]``; otherwise ``getSobelKernels``' rule: start
    from ``[1, 0, ...]``, apply ``size - order - 1`` smoothing steps (convolve with [1, 1]) and
    ``order`` differencing steps (with [-1, 1]), which gives the binomial row for order 0 and,
    for size 3, [1, 2, 1], [-1, 0, 1], [1, -2, 1]. The caller checks ``order < size``.
    """
    if ksize == -1:
        return ((3, 10, 3), (-1, 0, 1))[order]
    n = deriv_size(order, ksize)
    taps = [1] + [0] * n
    for _ in range(n - order - 1):
        taps = [taps[0]] + [taps[j] + taps[j - 1] for j in range(1, n + 1)]
    for _ in range(order):
        taps = [-taps[0]] + [taps[j - 1] - taps[j] for j in range(1, n + 1)]
    return tuple(taps[:n])


@kernel("gradients")
def gradients_kernel(xp: Any, img: Any, *, ksize: int, has_channels: bool, border: str) -> tuple[Any, Any]:
    """Portable (gx, gy): two separable passes, ``sobel(1, 0)`` and ``sobel(0, 1)``, int16."""
    smooth, deriv = deriv_taps(0, ksize), deriv_taps(1, ksize)
    common = {"has_channels": has_channels, "border": border, "border_value": 0, "finish": _INT16}
    gx = separable_filter_kernel.portable(xp, img, kx=deriv, ky=smooth, **common)
    gy = separable_filter_kernel.portable(xp, img, kx=smooth, ky=deriv, **common)
    return gx, gy


@gradients_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _gradients_numpy(img: Any, *, ksize: int, has_channels: bool, border: str) -> tuple[Any, Any]:
    import numpy as np

    from ._separable_pass import _separable_filter_numpy
    from .backends.numpy import compiled

    smooth, deriv = deriv_taps(0, ksize), deriv_taps(1, ksize)
    if compiled() and img.dtype == np.uint8 and img.size:
        return _gradients_compiled(img, smooth, deriv, has_channels, border)
    # The portable version's two separable passes, each on the separable filter's NumPy override.
    common = {"has_channels": has_channels, "border": border, "border_value": 0, "finish": _INT16}
    return (_separable_filter_numpy(img, kx=deriv, ky=smooth, **common),
            _separable_filter_numpy(img, kx=smooth, ky=deriv, **common))


def _gradients_compiled(img: Any, smooth: tuple, deriv: tuple, has_channels: bool, border: str) -> tuple[Any, Any]:
    """The NumPy override's compiled path: gx and gy in one sweep, one band of rows per thread
    and plane, each one call of ``gradients_band``."""
    import numpy as np

    from ._derivatives_numba import gradients_band
    from ._separable_pass import _sum_dtype, loop_input, padded_sources
    from .backends.numpy import host_threads, row_bands, run_bands, scratch

    channels = img.shape[-1] if has_channels else 1
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    n = width * channels
    planes = img.size // (height * n)
    x = loop_input(img, (planes, height, n))
    gx, gy = np.empty((planes, height, n), np.int16), np.empty((planes, height, n), np.int16)
    ss, sd = sum(abs(t) for t in smooth), sum(abs(t) for t in deriv)
    # The narrowest types that hold the vertical sums and the outputs' exact sums (the loops
    # compute modulo their width; the sums fit, so they are exact).
    down_s_dtype, down_d_dtype = _sum_dtype(255 * ss, True), _sum_dtype(255 * sd, False)
    acc_dtype = _sum_dtype(255 * ss * sd, False)
    taps_dtype = np.int16  # OpenCV's derivative taps: |t| <= 20 for ksize <= 7
    ts, td = np.asarray(smooth, taps_dtype), np.asarray(deriv, taps_dtype)
    xs, xd = padded_sources(width, len(smooth), border), padded_sources(width, len(deriv), border)
    ys, yd = padded_sources(height, len(smooth), border), padded_sources(height, len(deriv), border)
    outside = np.zeros(n, np.uint8)  # a constant border's rows: 0, as cv2.Sobel's

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        down_s = scratch("gradients-down-s", ((width + len(deriv) - 1) * channels,), down_s_dtype)
        down_d = scratch("gradients-down-d", ((width + len(smooth) - 1) * channels,), down_d_dtype)
        acc = scratch("gradients-acc", (n,), acc_dtype)
        gradients_band(x, gx, gy, p, r0, r1, ts, td, xs, xd, ys, yd, channels, outside, down_s, down_d, acc)

    run_bands(band, row_bands(height, n, planes=planes, target=-(-height // host_threads()) * n))
    return gx.reshape(img.shape), gy.reshape(img.shape)
