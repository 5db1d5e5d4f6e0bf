"""Neighbourhood filters on uint8 images, exact integer arithmetic on every backend.

Every filter here is a separable integer correlation (the Rice paper's eq. 2-3: one horizontal
1-D pass, one vertical 1-D pass, O(k) work per pixel instead of O(k^2)) followed by a single
rounding step. Images are ``(..., H, W)`` or ``(..., H, W, C)``; leading axes are a batch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _border, _validate
from ._border import BORDERS
from ._separable import MAX_TAPS, OUT_DTYPES, check_accumulator, separable_filter_kernel

__all__ = ["sep_filter", "gaussian_blur", "gaussian_taps_q8", "box_blur", "BORDERS"]


# --------------------------------------------------------------------------------------------
# Public filters
# --------------------------------------------------------------------------------------------
def sep_filter(
    image: Any,
    kx: Any,
    ky: Any,
    shift: int,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    dtype: str | None = None,
    channel_axis: Any = "auto",
) -> Any:
    """Separable integer filter: ``out = round(sum_j ky[j] sum_i kx[i] img[y+j-ay, x+i-ax] / 2**shift)``.

    The Rice paper's separable convolution (section II-A, eq. 2-3) in exact integer arithmetic:
    the horizontal pass, then the vertical pass, accumulate in int32 without rounding, and one
    final ``(acc + 2**(shift-1)) >> shift`` rounds half up. Taps are correlation taps (not
    flipped), anchored at ``k // 2`` like OpenCV's ``sepFilter2D``.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    kx, ky : sequence of int
        Horizontal and vertical taps, 1 to 31 each. ``sum(|kx|) * sum(|ky|) * 255`` must fit int32.
    shift : int
        Right shift (0..30) applied with rounding after both passes (taps in Q``shift``).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the image are made (OpenCV's BORDER_REFLECT_101 is the default).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    dtype : {None, 'uint8', 'int16', 'int32'}
        Output type. ``None`` picks uint8 when the taps cannot leave [0, 255] (non-negative taps
        with ``sum(kx) * sum(ky) <= 2**shift``), otherwise int32. An explicit uint8 or int16
        saturates like OpenCV's ``saturate_cast``.
    channel_axis : {'auto', None, -1}
        ``-1``: the last axis holds channels, filtered independently. ``None``: all leading axes
        are a batch of 2-D planes. ``'auto'``: channels when ``ndim >= 3`` and the last axis has
        at most 4 entries.

    Returns
    -------
    array of the same shape, dtype as described above.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.arange(25, dtype=np.uint8).reshape(5, 5)
    >>> portcv.to_numpy(portcv.filters.sep_filter(img, [1, 2, 1], [1, 2, 1], 4))[2]
    array([11, 11, 12, 13, 14], dtype=uint8)
    """
    img = _validate.image(image)
    kx = _validate.taps(kx, "kx", max_len=MAX_TAPS)
    ky = _validate.taps(ky, "ky", max_len=MAX_TAPS)
    shift = _validate.integer(shift, "shift", low=0, high=30)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    rounding = (1 << (shift - 1)) if shift else 0
    check_accumulator(kx, ky, rounding)
    if dtype is None:
        fits = min(kx) >= 0 and min(ky) >= 0 and sum(kx) * sum(ky) <= (1 << shift)
        dtype = "uint8" if fits else "int32"
    dtype = _validate.choice(dtype, "dtype", tuple(OUT_DTYPES))
    return separable_filter_kernel(
        img, kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value,
        finish=("shift", shift, 0, dtype),
    )


def gaussian_taps_q8(ksize: int, sigma: float) -> tuple[int, ...]:
    """OpenCV's 8-bit Gaussian taps: ``ksize`` integers summing to 256 (Q8).

    Float taps ``exp(-x^2 / (2 sigma^2))`` normalized to sum 1 (float64), then quantized from the
    outside in with error diffusion and round-half-even; the centre tap takes what is left so the
    sum is exactly 256 (``../shared/opencv-fixed-point.md``; OpenCV's ``createGaussianKernels``
    for CV_8U).

    Examples
    --------
    >>> gaussian_taps_q8(5, 1.2)
    (22, 62, 88, 62, 22)
    """
    ksize = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    return _gaussian_taps_q8(ksize, _validate.real(sigma, "sigma", positive=True))


@functools.lru_cache(maxsize=1024)
def _gaussian_taps_q8(ksize: int, sigma: float) -> tuple[int, ...]:
    half = ksize // 2
    scale = -0.125 / (sigma * sigma)
    t = [math.exp(((1 - ksize + 2 * i) ** 2) * scale) for i in range(half)]
    inv_sum = 1.0 / (2.0 * sum(t) + 1.0)
    q, err = [], 0.0
    for ti in t:
        a = ti * inv_sum * 256.0 + err
        v = round(a)  # Python's round is half-to-even, like OpenCV's cvRound on doubles
        err = a - v
        q.append(v)
    centre = 256 - 2 * sum(q)
    return tuple(q + [centre] + q[::-1])


def _gaussian_ksize(ksize: int, sigma: float) -> int:
    """OpenCV's rule for ``ksize = 0`` on 8-bit images: ``cvRound(sigma * 6 + 1) | 1``."""
    return ksize if ksize > 0 else int(round(sigma * 6 + 1)) | 1


def gaussian_blur(
    image: Any,
    *,
    sigma: float,
    ksize: Any = 0,
    sigma_y: float | None = None,
    border: str = "reflect101",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """Gaussian blur, equal bit-for-bit to ``cv2.GaussianBlur`` on uint8 images.

    Taps are :func:`gaussian_taps_q8` (Q8, sum 256) in each direction; the image is filtered
    with exact integer sums and rounded once: ``out = (acc + 2**15) >> 16`` (OpenCV's 8-bit
    fixed-point path, ``../shared/opencv-fixed-point.md``). The Rice paper's low-pass step
    (section II-B).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    sigma : float
        Standard deviation in x, in (0, 10].
    ksize : int or (int, int)
        Odd kernel width (and height) up to 31, or 0 to derive it from sigma as OpenCV does
        (``round(6 sigma + 1) | 1``). A 1-row (1-column) image uses size 1 in that direction
        unless ``border='constant'``, as OpenCV does.
    sigma_y : float, optional
        Standard deviation in y; defaults to ``sigma``.
    border, border_value, channel_axis
        As in :func:`sep_filter`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.zeros((5, 5), np.uint8); img[2, 2] = 255
    >>> portcv.to_numpy(portcv.filters.gaussian_blur(img, ksize=3, sigma=0.8))[1:4, 1:4]
    array([[14, 32, 14],
           [32, 70, 32],
           [14, 32, 14]], dtype=uint8)
    """
    img = _validate.image(image)
    sigma = _validate.real(sigma, "sigma", positive=True, high=10.0)
    sigma_y = sigma if sigma_y is None else _validate.real(sigma_y, "sigma_y", positive=True, high=10.0)
    kw, kh = _validate.kernel_size(ksize, "ksize", odd=True, low=0, high=MAX_TAPS)
    kw, kh = _gaussian_ksize(kw, sigma), _gaussian_ksize(kh, sigma_y)
    if kw > MAX_TAPS or kh > MAX_TAPS:
        raise ValueError(f"sigma: the derived kernel size ({kw}, {kh}) exceeds {MAX_TAPS}; pass a smaller sigma or ksize")
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    if border != "constant":  # OpenCV shrinks the kernel of a 1-pixel axis, except for constant borders
        kw, kh = (1 if width == 1 else kw), (1 if height == 1 else kh)
    kx, ky = _gaussian_taps_q8(kw, sigma), _gaussian_taps_q8(kh, sigma_y)
    return separable_filter_kernel(
        img, kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value,
        finish=("shift", 16, 0, "uint8"),
    )


def _box_finish(area: int) -> tuple:
    """OpenCV's normalization of a box sum over ``area`` pixels (8-bit ``blur``)."""
    if area == 1:
        return ("shift", 0, 0, "uint8")
    if area == 2:
        # OpenCV's formula gives (s + 2) >> 1 here, rounding 0.5 -> 1 and 1.0 -> 2 -- a bug we
        # do not copy; round half up instead.
        return ("box_multiply", 1, 1 << 22, "uint8")
    if area <= 256:
        q = 2**23 / area
        ds, dd = math.floor(q), area // 2
        if q - ds < 0.5:
            dd += 1
        else:
            ds += 1
        return ("box_multiply", dd, ds, "uint8")
    inv_area_bits = int(np.float32(1.0 / area).view(np.uint32))
    return ("box_float32", area, inv_area_bits, "uint8")


def box_blur(
    image: Any,
    ksize: Any,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """Mean (box) filter, equal to ``cv2.blur`` on uint8 images (the webcam report's mean filter).

    The window sum ``s`` over ``A = kw * kh`` pixels is exact; it is normalized the way OpenCV
    does for 8-bit images: for ``A <= 256``, ``((s + dd) * ds) >> 23`` with ``ds = 2**23 / A``
    rounded and ``dd`` compensating (round half up, except that powers of two round
    ``(s + A/2 + 1) >> log2(A)``); for ``A > 256``, ``rint(float32(s) * float32(1/A))`` (one IEEE
    multiply, identical on every backend). For ``A = 2`` OpenCV computes ``(s + 2) >> 1``, which
    we treat as a bug: portcv rounds half up. For even ``A > 256`` OpenCV switches to float64 for
    the last pixels of some rows, where a tie can round the other way; portcv uses float32
    throughout (measured: a handful of pixels per million differ by 1).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    ksize : int or (int, int)
        Window width (and height), 1 to 31; even sizes are anchored at ``k // 2`` like OpenCV.
    border, border_value, channel_axis
        As in :func:`sep_filter`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 0, 9], [0, 9, 9], [9, 9, 9]], np.uint8)
    >>> portcv.to_numpy(portcv.filters.box_blur(img, 3))
    array([[4, 5, 7],
           [5, 6, 7],
           [7, 7, 9]], dtype=uint8)
    """
    img = _validate.image(image)
    kw, kh = _validate.kernel_size(ksize, "ksize", odd=False, low=1, high=MAX_TAPS)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    return separable_filter_kernel(
        img, kx=(1,) * kw, ky=(1,) * kh, has_channels=has_channels, border=border,
        border_value=border_value, finish=_box_finish(kw * kh),
    )
