"""Gradients, magnitudes and direction sectors: exact integer building blocks of the edge detectors."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ._edges import VARIANTS, direction_sector_kernel, magnitude_kernel

#: ``kind`` values of :func:`magnitude`.
MAGNITUDE_KINDS = ("l2", "l1")


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
def gradient(image: Any, *, ksize: int = 3, border: str = "reflect101", channel_axis: Any = "auto") -> tuple[Any, Any]:
    """Sobel gradient ``(gx, gy)`` of gray frames, int16, as ``cv2.Sobel(image, cv2.CV_16S, 1, 0 / 0, 1)``.

    Del Vecchio et al.'s gradient step (section II-C, eq. 7-8): ``gx`` is the derivative across
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
    channel_axis : {"auto", None}
        ``"auto"``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: leading axes are a batch of
        gray frames, whatever the last axis.

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
    from .. import filters

    # moved to the active backend once; gradients gets the moved array
    img = _validate.image(image, gray=True, channel_axis=channel_axis)
    return filters.gradients(img, ksize=ksize, border=border, channel_axis=None)


def magnitude(gx: Any, gy: Any, *, kind: str = "l2") -> Any:
    """Gradient magnitude, int32: ``floor(sqrt(gx^2 + gy^2))`` exactly, or ``|gx| + |gy|``.

    Del Vecchio et al.'s eq. 5 (``||G|| = sqrt(Gx^2 + Gy^2)``, section II-C) without a float square
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

    Section II-D / Algorithm 1: with ``theta = atan2(gy, gx)`` (gy pointing down),

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
