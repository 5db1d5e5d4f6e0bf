"""Canny edges, bit-identical to ``cv2.Canny``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .._derivatives import gradients_kernel
from .._separable_pass import separable_filter_kernel
from ._edges import canny_candidates_kernel, hysteresis_kernel
from ._gradient import _INT32_MAX, _threshold

#: Aperture sizes of :func:`canny` (``cv2.Canny``'s ``apertureSize``).
CANNY_KSIZES = (3, 5, 7)


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
    from ..backends import backend
    from .._derivatives import deriv_taps

    xp = backend().xp
    smooth, deriv = deriv_taps(0, 7), deriv_taps(1, 7)
    common = {"has_channels": False, "border": "replicate", "border_value": 0, "finish": ("shift", 0, 0, "int32")}
    sx = separable_filter_kernel(img, kx=deriv, ky=smooth, **common)  # |sum| <= 64 * 20 * 255 = 326400
    sy = separable_filter_kernel(img, kx=smooth, ky=deriv, **common)
    return (
        xp.astype(_round_half_even_div16(xp, sx), xp.int16),  # |.| <= 20400
        xp.astype(_round_half_even_div16(xp, sy), xp.int16),
    )


def _colour_gradients(img: Any, ksize: int, l2: bool) -> tuple[Any, Any]:
    """cv::Canny's gradients of a multi-channel image: each channel's Sobel gradients, and per
    pixel those of the channel with the largest magnitude (``|gx| + |gy|``, or ``gx^2 + gy^2``
    for L2; a strictly larger one replaces the earlier channel, so the first wins a tie)."""
    from ..backends import backend

    xp = backend().xp
    planes = xp.asarray(xp.moveaxis(img, -1, -3), copy=True)  # (..., C, H, W), contiguous
    gx, gy = _canny_gradients(planes, ksize)

    def norm(k: int) -> Any:  # int32: |g| <= 32767, so gx^2 + gy^2 < 2^31
        x, y = xp.astype(gx[..., k, :, :], xp.int32), xp.astype(gy[..., k, :, :], xp.int32)
        return x * x + y * y if l2 else xp.abs(x) + xp.abs(y)

    best_x, best_y, best = gx[..., 0, :, :], gy[..., 0, :, :], norm(0)
    for k in range(1, img.shape[-1]):  # Python loops only over the channels
        n = norm(k)
        larger = n > best
        best_x = xp.where(larger, gx[..., k, :, :], best_x)
        best_y = xp.where(larger, gy[..., k, :, :], best_y)
        best = xp.where(larger, n, best)
    return best_x, best_y


def canny(image: Any, t_low: float, t_high: float, *, ksize: int = 3, l2gradient: bool = False,
          channel_axis: Any = "auto") -> Any:
    """Canny edges with hysteresis; equals ``cv2.Canny(image, t_low, t_high, ksize, L2gradient=l2gradient)`` bit for bit.

    The standard method Del Vecchio et al. compares with (section II-F, Listing 5): Sobel gradients
    (border replicate), non-maximum suppression along one of four directions, a pixel is a
    candidate when its magnitude exceeds ``t_low`` and strong when it exceeds ``t_high``, and the
    edges are the candidates 8-connected to a strong one (hysteresis).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Gray frames, or colour frames (C of 2 to 4, any channel order) as ``cv2.Canny`` takes
        them: per pixel, the gradient of the channel with the largest magnitude (the first
        such channel on a tie) is used. Leading axes are a batch.
    t_low, t_high : float
        Thresholds (>= 0); swapped when ``t_low > t_high``, as OpenCV does.
    ksize : {3, 5, 7}
        Sobel aperture (``apertureSize``). OpenCV scales aperture 7's gradients and thresholds
        by 1/16; so does this.
    l2gradient : bool
        ``True``: the magnitude is ``sqrt(gx^2 + gy^2)`` (compared squared with
        ``floor(min(t, 32767)^2)``); ``False``: ``|gx| + |gy|``.
    channel_axis : {"auto", None, -1}
        ``"auto"``: a last axis of at most 4 entries on a 3+-dimensional array holds channels;
        ``None``: no channel axis (a batch of gray frames); ``-1``: channels last.

    Returns
    -------
    uint8 array of the image's shape (without its channel axis), 0 or 255.

    Notes
    -----
    OpenCV's integer rules are followed exactly (``docs/edges.md``): thresholds are floored
    (after squaring for L2); the direction of a candidate is decided by ``|gy| * 2^15`` against
    ``|gx| * 13573`` (tan 22.5 deg in Q15) and ``|gx| * (13573 + 2^16)`` (tan 67.5 deg); the
    comparisons with the neighbours along it are ``m > m_prev`` and ``m >= m_next`` horizontally
    and vertically and strict diagonally; the magnitude is 0 outside the image. Hysteresis is
    the fixed point of ``edge <- candidate & dilate3x3(edge)`` from the strong candidates, which
    is the union of the candidates' 8-connected components holding a strong pixel: on NumPy and
    on JAX's CPU a flood from the strong pixels compiled with Numba (the ``cpu`` extra), or
    SciPy's component labelling without it, ``lax.while_loop`` of dilations under JAX on
    a GPU, and on CuPy (after a CUDA kernel for the candidates, ``_edges_cuda.cu``) a union-find in
    four CUDA launches with no host round trip. Agreement with ``cv2.Canny`` 4.13 is 100%
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
    l2gradient = _validate.boolean(l2gradient, "l2gradient")
    l2 = bool(l2gradient)
    if t_low > t_high:
        t_low, t_high = t_high, t_low
    if _validate.has_channels(img, channel_axis):
        gx, gy = _colour_gradients(img, ksize, l2)
    else:
        gx, gy = _canny_gradients(img, ksize)
    state = canny_candidates_kernel(
        gx, gy, low=_canny_threshold(t_low, l2, ksize), high=_canny_threshold(t_high, l2, ksize), l2=l2
    )
    return hysteresis_kernel(state)
