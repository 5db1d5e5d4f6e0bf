"""The joint (cross) bilateral filter of ``portcv.filters``, on the bilateral kernel of
``portcv/_bilateral.py`` (which ``portcv.depth``'s DCBF runs too)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from .._bilateral import (
    BILATERAL_BORDERS,
    COLOR_NORMS,
    MAX_RADIUS,
    WINDOWS,
    gaussian_sigma,
    guided_pair,
    run_bilateral,
    spatial_window,
)


# --------------------------------------------------------------------------------------------
# Public function
# --------------------------------------------------------------------------------------------
def joint_bilateral(
    joint: Any,
    src: Any,
    d: int,
    sigma_color: float,
    sigma_space: float,
    *,
    border: str = "reflect101",
    window: str = "disk",
    color_norm: str = "l1",
    channel_axis: Any = "auto",
) -> Any:
    """Joint (cross) bilateral filter: smooth ``src`` with weights from the guide ``joint``.

    ``cv2.ximgproc.jointBilateralFilter(joint, src, d, sigma_color, sigma_space)`` with its
    parameters' meaning, in exact integer arithmetic (the same bits on every backend; within
    one grey level of OpenCV's float32 result, and equal on at least 99.9 % of pixels of a real
    image):

    ``out_A = round(sum_B w_AB src_B / sum_B w_AB)``,
    ``w_AB = Ws(|x_A - x_B|) Wr(|I_A - I_B|)``, both Gaussians.

    Parameters
    ----------
    joint : (..., H, W) or (..., H, W, C) uint8 array
        The guide image (grey or RGB, C = 1 or 3) whose colour differences set the range weights.
    src : (..., H, W) or (..., H, W, C) uint8 array
        The image filtered (1 to 4 channels, each filtered with the same weights); the same
        ``(..., H, W)`` as ``joint``. Leading axes are a batch.
    d : int
        Window diameter as in OpenCV: the radius is ``d // 2`` (``d <= 0``: ``round(1.5
        sigma_space)``), at least 1 and at most 15, so ``d`` is at most 31 (a 31 x 31 window).
    sigma_color : float
        Range Gaussian's sigma in grey levels (of the L1 colour distance for RGB), at least
        :data:`MIN_SIGMA` (1e-150) and finite; a sigma far above 255 weighs every colour alike
        (the spatial Gaussian alone).
    sigma_space : float
        Spatial Gaussian's sigma in pixels, at least 1e-150 and finite (far above the radius:
        every offset weighs alike); with ``d <= 0``, below 31 / 3 (the radius
        ``round(1.5 sigma_space)`` at most 15).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the image are made (OpenCV's default BORDER_REFLECT_101; ``constant``
        reads 0 in both images).
    window : {'disk', 'square'}
        OpenCV's round window (offsets with ``dx**2 + dy**2 <= r**2``) or the full square.
    color_norm : {'l1', 'l2'}
        Colour distance of an RGB guide: the sum of absolute channel differences (OpenCV's) or the
        Euclidean distance (the table is indexed by its square). The same for a grey guide.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`, for both images.

    Returns
    -------
    array of ``src``'s shape, uint8

    Notes
    -----
    Weights are integer tables built on the host in float64 and rounded half to even (Q15):
    ``Ws[dy, dx] = round(2**15 exp(-(dx**2 + dy**2) / (2 sigma_space**2)))`` per window offset,
    ``Wr[delta] = round(2**15 exp(-delta**2 / (2 sigma_color**2)))`` per colour distance
    ``delta`` (0 .. 255 C). Per pixel, in integers::

        w   = (Ws[dy, dx] * Wr[delta] + 2**14) >> 15        (Q15, <= 2**15; product < 2**31)
        N   = sum w * src_B,  W = sum w                      (int32 up to 256 offsets, else int64)
        out = (N + W // 2) // W                              (round half up; W >= 2**15: the centre)

    OpenCV computes the same sums in float32 and rounds half to even; the two differ by at most 1
    where the quotient lies within float32's error of a ``.5``. OpenCV's 8-bit range table has
    255 C entries, so a colour distance of exactly 255 C reads past its end: compare with a guide
    clipped to 254. (Lin et al.'s depth-colour bilateral filter, :func:`portcv.depth.dcbf`, is
    this filter with holes.)

    Examples
    --------
    >>> import numpy as np, portcv
    >>> guide = np.array([[10, 10, 200, 200]] * 3, np.uint8)
    >>> src = np.array([[0, 60, 120, 180]] * 3, np.uint8)
    >>> portcv.to_numpy(portcv.filters.joint_bilateral(guide, src, 3, 20.0, 2.0))[1]
    array([ 23,  45, 135, 157], dtype=uint8)
    """
    guide, values, gc, vc = guided_pair(joint, src, "joint", "src", channel_axis)
    if vc and not 1 <= values.shape[-1] <= 4:
        raise ValueError(f"src must have 1 to 4 channels, got shape {tuple(values.shape)}")
    d = _validate.integer(d, "d", high=2 * MAX_RADIUS + 1)
    sigma_color = gaussian_sigma(sigma_color, "sigma_color")
    sigma_space = gaussian_sigma(sigma_space, "sigma_space")
    border = _validate.choice(border, "border", BILATERAL_BORDERS)
    window = _validate.choice(window, "window", WINDOWS)
    color_norm = _validate.choice(color_norm, "color_norm", COLOR_NORMS)
    if d <= 0 and not 1.5 * sigma_space < MAX_RADIUS + 0.5:  # round() takes 15.5 to 16 (half to even)
        raise ValueError(f"sigma_space must be below {(2 * MAX_RADIUS + 1) / 3:.4f} when d <= 0 (the window radius "
                         f"round(1.5 sigma_space) is at most {MAX_RADIUS}), got {sigma_space}")
    radius = max(d // 2 if d > 0 else round(1.5 * sigma_space), 1)  # OpenCV's rule (cvRound: half even)
    return run_bilateral(guide, values, spatial_window(radius, sigma_space, window), sigma_color,
                         guide_channels=gc, value_channels=vc, border=border, color_norm=color_norm)
