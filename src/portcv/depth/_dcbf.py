"""Depth-colour bilateral filter (DCBF): Lin et al.'s depth-video example, in integers.

After depth propagation the depth map at a colour camera's view has holes; DCBF fills each one
with a bilateral average of the *known* depths around it, weighted by spatial distance and by
colour similarity in the colour image (Lin et al., "The Parallelization of Video Processing",
section on 3D video, Table 5). The filter is ``portcv.filters.joint_bilateral``'s kernel with
unknown neighbours weighted 0.
"""

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

#: What ``dcbf`` writes: only the holes (the paper) or every pixel (joint bilateral smoothing).
UPDATES = ("holes", "all")
#: Depth map types: 8-bit (int32 sums up to 15 x 15 windows) and 16-bit (Kinect-style mm; int64).
DEPTH_DTYPES = (np.uint8, np.uint16)


def dcbf(
    depth: Any,
    color: Any,
    ksize: int = 11,
    sigma_space: float = 3.0,
    sigma_color: float = 20.0,
    *,
    window: str = "square",
    update: str = "holes",
    unknown: int = 0,
    border: str = "reflect101",
    color_norm: str = "l1",
    channel_axis: Any = "auto",
) -> Any:
    """Fill the holes of a depth map with a depth-colour bilateral filter (Lin et al.'s DCBF).

    ``d_A = round(sum_B w_AB d_B / sum_B w_AB)`` over the neighbours ``B`` of ``A`` in a
    ``ksize x ksize`` window **whose depth is known**, with
    ``w_AB = G_sigma_space(|x_A - x_B|) G_sigma_color(|I_A - I_B|)`` (Gaussians of the pixel
    distance and of the colour difference in ``color``).

    Parameters
    ----------
    depth : (..., H, W) uint8 or uint16 array
        Depth (or disparity) map; ``unknown`` marks a hole. Leading axes are a batch.
    color : (..., H, W) or (..., H, W, 3) uint8 array
        The colour (or grey) image of the same view, the guide.
    ksize : int
        Window side, odd, 1 to 31 (Table 5 of the article: 11).
    sigma_space : float
        Spatial Gaussian's sigma in pixels, at least 1e-150 and finite (the article gives none:
        ours); far above ``ksize``, every known neighbour weighs alike.
    sigma_color : float
        Range Gaussian's sigma in grey levels of the colour distance, at least 1e-150 and finite
        (ours too); far above 255, every colour weighs alike.
    window : {'square', 'disk'}
        The paper's square window or OpenCV's disk (``dx**2 + dy**2 <= (ksize // 2)**2``).
    update : {'holes', 'all'}
        ``'holes'`` (the paper) computes the unknown pixels and returns every known one
        unchanged; ``'all'`` replaces every pixel with its filtered value (a joint bilateral
        filter that ignores holes).
    unknown : int
        The depth value of a hole (0, as Kinect and the article's propagation leave them).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the map are made; ``'constant'`` makes them holes.
    color_norm : {'l1', 'l2'}
        Colour distance of an RGB guide, as in :func:`portcv.filters.joint_bilateral`.
    channel_axis : {'auto', None, -1}
        Whether ``color`` has a channel axis (``'auto'``: a last axis of 3 entries).

    Returns
    -------
    array of ``depth``'s shape and dtype
        A pixel with no known neighbour in its window stays ``unknown``.

    Notes
    -----
    Integer lookup tables built on the host (Q15, rounded half to even):
    ``Ws[dy, dx] = round(2**15 exp(-(dx**2 + dy**2) / (2 sigma_space**2)))`` and
    ``Wr[delta] = round(2**15 exp(-delta**2 / (2 sigma_color**2)))``, ``delta`` the colour
    distance. Per pixel::

        w = (Ws[dy, dx] * Wr[delta] + 2**14) >> 15    if d_B != unknown, else 0   (<= 2**15)
        N = sum w * d_B,   W = sum w
        d_A = (N + W // 2) // W  (round half up, exact integer division);  W = 0: unknown

    Bounds: ``N + W / 2 <= K 2**15 d_max + K 2**14`` for ``K`` window offsets. uint8 depth:
    ``121 * 2**15 * 255 = 1.01e9 < 2**31`` for 11 x 11, so int32 throughout (windows up to
    256 offsets, every 15 x 15 square); larger windows and uint16 depth (``961 * 2**15 * 65535
    < 2**41`` for 31 x 31) accumulate in int64 (on JAX this needs ``jax_enable_x64``, which the
    backend turns on). The article gives no sigmas, colour norm or border; the defaults are ours.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> depth = np.array([[50, 50, 0, 90, 90]] * 3, np.uint8)      # 0: a hole
    >>> color = np.array([[20, 20, 30, 200, 200]] * 3, np.uint8)
    >>> portcv.to_numpy(portcv.depth.dcbf(depth, color, 3, 1.0, 20.0))[1]
    array([50, 50, 50, 90, 90], dtype=uint8)
    """
    color, depth_map, gc, _ = guided_pair(color, depth, "color", "depth", channel_axis,
                                          values_dtypes=DEPTH_DTYPES, value_channels_allowed=False)
    ksize = _validate.integer(ksize, "ksize", low=1, high=2 * MAX_RADIUS + 1)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    sigma_space = gaussian_sigma(sigma_space, "sigma_space")
    sigma_color = gaussian_sigma(sigma_color, "sigma_color")
    window = _validate.choice(window, "window", WINDOWS)
    update = _validate.choice(update, "update", UPDATES)
    border = _validate.choice(border, "border", BILATERAL_BORDERS)
    color_norm = _validate.choice(color_norm, "color_norm", COLOR_NORMS)
    unknown = _validate.integer(unknown, "unknown", low=0, high=int(np.iinfo(np.dtype(depth_map.dtype)).max))
    spatial = spatial_window(ksize // 2, sigma_space, window)
    return run_bilateral(color, depth_map, spatial, sigma_color, guide_channels=gc, value_channels=False,
                         border=border, color_norm=color_norm, hole=unknown, keep_known=update == "holes")
