"""Del Vecchio et al.'s edge detector (Algorithm 1): low-pass, Sobel, non-maximum suppression with
selective thresholding; the public ``detect`` over the fused kernel of ``_edges.py``.
"""

from __future__ import annotations

from typing import Any

from .. import _border, _validate
from .._gaussian_taps import sigma0_gaussian_taps
from .._separable_pass import MAX_TAPS, separable_filter_kernel
from ._edges import LOW_PASS_FINISH, MAX_ALPHA, VARIANTS, detect_kernel
from ._gradient import _floor_square, _threshold

# --------------------------------------------------------------------------------------------
# The paper's detector
# --------------------------------------------------------------------------------------------


def _low_pass_taps(ksize: Any) -> tuple[int, ...]:
    """The paper's step 1 (section II-B) for ``sigma=None``: OpenCV's Q8 taps of size ``ksize``
    (the 3x3 binomial [1, 2, 1]/4 by default); ``()`` for ``ksize=1`` ((256 p + 2^15) >> 16 = p)."""
    ksize = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    return () if ksize == 1 else sigma0_gaussian_taps(ksize)


def _low_pass(img: Any, ksize: Any, sigma: Any, border: str) -> Any:
    """The paper's step 1 on its own: ``cv2.GaussianBlur(img, (ksize, ksize), sigma or 0)``."""
    if sigma is not None:
        from .. import filters

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
    channel_axis: Any = "auto",
) -> Any:
    """Del Vecchio et al.'s edge detector: Gaussian, Sobel, NMS with selective thresholding.

    Section II, Algorithm 1: the image is low-passed (3x3 binomial by default), its Sobel
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

    channel_axis : {"auto", None}
        ``"auto"``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: leading axes are a batch of
        gray frames, whatever the last axis.
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
    the gather has none. On CuPy one kernel (``_edges_cuda.cu``) does the low-pass (``sigma=None``,
    ``ksize <= 7``), Sobel, magnitude, sector, local maximum and the apron gather from a
    shared-memory tile with an ``alpha + 2`` halo: one launch per call.

    References: Del Vecchio, Lin and Natarajan, "GPU Acceleration of Edge-Based Motion Detection
    and Machine Learning-Aided Facial Recognition with NVIDIA CUDA", section II-B to II-E,
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
    img = _validate.image(image, gray=True, channel_axis=channel_axis)
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
