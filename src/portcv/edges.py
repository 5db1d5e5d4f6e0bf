"""Edge detection: the Rice paper's detector (NMS with selective thresholding) and Canny.

Images are gray ``(..., H, W)`` uint8 frames (leading axes are a batch); convert colour frames
with :func:`portcv.color.rgb_to_gray` first. Every step is integer arithmetic, so every backend
returns the same bits: gradients are OpenCV's Sobel sums, magnitudes are compared squared (or
rooted with an exact integer square root), gradient sectors are exact integer predicates
instead of ``atan2``. The paper: Del Vecchio, Lin and Natarajan, "GPU Acceleration of Edge-Based
Motion Detection and Machine Learning-Aided Facial Recognition with NVIDIA CUDA" (Rice),
section II; ``docs/edges.md`` records every choice made where its pseudocode and listings differ.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from . import _border, _validate
from ._edges import (
    LOW_PASS_FINISH,
    MAX_ALPHA,
    SECTOR_DIAGONAL_45,
    SECTOR_DIAGONAL_135,
    SECTOR_HORIZONTAL,
    SECTOR_NONE,
    SECTOR_VERTICAL,
    VARIANTS,
    canny_candidates_kernel,
    detect_kernel,
    direction_sector_kernel,
    hysteresis_kernel,
    magnitude_kernel,
)
from ._gradients import gradients_kernel
from ._separable import MAX_TAPS, separable_filter_kernel

__all__ = [
    "gradient",
    "magnitude",
    "direction_sector",
    "detect",
    "canny",
    "SECTOR_HORIZONTAL",
    "SECTOR_DIAGONAL_45",
    "SECTOR_VERTICAL",
    "SECTOR_DIAGONAL_135",
    "SECTOR_NONE",
]

#: ``kind`` values of :func:`magnitude`.
MAGNITUDE_KINDS = ("l2", "l1")
#: Aperture sizes of :func:`canny` (``cv2.Canny``'s ``apertureSize``).
CANNY_KSIZES = (3, 5, 7)
_INT32_MAX = 2**31 - 1


def _threshold(value: Any, name: str) -> float:
    value = _validate.real(value, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


@functools.lru_cache(maxsize=256)
def _floor_square(t: float) -> int:
    """``floor(t^2)`` exactly (t is a float: a dyadic rational), capped at int32's maximum.

    ``sqrt(m) > t <=> m > t^2 <=> m > floor(t^2)`` for integers ``m >= 0`` and ``t >= 0``; the cap
    changes nothing because ``m`` stays far below it.
    """
    return min(_INT32_MAX, math.floor(Fraction(t) ** 2))


def _gradient_arrays(gx: Any, gy: Any) -> tuple[Any, Any]:
    gx = _validate.image(gx, "gx", dtype=np.int16, min_ndim=1)
    gy = _validate.image(gy, "gy", dtype=np.int16, min_ndim=1)
    if tuple(gx.shape) != tuple(gy.shape):
        raise ValueError(f"gx and gy must have the same shape, got {tuple(gx.shape)} and {tuple(gy.shape)}")
    return gx, gy


# --------------------------------------------------------------------------------------------
# Gradient, magnitude, direction
# --------------------------------------------------------------------------------------------
def gradient(image: Any, *, ksize: int = 3, border: str = "reflect101") -> tuple[Any, Any]:
    """Sobel gradient ``(gx, gy)`` of gray frames, int16, as ``cv2.Sobel(image, cv2.CV_16S, 1, 0 / 0, 1)``.

    The Rice paper's gradient step (section II-C, eq. 7-8): ``gx`` is the derivative across
    columns, ``gy`` across rows (down), each the exact separable sum of OpenCV's taps (3x3:
    smoothing ``[1, 2, 1]``, derivative ``[-1, 0, 1]``), saturated to int16. This is
    :func:`portcv.filters.gradients` with the last two axes as ``(H, W)`` (no channel axis).
    :func:`detect` low-passes the image first; call :func:`portcv.filters.gaussian_blur` before
    this function to get the same gradients.

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray frames; leading axes are a batch.
    ksize : {3, -1, 1, 5, 7}
        Sobel aperture, as :func:`portcv.filters.sobel` (``-1``: Scharr).
    border : {'reflect101', 'replicate', 'constant'}
        Pixels outside the image (``'constant'`` pads with 0, as ``cv2.Sobel``).

    Returns
    -------
    (gx, gy) : two int16 arrays of the image's shape.

    Notes
    -----
    ``gx = sum_j s[j] sum_i d[i] img[y + j - 1, x + i - 1]`` and ``gy`` with the roles swapped
    (correlation taps ``s = [1, 2, 1]``, ``d = [-1, 0, 1]``); no rounding, int16 saturation only
    for ``ksize = 7``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.tile(np.array([0, 0, 10, 20, 20], np.uint8), (3, 1))
    >>> gx, gy = portcv.edges.gradient(img)
    >>> portcv.to_numpy(gx)[1], int(abs(portcv.to_numpy(gy)).max())
    (array([ 0, 40, 80, 40,  0], dtype=int16), 0)
    """
    from . import filters

    return filters.gradients(image, ksize=ksize, border=border, channel_axis=None)


def magnitude(gx: Any, gy: Any, *, kind: str = "l2") -> Any:
    """Gradient magnitude, int32: ``floor(sqrt(gx^2 + gy^2))`` exactly, or ``|gx| + |gy|``.

    The Rice paper's eq. 5 (``||G|| = sqrt(Gx^2 + Gy^2)``, section II-C) without a float square
    root: the exact integer square root, the same on every backend.

    Parameters
    ----------
    gx, gy : (...) int16 arrays of one shape
        Gradients, e.g. from :func:`gradient`.
    kind : {'l2', 'l1'}
        ``'l2'``: ``isqrt(gx^2 + gy^2)`` (at most 46341); ``'l1'``: ``|gx| + |gy|`` (OpenCV
        Canny's default norm, at most 65536).

    Returns
    -------
    int32 array of the inputs' shape.

    Notes
    -----
    ``n = gx^2 + gy^2 <= 2^31`` is formed in uint32 and rooted digit by digit (16 steps of
    integer compare-and-subtract: ``floor(sqrt(n))``, nothing rounded). The CuPy kernel starts
    from the IEEE double square root and corrects it with exact integer checks
    (``r^2 <= n < (r + 1)^2``), which gives the same integer. :func:`detect` never roots: it
    compares ``gx^2 + gy^2`` with ``floor(t^2)``, which is ``sqrt(gx^2 + gy^2) > t`` exactly,
    while ``isqrt(n) > t`` would wrongly reject ``n = t^2 + 1``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> gx = np.array([3, -5, 1, 300], np.int16); gy = np.array([4, 12, 1, -400], np.int16)
    >>> portcv.to_numpy(portcv.edges.magnitude(gx, gy))
    array([  5,  13,   1, 500], dtype=int32)
    >>> portcv.to_numpy(portcv.edges.magnitude(gx, gy, kind="l1"))
    array([  7,  17,   2, 700], dtype=int32)
    """
    gx, gy = _gradient_arrays(gx, gy)
    kind = _validate.choice(kind, "kind", MAGNITUDE_KINDS)
    return magnitude_kernel(gx, gy, kind=kind)


def direction_sector(gx: Any, gy: Any, *, variant: str = "pseudocode") -> Any:
    """The paper's gradient sector of each pixel, by exact integer predicates (no atan2), uint8.

    Section II-D / Algorithm 1 (Rice): with ``theta = atan2(gy, gx)`` (gy pointing down),

    ========================  =============================================  ==================
    code                      angle                                          integer predicate
    ========================  =============================================  ==================
    0 ``SECTOR_HORIZONTAL``   ``|theta| < pi/6`` or ``|theta| > 5 pi/6``     ``3 gy^2 < gx^2``
    1 ``SECTOR_DIAGONAL_45``  ``pi/6 < theta < pi/3``,                       ``gx^2 < 3 gy^2``,
                              ``-5 pi/6 < theta < -2 pi/3``                  ``gy^2 < 3 gx^2``, same signs
    2 ``SECTOR_VERTICAL``     ``pi/3 < |theta| < 2 pi/3``                    ``3 gx^2 < gy^2``
    3 ``SECTOR_DIAGONAL_135`` ``2 pi/3 < theta < 5 pi/6``,                   as 1, opposite signs
                              ``-pi/3 < theta < -pi/6``
    4 ``SECTOR_NONE``         ``gx = gy = 0`` (angle undefined)              --
    ========================  =============================================  ==================

    Parameters
    ----------
    gx, gy : (...) int16 arrays of one shape
    variant : {'pseudocode', 'listing'}
        ``'listing'``: Listing 4's ``5*M_PI/6.0 < theta && theta < M_PI`` also excludes
        ``theta = pi`` (``gy = 0``, ``gx < 0``: ``atan2`` returns ``M_PI`` exactly), so those
        pixels get ``SECTOR_NONE``; the default keeps them horizontal (see Notes).

    Returns
    -------
    uint8 array of codes 0-4, the inputs' shape.

    Notes
    -----
    ``tan^2(pi/6) = 1/3`` and ``tan^2(pi/3) = 3``, so ``|theta| < pi/6`` is ``3 gy^2 < gx^2``
    (and gx > 0), ``|theta| > 5 pi/6`` the same with gx < 0, and so on. Boundaries: the sector
    boundaries ``±pi/6, ±pi/3, ±2pi/3, ±5pi/6`` are never hit by a nonzero integer gradient
    (``3 b^2 = a^2`` has no solution but 0: sqrt(3) is irrational), so the paper's strict
    inequalities never drop a pixel there. Two angles remain: ``(0, 0)``, where eq. 6 is
    undefined (atan2 gives 0, Listing 4 would call it horizontal; it can never exceed
    ``t_h >= 0``, so this never changes :func:`detect`), and ``theta = pi`` exactly. The
    pseudocode writes the horizontal sector as ``-pi < theta < -5pi/6 or 5pi/6 < theta < pi``:
    ``±pi`` are not sector boundaries but the two ends of atan2's range, and reading the open
    ``< pi`` literally would leave every pixel with ``gx < 0, gy = 0`` (a straight vertical edge,
    bright on its left) without a sector, so never an edge; the default therefore
    keeps ``theta = pi`` in the horizontal sector and ``variant='listing'`` reproduces the
    literal exclusion (``docs/edges.md``). Squares are formed in uint32 (``3 * 32768^2 < 2^32``).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> gx = np.array([10, 10, 0, -10, -10, 0], np.int16)
    >>> gy = np.array([ 1, 10, 10, 10,   0, 0], np.int16)
    >>> portcv.to_numpy(portcv.edges.direction_sector(gx, gy))
    array([0, 1, 2, 3, 0, 4], dtype=uint8)
    >>> portcv.to_numpy(portcv.edges.direction_sector(gx, gy, variant="listing"))
    array([0, 1, 2, 3, 4, 4], dtype=uint8)
    """
    gx, gy = _gradient_arrays(gx, gy)
    variant = _validate.choice(variant, "variant", VARIANTS)
    return direction_sector_kernel(gx, gy, variant=variant)


# --------------------------------------------------------------------------------------------
# The paper's detector
# --------------------------------------------------------------------------------------------
#: OpenCV's fixed 8-bit Gaussian taps for sigma <= 0 (Q8, sum 256): cv2.GaussianBlur(img, (k, k), 0).
_SMALL_GAUSSIAN_Q8 = {
    1: (256,),
    3: (64, 128, 64),
    5: (16, 64, 96, 64, 16),
    7: (8, 28, 56, 72, 56, 28, 8),
    9: (4, 13, 30, 51, 60, 51, 30, 13, 4),
}


def _default_gaussian_taps(ksize: int) -> tuple[int, ...]:
    """OpenCV's taps for ``sigma = 0``: the fixed tables, else ``sigma = fma(k, 0.15, 0.35)``."""
    if ksize in _SMALL_GAUSSIAN_Q8:
        return _SMALL_GAUSSIAN_Q8[ksize]
    from .filters import _gaussian_taps_q8

    # OpenCV evaluates 0.3 * ((k - 1) * 0.5 - 1) + 0.8 as one fused multiply-add of k * 0.15 + 0.35;
    # float(Fraction) rounds the exact value once, as the FMA does.
    sigma = float(Fraction(ksize) * Fraction(0.15) + Fraction(0.35))
    return _gaussian_taps_q8(ksize, sigma)


def _low_pass_taps(ksize: Any) -> tuple[int, ...]:
    """The paper's step 1 (section II-B) for ``sigma=None``: OpenCV's Q8 taps of size ``ksize``
    (the 3x3 binomial [1, 2, 1]/4 by default); ``()`` for ``ksize=1`` ((256 p + 2^15) >> 16 = p)."""
    ksize = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    return () if ksize == 1 else _default_gaussian_taps(ksize)


def _low_pass(img: Any, ksize: Any, sigma: Any, border: str) -> Any:
    """The paper's step 1 on its own: ``cv2.GaussianBlur(img, (ksize, ksize), sigma or 0)``."""
    if sigma is not None:
        from . import filters

        return filters.gaussian_blur(img, sigma=sigma, ksize=ksize, border=border, channel_axis=None)
    taps = _low_pass_taps(ksize)
    if not taps:
        return img
    return separable_filter_kernel(
        img, kx=taps, ky=taps, has_channels=False, border=border, border_value=0, finish=LOW_PASS_FINISH
    )


def detect(
    image: Any,
    t_low: float,
    t_high: float,
    *,
    alpha: int = 2,
    ksize: int = 3,
    sigma: float | None = None,
    variant: str = "pseudocode",
    border: str = "reflect101",
) -> Any:
    """The Rice paper's edge detector: Gaussian, Sobel, NMS with selective thresholding.

    Section II (Rice), Algorithm 1: the image is low-passed (3x3 binomial by default), its Sobel
    gradient ``G = (gx, gy)`` taken, and a pixel with ``||G|| > t_high`` that is a maximum along
    its gradient sector (:func:`direction_sector`; strictly larger than both neighbours in that
    direction) is *accepted*. Every pixel within ``alpha`` of an accepted pixel (its
    ``(2 alpha + 1)^2`` apron) whose magnitude exceeds ``t_low`` becomes an edge (255).

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray frames; leading axes are a batch. Any backend's array; the result is on the active
        backend.
    t_low, t_high : float
        The paper's t_l and t_h (>= 0), compared with the exact magnitude
        ``sqrt(gx^2 + gy^2)`` of the 3x3 Sobel gradient of the low-passed image (at most about
        1443). ``t_low > t_high`` is allowed (the pseudocode defines it).
    alpha : int
        Apron radius, 0 to 16 (the listing's ``apron_size = 2``).
    ksize : int
        Gaussian kernel size (the paper's k): odd, 1 (no low-pass) to 31; 0 derives it from
        ``sigma`` as OpenCV does.
    sigma : float, optional
        Gaussian sigma in (0, 10] (the paper's "k = 5, sigma = 5"). ``None`` uses OpenCV's
        ``sigma <= 0`` taps: ``[1, 2, 1] / 4`` for k = 3, the paper's eq. 4, i.e.
        ``cv2.GaussianBlur(image, (k, k), 0)``.
    variant : {'pseudocode', 'listing'}
        ``'pseudocode'`` (default): Algorithm 1. ``'listing'``: the CUDA Listing 4's choices
        where they change the result (accepted pixels in rows/columns ``[2, n - 2]`` whatever
        alpha, apron cells in ``[1, n - 1]``, the accepted pixel always 255, ``theta = pi``
        excluded from the horizontal sector); see Notes.
    border : {'reflect101', 'replicate', 'constant'}
        Border of the Gaussian and Sobel filters (OpenCV's default reflect-101).

    Returns
    -------
    uint8 array of the image's shape, 0 or 255.

    Notes
    -----
    With ``m = gx^2 + gy^2`` (int32, at most ``2 * 1020^2``), ``t2 = floor(t^2)`` (exact, on the
    host)::

        accepted = (m > t2_high) & is_max(m, sector) & centre_region
        edge     = (m > t2_low) & dilate(accepted, box 2 alpha + 1)

    ``||G|| > t <=> m > floor(t^2)`` and ``||G_a|| > ||G_b|| <=> m_a > m_b``, so nothing is rooted
    or rounded. Algorithm 1 visits ``i in [alpha + 1, M - alpha - 2]``,
    ``j in [alpha + 1, N - alpha - 2]`` (pixels nearer the border are never accepted, and the
    apron stays inside ``[1, M - 2] x [1, N - 2]``). Its apron loop *scatters* 255 from each
    accepted pixel; here each pixel *gathers*: it is an edge if its own magnitude passes
    ``t_low`` and an accepted pixel lies within ``alpha`` (a separable box OR, exact). The paper's
    listing scatters from many threads while other threads reset their own pixel to 0, a race;
    the gather has none. On CuPy one kernel (``cuda/edges.cu``) does the low-pass (``sigma=None``,
    ``ksize <= 7``), Sobel, magnitude, sector, local maximum and the apron gather from a
    shared-memory tile with an ``alpha + 2`` halo: one launch per call.

    References: Del Vecchio, Lin and Natarajan, "GPU Acceleration of Edge-Based Motion Detection
    and Machine Learning-Aided Facial Recognition with NVIDIA CUDA" (Rice), section II-B to II-E,
    Algorithm 1, Listings 3-4; ``docs/edges.md`` lists every pseudocode/listing difference.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.zeros((9, 12), np.uint8); img[:, 6:] = 200; img[:, 6] = 100  # a vertical edge
    >>> e = portcv.to_numpy(portcv.edges.detect(img, 100, 200))
    >>> e[4].tolist()               # G = 400, 600, 400 at columns 5-7: the maximum and its apron
    [0, 0, 0, 0, 0, 255, 255, 255, 0, 0, 0, 0]
    >>> e[:, 6]                     # accepted rows 3..5 (alpha + 1 .. H - alpha - 2), apron +-2
    array([  0, 255, 255, 255, 255, 255, 255, 255,   0], dtype=uint8)
    """
    img = _validate.image(image)
    t_low = _threshold(t_low, "t_low")
    t_high = _threshold(t_high, "t_high")
    alpha = _validate.integer(alpha, "alpha", low=0, high=MAX_ALPHA)
    variant = _validate.choice(variant, "variant", VARIANTS)
    border, _ = _border.check(border, 0)
    if sigma is None:
        taps = _low_pass_taps(ksize)  # applied inside the detector (one CUDA launch on CuPy)
    else:
        img, taps = _low_pass(img, ksize, sigma, border), ()
    return detect_kernel(
        img, blur_taps=taps, low_sq=_floor_square(t_low), high_sq=_floor_square(t_high), alpha=alpha,
        variant=variant, border=border,
    )


# --------------------------------------------------------------------------------------------
# Canny
# --------------------------------------------------------------------------------------------
def _canny_threshold(t: float, l2: bool, ksize: int) -> int:
    """cv::Canny's integer threshold: /16 for aperture 7, squared (capped at 32767) for L2, floored."""
    if ksize == 7:
        t = t / 16.0  # exact: a division by a power of two
    if l2:
        t = min(32767.0, t)
        t = t * t  # OpenCV squares in double, then floors
    return min(_INT32_MAX, math.floor(t))


def _round_half_even_div16(xp: Any, s: Any) -> Any:
    """``rint(s / 16)`` of int32 sums (ties to even), as cv::Sobel's ``saturate_cast<short>(s * (1/16.))``."""
    q = s >> 4  # floor
    r = s & 15
    up = (r > 8) | ((r == 8) & ((q & 1) == 1))
    return q + xp.astype(up, xp.int32)


def _canny_gradients(img: Any, ksize: int) -> tuple[Any, Any]:
    """cv::Canny's gradients: Sobel with BORDER_REPLICATE, int16; aperture 7 scaled by 1/16."""
    if ksize != 7:
        # |g| <= 16 * 6 * 255 = 24480 for ksize 5: no saturation
        return gradients_kernel(img, ksize=3 if ksize == 3 else 5, has_channels=False, border="replicate")
    from ._gradients import deriv_taps
    from .backends import backend

    xp = backend().xp
    smooth, deriv = deriv_taps(0, 7), deriv_taps(1, 7)
    common = {"has_channels": False, "border": "replicate", "border_value": 0, "finish": ("shift", 0, 0, "int32")}
    sx = separable_filter_kernel(img, kx=deriv, ky=smooth, **common)  # |sum| <= 64 * 20 * 255 = 326400
    sy = separable_filter_kernel(img, kx=smooth, ky=deriv, **common)
    return (
        xp.astype(_round_half_even_div16(xp, sx), xp.int16),  # |.| <= 20400
        xp.astype(_round_half_even_div16(xp, sy), xp.int16),
    )


def canny(image: Any, t_low: float, t_high: float, *, ksize: int = 3, l2gradient: bool = False) -> Any:
    """Canny edges with hysteresis; equals ``cv2.Canny(image, t_low, t_high, ksize, L2gradient=l2gradient)`` bit for bit.

    The standard method the Rice paper compares with (section II-F, Listing 5): Sobel gradients
    (border replicate), non-maximum suppression along one of four directions, a pixel is a
    candidate when its magnitude exceeds ``t_low`` and strong when it exceeds ``t_high``, and the
    edges are the candidates 8-connected to a strong one (hysteresis).

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray frames; leading axes are a batch.
    t_low, t_high : float
        Thresholds (>= 0); swapped when ``t_low > t_high``, as OpenCV does.
    ksize : {3, 5, 7}
        Sobel aperture (``apertureSize``). OpenCV scales aperture 7's gradients and thresholds
        by 1/16; so does this.
    l2gradient : bool
        ``True``: the magnitude is ``sqrt(gx^2 + gy^2)`` (compared squared with
        ``floor(min(t, 32767)^2)``); ``False``: ``|gx| + |gy|``.

    Returns
    -------
    uint8 array of the image's shape, 0 or 255.

    Notes
    -----
    OpenCV's integer rules are followed exactly (``docs/edges.md``): thresholds are floored
    (after squaring for L2); the direction of a candidate is decided by ``|gy| * 2^15`` against
    ``|gx| * 13573`` (tan 22.5 deg in Q15) and ``|gx| * (13573 + 2^16)`` (tan 67.5 deg); the
    comparisons with the neighbours along it are ``m > m_prev`` and ``m >= m_next`` horizontally
    and vertically and strict diagonally; the magnitude is 0 outside the image. Hysteresis is
    the fixed point of ``edge <- candidate & dilate3x3(edge)`` from the strong candidates: a
    host-checked loop on NumPy, ``lax.while_loop`` under JAX, and on CuPy (after a CUDA kernel
    for the candidates, ``cuda/edges.cu``) a CUDA kernel that
    propagates inside 32x32 shared-memory tiles until they settle, relaunched until a launch
    changes nothing (one host read per 8 launches). Agreement with ``cv2.Canny`` 4.13 is 100%
    (bit-exact) in the tests.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.zeros((8, 10), np.uint8); img[:, 5:] = 200
    >>> portcv.to_numpy(portcv.edges.canny(img, 50, 150))[3].tolist()  # as cv2.Canny
    [0, 0, 0, 0, 255, 0, 0, 0, 0, 0]
    """
    img = _validate.image(image)
    t_low = _threshold(t_low, "t_low")
    t_high = _threshold(t_high, "t_high")
    ksize = _validate.integer(ksize, "ksize")
    if ksize not in CANNY_KSIZES:
        raise ValueError(f"ksize must be one of {CANNY_KSIZES}, got {ksize}")
    if not isinstance(l2gradient, (bool, np.bool_)):
        raise TypeError(f"l2gradient must be a bool, got {type(l2gradient).__name__}")
    l2 = bool(l2gradient)
    if t_low > t_high:
        t_low, t_high = t_high, t_low
    gx, gy = _canny_gradients(img, ksize)
    state = canny_candidates_kernel(
        gx, gy, low=_canny_threshold(t_low, l2, ksize), high=_canny_threshold(t_high, l2, ksize), l2=l2
    )
    return hysteresis_kernel(state)

