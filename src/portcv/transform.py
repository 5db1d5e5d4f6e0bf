"""Geometric transforms and image tables: integral images, resizing, image pyramids.

Everything here is exact integer arithmetic per pixel on every backend. Where OpenCV has the
same operation, the uint8 result equals OpenCV 4.13's bit for bit: ``integral`` is
``cv2.integral`` / ``cv2.integral2``, ``resize`` is ``cv2.resize`` with ``INTER_NEAREST``,
``INTER_LINEAR`` or ``INTER_LINEAR_EXACT``, and ``pyramid`` builds the levels that
``CascadeClassifier::detectMultiScale`` scans. Images are ``(..., H, W)`` or ``(..., H, W, C)``;
leading axes are a batch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _validate
from ._integral import MAX_INT32_PIXELS, SUM_DTYPES, integral_kernel
from ._resize import plan as _resize_plan
from ._resize import resize_kernel

__all__ = ["integral", "resize", "pyramid", "pack_pyramid", "INTERPOLATIONS"]

#: Interpolation names of :func:`resize` and their OpenCV flags.
INTERPOLATIONS = ("bilinear", "bilinear_exact", "nearest")
#: The most pyramid levels :func:`pyramid` builds (a scale very close to 1 is refused).
MAX_PYRAMID_LEVELS = 1000


def _plane_shape(img: Any, has_channels: bool) -> tuple[int, int, int]:
    """``(H, W, C)`` of one image of a batch."""
    if has_channels:
        return img.shape[-3], img.shape[-2], img.shape[-1]
    return img.shape[-2], img.shape[-1], 1


# --------------------------------------------------------------------------------------------
# integral
# --------------------------------------------------------------------------------------------
def integral(image: Any, *, squared: bool = False, dtype: str = "int32", channel_axis: Any = "auto") -> Any:
    """Integral image (summed-area table), equal to ``cv2.integral`` / ``cv2.integral2``.

    ``I[y, x] = sum(image[:y, :x])`` per channel, with a zero first row and column, so any
    rectangle sum is four lookups: ``sum(image[y0:y1, x0:x1]) = I[y1, x1] - I[y0, x1] -
    I[y1, x0] + I[y0, x0]`` (the summed-area table the cascade papers scan; Viola-Jones'
    "integral image").

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    squared : bool
        Also return the integral of the squared pixels (for window variances).
    dtype : {'int32', 'int64'}
        Type of the sums. ``'int32'`` is OpenCV's default for 8-bit images; portcv refuses
        images whose sums could wrap (``255 * H * W > 2**31 - 1``, i.e. more than 8,421,504
        pixels per plane: 4K fits, 8K does not) with a ``ValueError`` instead of wrapping as
        OpenCV does. Pass ``'int64'`` for larger images.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    sums : (..., H+1, W+1[, C]) array of ``dtype``
    squares : (..., H+1, W+1[, C]) int64 array
        Only with ``squared=True`` (then a tuple ``(sums, squares)`` is returned). Exact integers;
        ``cv2.integral2`` gives the same values as float64.

    Notes
    -----
    Rounding: none; every value is an exact integer sum. Portable path: two cumulative sums.
    CUDA: a tile-decomposed 2-D scan in three launches (per-tile row/column/total sums, their
    exclusive prefixes across tiles, then per tile warp-shuffle row scans and a column walk that
    starts from the integral of the row above the tile); no serial pass over the image.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[1, 2], [3, 4]], np.uint8)
    >>> portcv.to_numpy(portcv.transform.integral(img))
    array([[ 0,  0,  0],
           [ 0,  1,  3],
           [ 0,  4, 10]], dtype=int32)
    >>> s, q = portcv.transform.integral(img, squared=True)
    >>> int(portcv.to_numpy(q)[2, 2])
    30
    """
    img = _validate.image(image)
    if not isinstance(squared, bool):
        raise TypeError(f"squared must be a bool, got {type(squared).__name__}")
    dtype = _validate.choice(dtype, "dtype", SUM_DTYPES)
    has_channels = _validate.has_channels(img, channel_axis)
    height, width, _ = _plane_shape(img, has_channels)
    if dtype == "int32" and height * width > MAX_INT32_PIXELS:
        raise ValueError(
            f"image: {height}x{width} pixels can sum to 255 * {height * width} > 2**31 - 1, which int32 "
            "cannot hold (OpenCV would wrap); pass dtype='int64'"
        )
    out_elements = math.prod(img.shape) // (height * width) * (height + 1) * (width + 1)
    if out_elements > _validate.MAX_ELEMENTS:
        raise ValueError(f"image: the integral image would have {out_elements} elements; at most "
                         f"{_validate.MAX_ELEMENTS} are supported")
    return integral_kernel(img, has_channels=has_channels, squared=squared, dtype=dtype)


# --------------------------------------------------------------------------------------------
# resize
# --------------------------------------------------------------------------------------------
def _check_size(size: Any) -> tuple[int, int]:
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(f"size must be a (width, height) pair of ints, got {size!r}")
    w = _validate.integer(size[0], "size", low=1, high=_validate.MAX_ELEMENTS)
    h = _validate.integer(size[1], "size", low=1, high=_validate.MAX_ELEMENTS)
    return w, h


def _check_scale(scale: Any) -> tuple[float, float]:
    pair = tuple(scale) if isinstance(scale, (tuple, list)) else (scale, scale)
    if len(pair) != 2:
        raise ValueError(f"scale must be a float or an (fx, fy) pair, got {scale!r}")
    fx = _validate.real(pair[0], "scale", positive=True, high=1e6)
    fy = _validate.real(pair[1], "scale", positive=True, high=1e6)
    return fx, fy


def resize(
    image: Any,
    *,
    size: Any = None,
    scale: Any = None,
    interpolation: str = "bilinear",
    channel_axis: Any = "auto",
) -> Any:
    """Resize an image, equal bit-for-bit to ``cv2.resize`` on uint8 images.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    size : (int, int), optional
        Output ``(width, height)``, OpenCV's order. Give exactly one of ``size`` and ``scale``.
    scale : float or (float, float), optional
        ``(fx, fy)`` (or one factor for both): the output is ``round(W * fx) x round(H * fy)``
        (round half to even), and source coordinates map with ``1 / fx``, ``1 / fy`` -- not with
        the size ratio -- exactly as ``cv2.resize(img, None, fx=fx, fy=fy)`` does.
    interpolation : {'bilinear', 'bilinear_exact', 'nearest'}
        ``'bilinear'`` is ``cv2.INTER_LINEAR``, ``'bilinear_exact'`` is ``cv2.INTER_LINEAR_EXACT``
        (what ``CascadeClassifier`` uses for its pyramid), ``'nearest'`` is ``cv2.INTER_NEAREST``.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    (..., dh, dw[, C]) uint8 array.

    Notes
    -----
    Coordinates and weights are computed per output column and per output row on the host,
    in float64/float32 exactly as OpenCV 4.x ``modules/imgproc/src/resize.cpp`` does; the pixel
    work is integer:

    - ``'nearest'``: ``sx = min(floor(dx * (1 / fx)), W - 1)`` (float64), same for rows.
    - ``'bilinear'`` (Q11): ``f = float32((dx + 0.5) / fx - 0.5)``, ``sx = floor(f)``,
      ``a1 = rint(2048 (f - sx))``, ``a0 = rint(2048 (1 - (f - sx)))`` (columns outside the image
      take the edge pixel with weight 2048; row weights are not clamped, rows are clipped).
      ``H = a0 S[sx] + a1 S[sx+1]``, then OpenCV's ``mulhi`` form
      ``out = ((b0 (H0 >> 4)) >> 16 + (b1 (H1 >> 4)) >> 16 + 2) >> 2``.
    - ``'bilinear_exact'`` (Q8): ``f = (d + 0.5) / f_axis - 0.5`` in float64,
      ``c1 = rint(256 (f - floor f))``, ``c0 = 256 - c1``; outside the image the edge pixel;
      ``out = (c0y H0 + c1y H1 + 2^15) >> 16``.
    - Exactly 2x down on both axes (either bilinear mode, INTER_LINEAR_EXACT not for 2 channels),
      OpenCV averages 2x2 blocks: ``(a + b + c + d + 2) >> 2`` (1, 3, 4 channels; otherwise the
      mean rounded half to even); at an odd edge the 1 or 2 covered pixels' mean, rounded half to
      even.
    - Output size equal to the input size: a copy (OpenCV does the same, whatever ``scale``).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 100], [200, 255]], np.uint8)
    >>> portcv.to_numpy(portcv.transform.resize(img, size=(4, 4)))
    array([[  0,  25,  75, 100],
           [ 50,  72, 117, 139],
           [150, 167, 200, 216],
           [200, 214, 241, 255]], dtype=uint8)
    >>> portcv.to_numpy(portcv.transform.resize(img, scale=2, interpolation="nearest"))[0]
    array([  0,   0, 100, 100], dtype=uint8)
    """
    img = _validate.image(image)
    interpolation = _validate.choice(interpolation, "interpolation", INTERPOLATIONS)
    has_channels = _validate.has_channels(img, channel_axis)
    if (size is None) == (scale is None):
        raise ValueError("give exactly one of size=(width, height) and scale=(fx, fy)")
    height, width, channels = _plane_shape(img, has_channels)
    wanted = _check_size(size) if size is not None else None
    factors = _check_scale(scale) if scale is not None else None
    arith, (dw, dh), inv_scale = _resize_plan((width, height), wanted, factors, interpolation, channels)
    if dw < 1 or dh < 1:
        raise ValueError(f"scale: {scale!r} makes a {dw}x{dh} image from {width}x{height}")
    out_elements = math.prod(img.shape) // (height * width) * dh * dw
    if out_elements > _validate.MAX_ELEMENTS:
        name = "size" if size is not None else "scale"
        raise ValueError(f"{name}: the output would have {out_elements} elements; at most "
                         f"{_validate.MAX_ELEMENTS} are supported")
    if arith == "copy":
        from .backends import backend

        return backend().xp.asarray(img, copy=True)
    return resize_kernel(img, arith=arith, size=(dw, dh), inv_scale=inv_scale, has_channels=has_channels)


# --------------------------------------------------------------------------------------------
# pyramid
# --------------------------------------------------------------------------------------------
def _pyramid_plan(
    width: int, height: int, scale: float, window: tuple[int, int], *,
    min_size: tuple[int, int] = (0, 0), max_size: tuple[int, int] | None = None, name: str = "scale",
) -> list[tuple[float, tuple[int, int]]]:
    """OpenCV's scale list and level sizes for ``CascadeClassifier::detectMultiScale``.

    ``factor`` starts at 1.0 and is multiplied by ``scale`` in float64; the scan stops when the
    window scaled by the factor, ``(rint(win_w * factor), rint(win_h * factor))``, is larger
    than the image or than ``max_size`` (``maxSize``), and a level is kept when that scaled
    window is at least ``min_size`` (``minSize``). Its factor is stored as float32 and the level
    is ``rint(float32(W) / factor) x rint(float32(H) / factor)`` (cascadedetect.cpp:
    ``detectMultiScaleNoGrouping`` and ``FeatureEvaluator::updateScaleData``). Returns
    ``[(float32 factor, (w, h)), ...]``; used by :func:`pyramid` and ``portcv.detect``. More than
    ``MAX_PYRAMID_LEVELS`` levels is a ValueError naming the caller's argument ``name``.
    """
    max_w, max_h = (width, height) if max_size is None else (min(width, max_size[0]), min(height, max_size[1]))
    levels = []
    factor = 1.0
    while True:
        # cvRound(double) rounds half to even, as Python's round does.
        win_w, win_h = round(window[0] * factor), round(window[1] * factor)
        if win_w > max_w or win_h > max_h:
            break
        if win_w >= min_size[0] and win_h >= min_size[1]:
            f32 = np.float32(factor)
            w = int(np.rint(np.float32(width) / f32))  # float32 division, cvRound(float)
            h = int(np.rint(np.float32(height) / f32))
            levels.append((float(f32), (w, h)))
            if len(levels) > MAX_PYRAMID_LEVELS:
                raise ValueError(
                    f"{name}: {scale} would make more than {MAX_PYRAMID_LEVELS} pyramid levels; use a larger scale"
                )
        factor *= scale
    return levels


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
        Ratio between consecutive scales, in (1, 10] (OpenCV's ``scaleFactor``; the MCT thesis
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
    ``resize(image, size, INTER_LINEAR_EXACT)``. No per-pixel float arithmetic. The MCT thesis
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
    if not isinstance(return_scales, bool):
        raise TypeError(f"return_scales must be a bool, got {type(return_scales).__name__}")
    has_channels = _validate.has_channels(img, channel_axis)
    height, width, _ = _plane_shape(img, has_channels)
    axis = -1 if has_channels else None
    plan = _pyramid_plan(width, height, scale, window)
    levels = [resize(img, size=wh, interpolation=interpolation, channel_axis=axis) for _, wh in plan]
    scales = [f for f, _ in plan]
    return (levels, scales) if return_scales else levels


def _pack_layout(sizes: list[tuple[int, int]], width: int, gap: int) -> tuple[list[tuple[int, int]], int]:
    """Shelf placement of ``(w, h)`` levels in a ``width``-wide image: ``([(x, y), ...], height)``.

    OpenCV's ``FeatureEvaluator::updateScaleData``: each level takes a ``(w + gap) x (h + gap)``
    slot, left to right; a slot that would cross ``width`` starts a new shelf below the
    current one, whose height is its tallest slot (the first, for a decreasing pyramid).
    """
    placements = []
    x = y = shelf = 0
    for w, h in sizes:
        sw, sh = w + gap, h + gap
        if x + sw > width and x > 0:
            y, x, shelf = y + shelf, 0, 0
        placements.append((x, y))
        x += sw
        shelf = max(shelf, sh)
    return placements, y + shelf


def pack_pyramid(
    levels: Any, *, width: int | None = None, gap: int = 1, fill: int = 0, channel_axis: Any = "auto"
) -> Any:
    """Pack pyramid levels into one image, so a single launch can scan every level.

    The MCT thesis (section 3.1.1, Figure 3.1) stores the whole pyramid as one large image so
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
    corners, packed_h = _pack_layout(sizes, width, gap)
    n_out = math.prod(lead) * packed_h * width * (channels or 1)
    if n_out > _validate.MAX_ELEMENTS:
        raise ValueError(f"width: the packed image would have {n_out} elements; at most {_validate.MAX_ELEMENTS}")
    from .backends import backend

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
    from .backends import owner_of

    return owner_of(levels) is not None and not isinstance(levels, (list, tuple))
