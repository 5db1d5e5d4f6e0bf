"""Image pyramids (OpenCV's cascade scale rule) and their packing into one atlas."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _validate
from .._resize_plans import pack_layout, pyramid_plan
from ._integral import _plane_shape
from ._resize import INTERPOLATIONS, resize


# --------------------------------------------------------------------------------------------
# pyramid
# --------------------------------------------------------------------------------------------
def pyramid(
    image: Any,
    *,
    scale: float = 1.1,
    min_size: Any = (24, 24),
    interpolation: str = "bilinear_exact",
    return_scales: bool = False,
    channel_axis: Any = "auto",
) -> Any:
    """The image pyramid a cascade detector scans: the image resized by ``1 / scale**i``.

    Level ``i`` is the image resized to about ``W / scale**i x H / scale**i`` with
    :func:`resize`, for as long as a ``min_size`` detection window scaled by ``scale**i`` still
    fits the image, with OpenCV's exact rounding of the scale factors and level sizes (below).
    Every level is resized from the original image, not from the previous level.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    scale : float
        Ratio between consecutive scales, in (1, 10] (OpenCV's ``scaleFactor``; Tek's thesis
        uses 1.15).
    min_size : int or (int, int)
        The detector's window ``(width, height)`` (OpenCV's original window size, e.g. the 24x24
        of the Haar face cascades), at least 1. Levels smaller than it are not made.
    interpolation : {'bilinear_exact', 'bilinear', 'nearest'}
        As in :func:`resize`; ``'bilinear_exact'`` (``INTER_LINEAR_EXACT``) is what
        ``CascadeClassifier`` uses.
    return_scales : bool
        Also return each level's scale factor.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    levels : list of uint8 arrays
        ``(..., h_i, w_i[, C])``, largest first; empty when the image is smaller than ``min_size``.
    scales : list of float
        Only with ``return_scales=True`` (then a tuple ``(levels, scales)``): level ``i``'s factor
        (a float32 value; a detection at ``(x, y)`` on level ``i`` is at ``rint(x * scales[i])``
        in the image, as in OpenCV).

    Notes
    -----
    OpenCV 4.x ``CascadeClassifierImpl::detectMultiScaleNoGrouping`` and
    ``FeatureEvaluator::updateScaleData`` (``modules/objdetect/src/cascadedetect.cpp``):
    ``factor = 1.0; while rint(win * factor) fits the image: keep float32(factor); factor *=
    scale``; level size ``rint(float32(W) / factor) x rint(float32(H) / factor)``; each level
    ``resize(image, size, INTER_LINEAR_EXACT)``. No per-pixel float arithmetic. Tek's thesis
    (section 3.1.1) builds the same kind of pyramid and packs it into one image; see
    :func:`pack_pyramid`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.zeros((60, 80), np.uint8)
    >>> levels, scales = portcv.transform.pyramid(img, scale=1.5, min_size=(24, 24), return_scales=True)
    >>> [tuple(level.shape) for level in levels], scales
    ([(60, 80), (40, 53), (27, 36)], [1.0, 1.5, 2.25])
    """
    img = _validate.image(image)
    scale = _validate.real(scale, "scale", positive=True, high=10.0)
    if scale <= 1.0:
        raise ValueError(f"scale must be > 1, got {scale}")
    window = _validate.kernel_size(min_size, "min_size", odd=False, low=1, high=_validate.MAX_ELEMENTS)
    interpolation = _validate.choice(interpolation, "interpolation", INTERPOLATIONS)
    return_scales = _validate.boolean(return_scales, "return_scales")
    has_channels = _validate.has_channels(img, channel_axis)
    height, width, _ = _plane_shape(img, has_channels)
    axis = -1 if has_channels else None
    plan = pyramid_plan(width, height, scale, window)
    levels = [resize(img, size=wh, interpolation=interpolation, channel_axis=axis) for _, wh in plan]
    scales = [f for f, _ in plan]
    return (levels, scales) if return_scales else levels



def pack_pyramid(
    levels: Any, *, width: int | None = None, gap: int = 1, fill: int = 0, channel_axis: Any = "auto"
) -> Any:
    """Pack pyramid levels into one image, so a single launch can scan every level.

    Tek's thesis (section 3.1.1, Figure 3.1) stores the whole pyramid as one large image so
    that the detector scans all scales with one grid of windows; empty regions cost a few more
    windows (20 % more in its measurements) but make the scan simple. portcv places the levels
    the way OpenCV's cascade detector lays out its per-level integral images
    (``FeatureEvaluator::updateScaleData``): left to right in shelves of the image's width,
    each level in a ``(w + gap) x (h + gap)`` slot.

    Parameters
    ----------
    levels : sequence of uint8 arrays
        ``(..., h_i, w_i[, C])`` with the same leading axes and channels, e.g. from
        :func:`pyramid`.
    width : int, optional
        Width of the packed image; at least ``max(w_i) + gap``. Default: OpenCV's
        ``alignSize(w_0 + 31, 32)`` (level 0's width plus 31, rounded up to a multiple of 32).
    gap : int
        Fill pixels right of and below each level (default 1, the extra row and column of
        OpenCV's integral-image slots), 0 to 64. With ``gap >= 1`` no window or 3x3 neighbourhood
        that starts inside one level reaches into another.
    fill : int
        Value of the pixels not covered by a level, 0 to 255.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    packed : (..., H_packed, width[, C]) uint8 array
    placements : list of (x, y, w, h)
        Where each level lies in ``packed``: ``packed[..., y:y+h, x:x+w]`` is level ``i``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> levels = portcv.transform.pyramid(np.full((60, 80), 9, np.uint8), scale=1.5)
    >>> packed, places = portcv.transform.pack_pyramid(levels)
    >>> tuple(packed.shape), places
    ((102, 128), [(0, 0, 80, 60), (0, 61, 53, 40), (54, 61, 36, 27)])
    """
    if _is_one_array(levels):
        raise TypeError("levels must be a list or tuple of arrays (e.g. from pyramid()), not one array")
    if not isinstance(levels, (list, tuple)) or len(levels) == 0:
        raise ValueError(f"levels must be a non-empty list of arrays, got {type(levels).__name__}")
    arrays = [_validate.image(level, f"levels[{i}]") for i, level in enumerate(levels)]
    has_channels = _validate.has_channels(arrays[0], channel_axis)
    lead = arrays[0].shape[:-3] if has_channels else arrays[0].shape[:-2]
    channels = arrays[0].shape[-1] if has_channels else None
    sizes = []
    for i, a in enumerate(arrays):
        if a.ndim != arrays[0].ndim or (a.shape[:-3] if has_channels else a.shape[:-2]) != lead or (
            has_channels and a.shape[-1] != channels
        ):
            raise ValueError(
                f"levels[{i}] has shape {tuple(a.shape)}; every level needs the leading axes and channels "
                f"of levels[0] {tuple(arrays[0].shape)}"
            )
        h, w, _ = _plane_shape(a, has_channels)
        sizes.append((w, h))
    gap = _validate.integer(gap, "gap", low=0, high=64)
    fill = _validate.integer(fill, "fill", low=0, high=255)
    widest = max(w for w, _ in sizes) + gap
    if width is None:
        width = max((sizes[0][0] + 31 + 31) // 32 * 32, widest)
    width = _validate.integer(width, "width", low=widest, high=_validate.MAX_ELEMENTS)
    corners, packed_h = pack_layout(sizes, width, gap)
    n_out = math.prod(lead) * packed_h * width * (channels or 1)
    if n_out > _validate.MAX_ELEMENTS:
        raise ValueError(f"width: the packed image would have {n_out} elements; at most {_validate.MAX_ELEMENTS}")
    from ..backends import backend

    xp = backend().xp
    tail = (channels,) if has_channels else ()
    # One gather: every level flattened and concatenated (plus one fill pixel), then a host-built
    # map from packed pixel to source pixel. Two array operations whatever the number of levels.
    axis = len(lead)
    flat = [xp.reshape(a, tuple(lead) + (w * h,) + tail) for a, (w, h) in zip(arrays, sizes)]
    flat.append(xp.full(tuple(lead) + (1,) + tail, fill, dtype=xp.uint8))
    source = _pack_map(tuple(sizes), tuple(corners), width, packed_h)
    packed = xp.take(xp.concat(flat, axis=axis), xp.asarray(source), axis=axis)
    packed = xp.reshape(packed, tuple(lead) + (packed_h, width) + tail)
    placements = [(x, y, w, h) for (x, y), (w, h) in zip(corners, sizes)]
    return packed, placements


@functools.lru_cache(maxsize=64)
def _pack_map(sizes: tuple, corners: tuple, width: int, height: int) -> np.ndarray:
    """Index of each packed pixel in the concatenated flattened levels; the fill pixel is last."""
    total = sum(w * h for w, h in sizes)
    source = np.full((height, width), total, dtype=np.int32)
    offset = 0
    for (w, h), (x, y) in zip(sizes, corners):
        source[y : y + h, x : x + w] = offset + np.arange(w * h, dtype=np.int32).reshape(h, w)
        offset += w * h
    source = source.reshape(-1)
    source.flags.writeable = False
    return source


def _is_one_array(levels: Any) -> bool:
    """True when ``levels`` is a single array rather than a sequence of arrays."""
    from ..backends import owner_of

    return owner_of(levels) is not None and not isinstance(levels, (list, tuple))
