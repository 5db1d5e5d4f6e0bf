"""The public separable filters (``sep_filter``, ``box_blur``, ``mean_filter``): each picks taps and
a rounding step and runs the separable pass of ``portcv/_separable_pass.py`` (exact integer
horizontal + vertical taps, then one rounding; its NumPy override works in 16-bit integers where
their bound allows, its CuPy override runs ``_separable_pass_cuda.cu``). Del Vecchio et al.'s
separable convolution (section II-A, eq. 2-3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _border, _validate
from .._separable_pass import MAX_TAPS, OUT_DTYPES, check_accumulator, separable_filter_kernel
from ..backends import backend


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

    Del Vecchio et al.'s separable convolution (section II-A, eq. 2-3) in exact integer arithmetic:
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
    finish = _shift_finish(dtype, shift, min(kx) >= 0 and min(ky) >= 0, sum(kx) * sum(ky))
    return separable_filter_kernel(
        img, kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value,
        finish=finish,
    )


def _shift_finish(dtype: Any, shift: int, non_negative: bool, tap_sum: int) -> tuple:
    """The output-dtype rule of sep_filter and convolve2d: ``None`` is uint8 when the taps
    cannot leave [0, 255] (non-negative, summing to at most ``2**shift``), int32 otherwise."""
    if dtype is None:
        dtype = "uint8" if non_negative and tap_sum <= (1 << shift) else "int32"
    return ("shift", shift, 0, _validate.choice(dtype, "dtype", tuple(OUT_DTYPES)))


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
    """Mean (box) filter, equal to ``cv2.blur`` on uint8 images (the Webcam Streaming & Filters report's mean filter).

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


#: The mean filter's rounding: the Webcam Streaming & Filters report's truncation, or cv2.blur's arithmetic.
MEAN_ROUNDINGS = ("truncate", "opencv")


def mean_filter(
    image: Any,
    ksize: int,
    *,
    rounding: str = "truncate",
    border: str = "constant",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """The Webcam Streaming & Filters report's k x k mean filter: ``floor(window sum / k**2)``, zero border.

    The report (section 6.2, ``computeMeanKernel`` and its tiled CUDA convolution, section 6.4)
    multiplies every pixel by ``1/(k*k)`` in float, sums, and stores the sum into a ``uint8_t``,
    which truncates; pixels outside the image are 0. portcv computes the same thing exactly: the
    window sum ``s`` is an exact integer and ``out = floor(s / k**2)`` (integer division, the
    only rounding). That is the default; ``rounding='opencv'`` gives :func:`box_blur`'s
    ``cv2.blur`` arithmetic (round half up for odd ``k``) instead.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    ksize : int
        Odd window side ``k``, 1 to 31.
    rounding : {'truncate', 'opencv'}
        ``'truncate'`` (the report): ``floor(s / k**2)``. ``'opencv'``: as :func:`box_blur`
        (``cv2.blur``), which rounds to nearest.
    border : {'constant', 'reflect101', 'replicate'}
        Default ``'constant'`` with ``border_value=0``: the report's zero padding (pixels
        outside the image count as 0 and the sum is still divided by ``k**2``).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`.

    Returns
    -------
    uint8 array of the same shape.

    Notes
    -----
    The report's float arithmetic (``float(1/k^2)`` taps, float32 sum, truncating conversion)
    can land just below an integer when ``s`` is a multiple of ``k**2``; portcv's exact
    ``floor`` is what that code means to compute. Against ``cv2.blur(img, (k, k),
    borderType=BORDER_CONSTANT)`` (and :func:`box_blur`) the default differs wherever the mean's
    fraction is >= 0.5: those round up, the report truncates (one level lower). The window is
    separable (ones x ones), so it runs on the separable kernel (``_separable_pass_cuda.cu``) with the
    ``floor_div`` finish.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> frame = np.array([[120, 139, 90], [99, 126, 106], [46, 75, 88]], np.uint8)   # report's B
    >>> portcv.to_numpy(portcv.filters.mean_filter(frame, 3))
    array([[53, 75, 51],
           [67, 98, 69],
           [38, 60, 43]], dtype=uint8)
    """
    img = _validate.image(image)
    k = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if k % 2 == 0:
        raise ValueError(f"ksize must be odd, got {k}")
    rounding = _validate.choice(rounding, "rounding", MEAN_ROUNDINGS)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    area = k * k  # s <= 255 * 961: no overflow
    finish = ("floor_div", area, 0, "uint8") if rounding == "truncate" else _box_finish(area)
    return separable_filter_kernel(
        img, kx=(1,) * k, ky=(1,) * k, has_channels=has_channels, border=border,
        border_value=border_value, finish=finish,
    )
