"""Sobel/Scharr derivative taps (OpenCV's ``getDerivKernels``) and the fused gradients kernel.

``sobel`` itself is a separable filter (``_separable``). ``gradients`` returns both first-order
derivatives: portably as two separable passes, on CuPy as one pass of ``cuda/gradients.cu`` that
reads the tile once and writes gx and gy. The Rice paper's gradient step (section II-C).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._border import BORDER_CODE
from ._kernel import kernel
from ._separable import separable_filter_kernel

#: Sobel kernel sizes, as cv2.Sobel's ``ksize``; -1 is Scharr's 3x3 (``cv2.FILTER_SCHARR``).
SOBEL_KSIZES = (-1, 1, 3, 5, 7)
_INT16 = ("shift", 0, 0, "int16")  # exact sum, saturated to int16 (cv2.Sobel's CV_16S output)
_TILE_H = 32


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


@gradients_kernel.override("cupy")
def _gradients_cupy(img: Any, *, ksize: int, has_channels: bool, border: str) -> Any:
    import cupy

    from .backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    shape = img.shape
    H, W = shape[-3:-1] if has_channels else shape[-2:]
    grid_xy = ((W * channels + 127) // 128, (H + _TILE_H - 1) // _TILE_H)
    if not 1 <= channels <= 4 or grid_xy[1] > 65535:
        return NotImplemented
    # One size K for both taps: ksize 1's smoothing tap [1] becomes [0, 1, 0] (same sums).
    deriv = deriv_taps(1, ksize)
    size = len(deriv)
    smooth = deriv_taps(0, ksize)
    pad = (size - len(smooth)) // 2
    smooth = (0,) * pad + smooth + (0,) * pad
    fn = cuda_function("gradients.cu", f"portcv_gradients<{size},{channels}>")
    img = cupy.ascontiguousarray(img)
    gx = cupy.empty(shape, dtype=cupy.int16)
    gy = cupy.empty(shape, dtype=cupy.int16)
    args = (np.int32(H), np.int32(W), device_constant(smooth), device_constant(deriv), np.int32(BORDER_CODE[border]))
    planes = img.size // (H * W * channels)
    src, dx, dy = img.reshape(planes, -1), gx.reshape(planes, -1), gy.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,), (src[start:stop], dx[start:stop], dy[start:stop]) + args)
    return gx, gy
