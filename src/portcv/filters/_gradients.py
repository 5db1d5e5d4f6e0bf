"""Sobel/Scharr derivative taps (OpenCV's ``getDerivKernels``) and the fused gradients kernel.

``sobel`` itself is a separable filter (``_separable``). ``gradients`` returns both first-order
derivatives: portably as two separable passes, on CuPy as one pass of ``_gradients.cu`` that
reads the tile once and writes gx and gy. Del Vecchio et al.'s gradient step (section II-C).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _border, _validate
from .._border import BORDER_CODE
from .._kernel import kernel
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


@gradients_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _gradients_numpy(img: Any, *, ksize: int, has_channels: bool, border: str) -> tuple[Any, Any]:
    from ._separable import _separable_filter_numpy

    # The portable version's two separable passes, each on the separable filter's NumPy override.
    smooth, deriv = deriv_taps(0, ksize), deriv_taps(1, ksize)
    common = {"has_channels": has_channels, "border": border, "border_value": 0, "finish": _INT16}
    return (_separable_filter_numpy(img, kx=deriv, ky=smooth, **common),
            _separable_filter_numpy(img, kx=smooth, ky=deriv, **common))


@gradients_kernel.override("cupy", supports="1 to 4 channels; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _gradients_cupy(img: Any, *, ksize: int, has_channels: bool, border: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

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
    fn = cuda_function(__name__, f"portcv_gradients<{size},{channels}>")
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


def sobel(
    image: Any,
    dx: int,
    dy: int,
    *,
    ksize: int = 3,
    border: str = "reflect101",
    channel_axis: Any = "auto",
) -> Any:
    """Sobel (or Scharr) derivative, int16, equal bit-for-bit to ``cv2.Sobel(img, cv2.CV_16S, dx, dy, ksize=ksize)``.

    Del Vecchio et al.'s gradient step (section II-C) with OpenCV's kernels: the separable
    correlation ``out = saturate_int16(sum_j ky[j] sum_i kx[i] img[y+j-ay, x+i-ax])`` with
    ``kx`` the taps of derivative order ``dx`` and ``ky`` those of order ``dy`` (exact int32 sum,
    no scaling, saturated to int16 like ``saturate_cast<short>``).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    dx, dy : int
        Derivative orders across columns (x) and rows (y); ``dx + dy >= 1``, each below the
        kernel size (ksize 1: below 3). Scharr (``ksize=-1``) takes ``(1, 0)`` or ``(0, 1)``.
    ksize : {3, -1, 1, 5, 7}
        Kernel size; ``-1`` is the 3x3 Scharr kernel (``cv2.FILTER_SCHARR``), ``1`` uses 3 taps
        for a derivative and none (``[1]``) for order 0, as OpenCV does.
    border : {'reflect101', 'replicate', 'constant'}
        As in :func:`sep_filter`; ``'constant'`` pads with 0, as ``cv2.Sobel`` does.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`.

    Returns
    -------
    int16 array of the same shape.

    Notes
    -----
    Taps follow OpenCV's ``getDerivKernels``: Scharr ``[3, 10, 3]`` / ``[-1, 0, 1]``; Sobel
    size 3 ``[1, 2, 1]``, ``[-1, 0, 1]``, ``[1, -2, 1]``; larger sizes start from ``[1, 0, ...]``
    and apply ``size - order - 1`` smoothing steps (``[1, 1]``) and ``order`` differencing steps
    (``[-1, 1]``): size 5 gives ``[1, 4, 6, 4, 1]``, ``[-1, -2, 0, 2, 1]``, ...; they are
    correlation taps (not flipped). ``sum|kx| * sum|ky| * 255 <= 64 * 64 * 255`` fits int32.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.tile(np.arange(5, dtype=np.uint8) * 10, (3, 1))
    >>> portcv.to_numpy(portcv.filters.sobel(img, 1, 0))[0]        # reflect101 makes the ends 0
    array([ 0, 80, 80, 80,  0], dtype=int16)
    """
    img = _validate.image(image)
    ksize, dx, dy = _sobel_args(ksize, dx, dy)
    border, _ = _border.check(border, 0)
    has_channels = _validate.has_channels(img, channel_axis)
    return separable_filter_kernel(
        img, kx=deriv_taps(dx, ksize), ky=deriv_taps(dy, ksize), has_channels=has_channels, border=border,
        border_value=0, finish=("shift", 0, 0, "int16"),
    )


def _sobel_args(ksize: Any, dx: Any, dy: Any) -> tuple[int, int, int]:
    """Check ``ksize`` and the derivative orders as ``cv2.Sobel`` would (clear errors instead of asserts)."""
    ksize = _validate.integer(ksize, "ksize")
    if ksize not in SOBEL_KSIZES:
        raise ValueError(f"ksize must be one of {SOBEL_KSIZES} (-1: Scharr), got {ksize}")
    dx = _validate.integer(dx, "dx", low=0)
    dy = _validate.integer(dy, "dy", low=0)
    if dx + dy == 0:
        raise ValueError("dx, dy: at least one derivative order must be > 0, got dx=0, dy=0")
    if ksize == -1 and dx + dy != 1:
        raise ValueError(f"dx, dy: Scharr (ksize=-1) computes a first derivative (dx + dy == 1), got dx={dx}, dy={dy}")
    for name, order in (("dx", dx), ("dy", dy)):
        size = deriv_size(order, ksize)
        if order >= size:
            raise ValueError(f"{name} must be < {size} for ksize={ksize}, got {order}")
    return ksize, dx, dy


def gradients(
    image: Any,
    *,
    ksize: int = 3,
    border: str = "reflect101",
    channel_axis: Any = "auto",
) -> tuple[Any, Any]:
    """Both first derivatives in one pass: ``(sobel(image, 1, 0), sobel(image, 0, 1))``, int16.

    Del Vecchio et al.'s gradient step (section II-C): gx across columns, gy across rows, each equal
    bit-for-bit to ``cv2.Sobel(img, cv2.CV_16S, 1, 0)`` / ``(0, 1)`` with the same ``ksize``.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    ksize : {3, -1, 1, 5, 7}
        As in :func:`sobel` (``-1``: Scharr).
    border, channel_axis
        As in :func:`sobel`.

    Returns
    -------
    (gx, gy) : two int16 arrays of the image's shape.

    Notes
    -----
    Portable code runs the two separable passes. On CuPy one fused kernel
    (``_gradients.cu``) loads each tile and its halo once, makes both horizontal row sums
    (smoothing and derivative taps) in int16 shared memory, and writes gx and gy from them: one
    read of the image instead of two.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.tile(np.arange(5, dtype=np.uint8) * 10, (3, 1))
    >>> gx, gy = portcv.filters.gradients(img)
    >>> portcv.to_numpy(gx)[1], int(abs(portcv.to_numpy(gy)).max())
    (array([ 0, 80, 80, 80,  0], dtype=int16), 0)
    """
    img = _validate.image(image)
    ksize, _, _ = _sobel_args(ksize, 1, 0)
    border, _ = _border.check(border, 0)
    has_channels = _validate.has_channels(img, channel_axis)
    return gradients_kernel(img, ksize=ksize, has_channels=has_channels, border=border)
