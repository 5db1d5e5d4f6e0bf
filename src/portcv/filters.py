"""Neighbourhood filters on uint8 images, exact integer arithmetic on every backend.

Every filter here is a separable integer correlation (the Rice paper's eq. 2-3: one horizontal
1-D pass, one vertical 1-D pass, O(k) work per pixel instead of O(k^2)) followed by a single
rounding step, except ``convolve2d`` (and ``gaussian_blur(rule='report')``), the direct 2-D
form of eq. 1 for kernels that do not factor. Images are ``(..., H, W)`` or ``(..., H, W, C)``;
leading axes are a batch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _border, _validate
from ._border import BORDERS
from ._separable import MAX_TAPS, OUT_DTYPES, check_accumulator, separable_filter_kernel
from ._convolve import check_accumulator as check_kernel_accumulator, convolve2d_kernel
from ._gradients import SOBEL_KSIZES, deriv_size, deriv_taps, gradients_kernel
from ._median import MAX_KSIZE as MEDIAN_MAX_KSIZE, MIN_KSIZE as MEDIAN_MIN_KSIZE, median_filter_kernel

__all__ = ["sep_filter", "gaussian_blur", "gaussian_taps_q8", "box_blur", "BORDERS", "convolve2d", "mean_filter", "gaussian_kernel", "sobel", "gradients", "median_filter"]


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
    rule: str = "opencv",
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
    rule : {'opencv', 'report'}
        ``'opencv'`` (default): as above. ``'report'``: the webcam report's square 2-D kernel
        (section 6.3, ``gaussian_kernel(sigma, ksize=k, rule='report')``, Q22) applied by the
        direct 2-D filter (:func:`convolve2d`), ``out = (acc + 2**21) >> 22``; ``ksize=0``
        derives ``k = 2 ceil(3 sigma) - 1`` (the report's "6 sigma - 1"); one sigma, square
        ``ksize``, no 1-pixel-axis shrink. The report pads with zeros: pass ``border='constant'``
        to match it.

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
    if _validate.choice(rule, "rule", GAUSSIAN_RULES) == "report":
        return _gaussian_blur_report(img, sigma, sigma_y, kw, kh, border, border_value, channel_axis)
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


# --------------------------------------------------------------------------------------------
# Direct 2-D filter, the webcam report's mean and Gaussian filters, Sobel gradients
# --------------------------------------------------------------------------------------------
def convolve2d(
    image: Any,
    kernel: Any,
    shift: int,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    dtype: str | None = None,
    channel_axis: Any = "auto",
) -> Any:
    """Direct 2-D integer filter: ``out = round(sum_j sum_i k[j, i] img[y+j-ay, x+i-ax] / 2**shift)``.

    The Rice paper's direct 2-D form (section II-A, eq. 1), ``O(k^2)`` work per pixel, for
    kernels that do not factor into two 1-D taps (use :func:`sep_filter` for those; the paper's
    Table I vs II compares the two). Products are summed exactly in int32 and one final
    ``(acc + 2**(shift-1)) >> shift`` rounds half up, as in :func:`sep_filter`.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    kernel : (kh, kw) array_like of int
        Integer taps, 1 to 31 on each side (any backend's array, a NumPy array or nested lists;
        read on the host). ``sum(|kernel|) * 255 + 2**(shift-1)`` must fit int32.
    shift : int
        Right shift (0..30) applied with rounding after the sum (taps in Q``shift``).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the image are made (OpenCV's BORDER_REFLECT_101 is the default).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    dtype : {None, 'uint8', 'int16', 'int32'}
        Output type, chosen as by :func:`sep_filter`: ``None`` is uint8 when the taps cannot
        leave [0, 255] (all >= 0, ``sum(kernel) <= 2**shift``), otherwise int32; uint8 and int16
        saturate like OpenCV's ``saturate_cast``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`.

    Returns
    -------
    array of the same shape, dtype as described above.

    Notes
    -----
    Taps are **correlation** taps, anchored at ``(kh // 2, kw // 2)`` (even sizes too), as in
    OpenCV's ``filter2D`` and :func:`sep_filter`::

        acc[y, x] = sum_j sum_i kernel[j, i] * img[y + j - kh // 2, x + i - kw // 2]   (int32, exact)
        out = (acc + 2**(shift - 1)) >> shift        (shift > 0: round half up; shift = 0: acc)

    The paper's eq. 1 is a convolution (``h[i, j] x[m - i, n - j]``): pass
    ``kernel[::-1, ::-1]`` to get it. With ``shift=0`` the result is ``cv2.filter2D(img, ddepth,
    kernel.astype(np.float32), borderType=...)`` bit for bit (``ddepth`` -1 for uint8, CV_16S
    for int16). The CuPy version (``cuda/convolve.cu``) is one pass over a shared-memory tile with
    its halo, the taps in shared memory.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.arange(25, dtype=np.uint8).reshape(5, 5)
    >>> gauss = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]        # = sep_filter(img, [1, 2, 1], [1, 2, 1], 4)
    >>> portcv.to_numpy(portcv.filters.convolve2d(img, gauss, 4))[2]
    array([11, 11, 12, 13, 14], dtype=uint8)
    >>> portcv.to_numpy(portcv.filters.convolve2d(img, [[-1, 0, 1]], 0))[2]   # correlation: x+1 - x-1
    array([0, 2, 2, 2, 0], dtype=int32)
    """
    img = _validate.image(image)
    taps = _validate.taps2d(kernel, "kernel", max_size=MAX_TAPS)
    shift = _validate.integer(shift, "shift", low=0, high=30)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    check_kernel_accumulator(taps, (1 << (shift - 1)) if shift else 0)
    flat = [t for row in taps for t in row]
    finish = _shift_finish(dtype, shift, min(flat) >= 0, sum(flat))
    return convolve2d_kernel(
        img, taps=taps, has_channels=has_channels, border=border, border_value=border_value,
        finish=finish,
    )


#: The mean filter's rounding: the webcam report's truncation, or cv2.blur's arithmetic.
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
    """The webcam report's k x k mean filter: ``floor(window sum / k**2)``, zero border.

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
    separable (ones x ones), so it runs on the separable kernel (``cuda/filters.cu``) with the
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


#: Rules for Gaussian taps: OpenCV's separable Q8 taps, or the webcam report's 2-D kernel.
GAUSSIAN_RULES = ("opencv", "report")
#: Fixed-point bits of the report-rule 2-D Gaussian kernel (its taps sum to 2**22).
REPORT_GAUSSIAN_BITS = 22


def gaussian_kernel(sigma: float, *, ksize: int | None = None, rule: str = "opencv") -> np.ndarray:
    """Integer fixed-point Gaussian taps, by OpenCV's rule (1-D, Q8) or the webcam report's (2-D, Q22).

    Parameters
    ----------
    sigma : float
        Standard deviation in pixels, > 0.
    ksize : int, optional
        Odd kernel size, 1 to 31. ``None`` derives it from ``sigma``: ``round(6 sigma + 1) | 1``
        (OpenCV, ``rule='opencv'``) or the report's "6 sigma - 1" values, made odd:
        ``2 ceil(3 sigma) - 1`` (``rule='report'``; exactly ``6 sigma - 1`` for integer sigma).
    rule : {'opencv', 'report'}
        ``'opencv'``: the 1-D taps of :func:`gaussian_taps_q8` (sum 256; the 2-D filter is their
        outer product, as :func:`gaussian_blur` applies them). ``'report'``: the report's
        ``computeGaussianKernel`` 2-D kernel quantized to Q22 (sum ``2**22``), for
        :func:`convolve2d` with ``shift=22`` or ``gaussian_blur(rule='report')``.

    Returns
    -------
    int32 NumPy array: shape ``(ksize,)`` for ``'opencv'``, ``(ksize, ksize)`` for ``'report'``.

    Notes
    -----
    The report (section 6.3) computes, for ``i, j < K``, ``x = i - (K-1)/2``, ``y = j - (K-1)/2``,
    ``k[i, j] = exp(-(x^2 + y^2) / (2 sigma^2)) / (2 pi sigma^2)`` and divides by the sum of all
    ``k``. portcv evaluates this in float64 (the report stores float32) and quantizes with the
    largest-remainder method applied to symmetry classes: every ``k * 2**22`` is floored; the
    ``2**22 - sum(floors)`` leftover units go, one per tap, to whole classes of taps that are
    equal by symmetry (x -> -x, y -> -y, x <-> y), largest fractional part first, skipping a
    class that no longer fits; the centre tap takes what remains. The result sums to exactly
    ``2**22``, is symmetric under flips and transposition (so correlation = convolution), and
    each tap is within one unit (``2**-22``) of its float value, the centre within eight.
    Q22 is the largest precision whose taps cannot overflow the int32 accumulator
    (``2**22 * 255 + 2**21 < 2**31``).

    Examples
    --------
    >>> import portcv
    >>> portcv.filters.gaussian_kernel(1.2, ksize=5)
    array([22, 62, 88, 62, 22], dtype=int32)
    >>> k = portcv.filters.gaussian_kernel(1.0, rule="report")
    >>> k.shape, int(k.sum()) == 2**22, bool((k == k.T).all())
    ((5, 5), True, True)
    """
    sigma = _validate.real(sigma, "sigma", positive=True)
    rule = _validate.choice(rule, "rule", GAUSSIAN_RULES)
    if ksize is None:
        k = _gaussian_ksize(0, sigma) if rule == "opencv" else _report_gaussian_ksize(sigma)
        if k > MAX_TAPS:
            raise ValueError(f"sigma: the derived kernel size {k} exceeds {MAX_TAPS}; pass a smaller sigma or ksize")
    else:
        k = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
        if k % 2 == 0:
            raise ValueError(f"ksize must be odd, got {k}")
    taps = _gaussian_taps_q8(k, sigma) if rule == "opencv" else _report_gaussian_taps(k, sigma)
    return np.array(taps, dtype=np.int32)


def _report_gaussian_ksize(sigma: float) -> int:
    """The report's size rule, "6 sigma - 1 values (to make sure it's odd)": the smallest odd
    integer >= 6 sigma - 1, i.e. ``2 ceil(3 sigma) - 1``."""
    return 2 * math.ceil(3 * sigma) - 1


@functools.lru_cache(maxsize=256)
def _report_gaussian_taps(ksize: int, sigma: float) -> tuple[tuple[int, ...], ...]:
    """The report's ``computeGaussianKernel(sigma, ksize)`` in float64, quantized to Q22 (see
    :func:`gaussian_kernel`)."""
    c = (ksize - 1) / 2.0
    amplitude = 1.0 / (2.0 * math.pi * sigma * sigma)
    w = np.array(
        [[amplitude * math.exp(-(((i - c) ** 2 + (j - c) ** 2) / (2.0 * sigma * sigma))) for j in range(ksize)]
         for i in range(ksize)]
    )
    scaled = w / w.sum() * float(1 << REPORT_GAUSSIAN_BITS)
    taps = np.floor(scaled).astype(np.int64)
    frac = scaled - taps
    # Symmetry classes: taps at (|x|, |y|) and (|y|, |x|) hold bit-identical float values.
    classes: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i in range(ksize):
        for j in range(ksize):
            a, b = abs(2 * i - (ksize - 1)), abs(2 * j - (ksize - 1))
            classes.setdefault((min(a, b), max(a, b)), []).append((i, j))
    centre = (ksize // 2, ksize // 2)
    left = (1 << REPORT_GAUSSIAN_BITS) - int(taps.sum())
    order = sorted((key for key in classes if key != (0, 0)), key=lambda key: (-frac[classes[key][0]], key))
    for key in order:
        if len(classes[key]) <= left:
            for pos in classes[key]:
                taps[pos] += 1
            left -= len(classes[key])
    taps[centre] += left
    return tuple(tuple(int(v) for v in row) for row in taps)


def _gaussian_blur_report(
    img: Any, sigma: float, sigma_y: float, kw: int, kh: int, border: str, border_value: int, channel_axis: Any
) -> Any:
    """``gaussian_blur(rule='report')``: the report's square 2-D kernel (Q22) on :func:`convolve2d`'s kernel."""
    if sigma_y != sigma:
        raise ValueError(f"sigma_y: rule='report' uses one sigma for both axes, got sigma={sigma}, sigma_y={sigma_y}")
    if kw != kh:
        raise ValueError(f"ksize: rule='report' uses a square kernel, got ({kw}, {kh})")
    k = kw or _report_gaussian_ksize(sigma)
    if k > MAX_TAPS:
        raise ValueError(f"sigma: the derived kernel size {k} exceeds {MAX_TAPS}; pass a smaller sigma or ksize")
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    # Taps sum to 2**22, so 0 <= acc <= 255 * 2**22 and (acc + 2**21) >> 22 <= 255.
    return convolve2d_kernel(
        img, taps=_report_gaussian_taps(k, sigma), has_channels=has_channels, border=border,
        border_value=border_value, finish=("shift", REPORT_GAUSSIAN_BITS, 0, "uint8"),
    )


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

    The Rice paper's gradient step (section II-C) with OpenCV's kernels: the separable
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

    The Rice paper's gradient step (section II-C): gx across columns, gy across rows, each equal
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
    (``cuda/gradients.cu``) loads each tile and its halo once, makes both horizontal row sums
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


def median_filter(
    image: Any,
    ksize: int,
    *,
    border: str = "replicate",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """Median filter: each pixel becomes the middle value of its ``ksize`` x ``ksize`` window.

    The webcam report's tiled median filter (section 6.5, "2D CUDA Tiled Median filter"), per
    channel. With ``N = ksize**2`` window values (``N`` is odd), the output is the value of rank
    ``N // 2`` (0-based) of the sorted window, so it is always one of the input values and
    nothing is rounded. With the default ``border='replicate'`` it equals
    ``cv2.medianBlur(image, ksize)`` bit-for-bit (OpenCV's median replicates the edge pixels).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    ksize : int
        Odd window size, 3 to 15.
    border : {'replicate', 'reflect101', 'constant'}
        How pixels outside the image are made. ``'replicate'`` is OpenCV's median border; the
        report's listing reads zeros outside the image, which is ``border='constant'`` with
        ``border_value=0``.
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`: each channel is filtered on its own.

    Returns
    -------
    uint8 array of the same shape.

    Notes
    -----
    ``out[y, x] = sorted(img[y + j, x + i] for |i|, |j| <= ksize // 2)[N // 2]``.

    The portable code (NumPy, JAX) counts instead of sorting: for uint8 the median is the largest
    ``v`` with ``#{window values < v} <= N // 2``, found one bit at a time from bit 7 down (8
    counting steps, exact). On CuPy, ``ksize`` 3 and 5 run a min/max selection network per pixel
    (19 and 99 exchanges) and 7 to 15 run Huang's sliding 256-bin histogram, where the report
    bubble-sorted every window.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[1, 7, 3], [2, 89, 6], [4, 1, 6]], np.uint8)  # the report's table 22
    >>> portcv.to_numpy(portcv.filters.median_filter(img, 3))
    array([[2, 3, 6],
           [2, 4, 6],
           [4, 4, 6]], dtype=uint8)
    """
    img = _validate.image(image)
    ksize = _validate.integer(ksize, "ksize", low=MEDIAN_MIN_KSIZE, high=MEDIAN_MAX_KSIZE)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    return median_filter_kernel(
        img, ksize=ksize, has_channels=has_channels, border=border, border_value=border_value
    )
