"""Sobel/Scharr derivatives and the fused gradients (``sobel``, ``gradients``): ``sobel`` is the
separable pass with OpenCV's ``getDerivKernels`` taps; ``gradients`` returns both first-order
derivatives through the ``gradients`` kernel (``portcv/_derivatives.py``: portably two separable
passes, on CuPy one pass of ``_derivatives_cuda.cu`` that reads the tile once and writes gx and
gy). Del Vecchio et al.'s gradient step (section II-C).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _border, _validate
from .._derivatives import deriv_size, deriv_taps, gradients_kernel
from .._separable_pass import separable_filter_kernel

#: Sobel kernel sizes, as cv2.Sobel's ``ksize``; -1 is Scharr's 3x3 (``cv2.FILTER_SCHARR``).
SOBEL_KSIZES = (-1, 1, 3, 5, 7)

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
    (``_derivatives_cuda.cu``) loads each tile and its halo once, makes both horizontal row sums
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
