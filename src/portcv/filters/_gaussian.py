"""Gaussian taps in OpenCV's Q8 fixed point, the Gaussian blur and the Gaussian kernel of the Webcam Streaming & Filters report."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _border, _validate
from .._gaussian_taps import q8_gaussian_taps, sigma0_gaussian_taps
from .._separable_pass import MAX_TAPS, separable_filter_kernel
from ._convolve import convolve2d_kernel


def gaussian_taps_q8(ksize: int, sigma: float) -> tuple[int, ...]:
    """OpenCV's 8-bit Gaussian taps: ``ksize`` integers summing to 256 (Q8).

    Float taps ``exp(-x^2 / (2 sigma^2))`` normalized to sum 1 (float64), then quantized from the
    outside in with error diffusion and round-half-even; the centre tap takes what is left so the
    sum is exactly 256 (``docs/opencv-arithmetic.md``; OpenCV's ``createGaussianKernels``
    for CV_8U).

    Examples
    --------
    >>> gaussian_taps_q8(5, 1.2)
    (22, 62, 88, 62, 22)
    """
    ksize = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    return q8_gaussian_taps(ksize, _validate.real(sigma, "sigma", positive=True))



def _gaussian_ksize(ksize: int, sigma: float) -> int:
    """OpenCV's rule for ``ksize = 0`` on 8-bit images: ``cvRound(sigma * 6 + 1) | 1``."""
    return ksize if ksize > 0 else int(round(sigma * 6 + 1)) | 1


def gaussian_blur(
    image: Any,
    *,
    sigma: float = 0,
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
    fixed-point path, ``docs/opencv-arithmetic.md``). Del Vecchio et al.'s low-pass step
    (section II-B).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    sigma : float
        Standard deviation in x, in [0, 10]. ``0`` (default) means what it means to
        ``cv2.GaussianBlur(img, (k, k), 0)``: the taps follow from the kernel size (OpenCV's
        fixed tables for k <= 9, otherwise ``sigma = 0.3 ((k - 1) / 2 - 1) + 0.8``), so
        ``ksize`` must then be given.
    ksize : int or (int, int)
        Odd kernel width (and height) up to 31, or 0 to derive it from sigma as OpenCV does
        (``round(6 sigma + 1) | 1``). A 1-row (1-column) image uses size 1 in that direction
        unless ``border='constant'``, as OpenCV does.
    sigma_y : float, optional
        Standard deviation in y; defaults to ``sigma`` (as does ``0`` when ``sigma > 0``, like OpenCV).
    border, border_value, channel_axis
        As in :func:`sep_filter`.
    rule : {'opencv', 'report'}
        ``'opencv'`` (default): as above. ``'report'``: the Webcam Streaming & Filters report's square 2-D kernel
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
    sigma = _validate.real(sigma, "sigma", high=10.0)
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0 (0: from ksize, as OpenCV), got {sigma}")
    sigma_y = sigma if sigma_y is None else _validate.real(sigma_y, "sigma_y", high=10.0)
    if sigma_y < 0:
        raise ValueError(f"sigma_y must be >= 0, got {sigma_y}")
    if sigma_y == 0:
        sigma_y = sigma  # OpenCV: sigmaY <= 0 takes sigmaX
    kw, kh = _validate.kernel_size(ksize, "ksize", odd=True, low=0, high=MAX_TAPS)
    if _validate.choice(rule, "rule", GAUSSIAN_RULES) == "report":
        if sigma == 0:
            raise ValueError("sigma must be > 0 for rule='report'")
        return _gaussian_blur_report(img, sigma, sigma_y, kw, kh, border, border_value, channel_axis)
    if (sigma == 0 and kw == 0) or (sigma_y == 0 and kh == 0):
        raise ValueError(f"ksize must be given (odd, >= 1) when sigma is 0, got ksize={ksize!r}: "
                         "the taps then follow from the kernel size, as in cv2.GaussianBlur(img, (k, k), 0)")
    kw, kh = _gaussian_ksize(kw, sigma), _gaussian_ksize(kh, sigma_y)
    if kw > MAX_TAPS or kh > MAX_TAPS:
        raise ValueError(f"sigma: the derived kernel size ({kw}, {kh}) exceeds {MAX_TAPS}; pass a smaller sigma or ksize")
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    if border != "constant":  # OpenCV shrinks the kernel of a 1-pixel axis, except for constant borders
        kw, kh = (1 if width == 1 else kw), (1 if height == 1 else kh)
    kx = sigma0_gaussian_taps(kw) if sigma == 0 else q8_gaussian_taps(kw, sigma)
    ky = sigma0_gaussian_taps(kh) if sigma_y == 0 else q8_gaussian_taps(kh, sigma_y)
    return separable_filter_kernel(
        img, kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value,
        finish=("shift", 16, 0, "uint8"),
    )


#: Rules for Gaussian taps: OpenCV's separable Q8 taps, or the Webcam Streaming & Filters report's 2-D kernel.
GAUSSIAN_RULES = ("opencv", "report")


#: Fixed-point bits of the report-rule 2-D Gaussian kernel (its taps sum to 2**22).
REPORT_GAUSSIAN_BITS = 22


def gaussian_kernel(sigma: float, *, ksize: int | None = None, rule: str = "opencv") -> np.ndarray:
    """Integer fixed-point Gaussian taps, by OpenCV's rule (1-D, Q8) or the Webcam Streaming & Filters report's (2-D, Q22).

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
    taps = q8_gaussian_taps(k, sigma) if rule == "opencv" else _report_gaussian_taps(k, sigma)
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
