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
    from ._separable_pass import _separable_filter_numpy

    # The portable version's two separable passes, each on the separable filter's NumPy override.
    smooth, deriv = deriv_taps(0, ksize), deriv_taps(1, ksize)
    common = {"has_channels": has_channels, "border": border, "border_value": 0, "finish": _INT16}
    return (_separable_filter_numpy(img, kx=deriv, ky=smooth, **common),
            _separable_filter_numpy(img, kx=smooth, ky=deriv, **common))
