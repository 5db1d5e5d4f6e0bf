"""The resize kernel: gathers through host-built per-axis tables, integer arithmetic per pixel.

OpenCV's ``cv::resize`` on 8-bit images computes, per output column and per output row, two
source indices and two fixed-point weights (in float64/float32, on the host); the pixel work is
integer. The tables here reproduce those coordinates bit-for-bit (``modules/imgproc/src/resize.cpp``,
OpenCV 4.x: ``resizeNN``, the INTER_LINEAR table loop of ``hal::resize`` with
``INTER_RESIZE_COEF_BITS = 11``, ``interpolationLinear`` of ``resize_bitExact`` with Q8
``ufixedpoint16``, and ``resizeAreaFast_Invoker`` for the exact 2x reduction), so the portable
code and the CUDA kernel ``_resize_cuda.cu`` both return OpenCV's bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend
from .._resize_plans import axis_table, plan
from ._integral import _plane_shape

#: Arithmetic of a resize (what the per-pixel code does with the table entries).
ARITHS = ("nearest", "linear", "exact", "area2_up", "area2_even")

@kernel("resize")
def resize_kernel(
    xp: Any, img: Any, *, arith: str, size: tuple[int, int], inv_scale: tuple[float, float], has_channels: bool
) -> Any:
    """Portable resize of ``(..., H, W[, C])`` uint8 to ``(..., dh, dw[, C])`` (int32 arithmetic)."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    h, w = img.shape[y_axis], img.shape[x_axis]
    dw, dh = size
    tx = axis_table(arith, "x", w, dw, inv_scale[0])
    ty = axis_table(arith, "y", h, dh, inv_scale[1])

    def idx(a: np.ndarray) -> Any:
        return xp.asarray(a)

    if arith == "nearest":
        return xp.take(xp.take(img, idx(ty.i0), axis=y_axis), idx(tx.i0), axis=x_axis)

    # Weights broadcast along their axis: (dw,) or (dw, 1) for x, (dh, 1) or (dh, 1, 1) for y.
    tail_x = (1,) if has_channels else ()
    wx0, wx1 = (xp.reshape(idx(a), (dw,) + tail_x) for a in (tx.w0, tx.w1))
    wy0, wy1 = (xp.reshape(idx(a), (dh, 1) + tail_x) for a in (ty.w0, ty.w1))
    wide = xp.astype(img, xp.int32)

    def horizontal(rows: Any) -> Any:
        # Q11: <= 255 * 2048; Q8: <= 255 * 256; area: <= 510 (int32 everywhere).
        return xp.take(rows, idx(tx.i0), axis=x_axis) * wx0 + xp.take(rows, idx(tx.i1), axis=x_axis) * wx1

    if h <= 2 * dh:  # enlarging (or mildly shrinking): filter every source row once, then pick rows
        filtered = horizontal(wide)
        h0, h1 = (xp.take(filtered, idx(i), axis=y_axis) for i in (ty.i0, ty.i1))
    else:  # shrinking: filter only the source rows that are used
        h0, h1 = (horizontal(xp.take(wide, idx(i), axis=y_axis)) for i in (ty.i0, ty.i1))
    if arith == "linear":
        # OpenCV's VResizeLinear for 8U: each row product is taken "mulhi" style (>> 16) before
        # the sum, then (+2) >> 2 -- not a plain (acc + 2^21) >> 22. H >> 4 <= 32640 (int16).
        out = (((wy0 * (h0 >> 4)) >> 16) + ((wy1 * (h1 >> 4)) >> 16) + 2) >> 2
    elif arith == "exact":
        out = (wy0 * h0 + wy1 * h1 + 32768) >> 16  # <= 256 * 65280 + 2^15 < 2^31
    else:
        s = wy0 * h0 + wy1 * h1
        count = (wx0 + wx1) * (wy0 + wy1)
        if arith == "area2_up":
            four = (s + 2) >> 2
        else:  # round half to even of s / 4
            four = (s + 1 + ((s >> 2) & 1)) >> 2
        two = (s + ((s >> 1) & 1)) >> 1  # round half to even of s / 2 (float sum / count, cvRound)
        out = xp.where(count == 4, four, xp.where(count == 2, two, s))
    return xp.astype(out, xp.uint8)


#: Output pixels per band of the compiled 2x reduction (``_resize_numba.py``): a 1080p gray
#: frame's 518,400 outputs are one band, on the calling thread (a band runs in about 0.05 ms,
#: less than handing one to a pool thread costs).
NUMBA_BAND_PIXELS = 1 << 20


@resize_kernel.override("numpy", supports="exact 2x reductions whose 2x2 blocks lie inside the image (others: the portable version)")
def _resize_numpy(
    img: Any, *, arith: str, size: tuple[int, int], inv_scale: tuple[float, float], has_channels: bool
) -> Any:
    from ..backends.numpy import compiled

    height, width, channels = _plane_shape(img, has_channels)
    dw, dh = size
    if not arith.startswith("area2") or 2 * dw > width or 2 * dh > height:
        # At an odd edge the tables' weights (count 1 or 2) apply: the portable gathers.
        return resize_kernel.portable(backend().xp, img, arith=arith, size=size, inv_scale=inv_scale,
                                      has_channels=has_channels)
    # Every output is the full block 2y..2y+1 x 2x..2x+1 (the tables' i0 = 2d, i1 = 2d + 1, weights 1):
    # pairs of rows, then pairs of pixels, summed exactly in uint16 (s <= 4 * 255).
    lead = img.shape[:-3] if has_channels else img.shape[:-2]
    if compiled():
        from ..backends.numpy import run_bands
        from ._resize_numba import halve_rows

        planes = img.size // (height * width * channels)
        src = np.ascontiguousarray(img).reshape(planes * height, width * channels)
        rows = planes * dh
        out = np.empty((rows, dw * channels), np.uint8)
        step = max(1, NUMBA_BAND_PIXELS // max(1, dw * channels))  # output rows per band
        even = arith != "area2_up"
        if step >= rows:
            halve_rows(src, out, height, dh, channels, 0, rows, even)
        else:
            run_bands(lambda r: halve_rows(src, out, height, dh, channels, r, min(r + step, rows), even),
                      list(range(0, rows, step)))
        return out.reshape(lead + (dh, dw) + ((channels,) if has_channels else ()))
    x = img[..., : 2 * dh, : 2 * dw, :] if has_channels else img[..., : 2 * dh, : 2 * dw]
    x = np.reshape(x, (-1, dh, 2, 2 * dw * channels))
    rows = np.add(x[:, :, 0], x[:, :, 1], dtype=np.uint16).reshape(-1, dh, dw, 2, channels)
    s = rows[:, :, :, 0] + rows[:, :, :, 1]
    if arith == "area2_up":
        s += 2
        s >>= 2
    else:  # round half to even of s / 4, as the portable version spells it
        s = (s + 1 + ((s >> 2) & 1)) >> 2
    return s.astype(np.uint8).reshape(lead + (dh, dw) + ((channels,) if has_channels else ()))



#: Interpolation names of :func:`resize` and their OpenCV flags.
INTERPOLATIONS = ("bilinear", "bilinear_exact", "nearest")
#: :func:`resize`'s modes: OpenCV's, and the cubic B-spline of :func:`portcv.transform.zoom`.
RESIZE_INTERPOLATIONS = INTERPOLATIONS + ("bspline3",)


# --------------------------------------------------------------------------------------------
# resize
# --------------------------------------------------------------------------------------------
def _check_size(size: Any) -> tuple[int, int]:
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(f"size must be a (width, height) pair of ints, got {size!r}")
    w = _validate.integer(size[0], "size", low=1, high=_validate.MAX_ELEMENTS)
    h = _validate.integer(size[1], "size", low=1, high=_validate.MAX_ELEMENTS)
    return w, h


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
    interpolation : {'bilinear', 'bilinear_exact', 'nearest', 'bspline3'}
        ``'bilinear'`` is ``cv2.INTER_LINEAR``, ``'bilinear_exact'`` is ``cv2.INTER_LINEAR_EXACT``
        (what ``CascadeClassifier`` uses for its pyramid), ``'nearest'`` is ``cv2.INTER_NEAREST``.
        ``'bspline3'`` (no OpenCV counterpart) is :func:`portcv.transform.zoom`'s exact cubic
        B-spline (scipy's ``zoom(order=3, mode="mirror", grid_mode=True)``) to the output size:
        with ``scale``, the output is ``round(W * fx) x round(H * fy)`` as for the other modes,
        but the sampling follows the size ratio, as ``zoom`` does.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`: with ``'auto'`` a last axis of at most 4 entries
        holds channels, so an ``(H, W, 5)`` image is a batch of ``H`` frames of ``W x 5`` pixels
        (``scale=0.7`` on ``(48, 64, 5)`` gives ``(48, 45, 4)``); pass ``-1`` for more channels.

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
    >>> up = portcv.transform.resize(img, size=(4, 4), interpolation="bspline3")
    >>> bool((portcv.to_numpy(up) == portcv.to_numpy(portcv.transform.zoom(img, 2))).all())
    True
    """
    img = _validate.image(image)
    interpolation = _validate.choice(interpolation, "interpolation", RESIZE_INTERPOLATIONS)
    has_channels = _validate.has_channels(img, channel_axis)
    if (size is None) == (scale is None):
        raise ValueError("give exactly one of size=(width, height) and scale=(fx, fy)")
    height, width, channels = _plane_shape(img, has_channels)
    wanted = _check_size(size) if size is not None else None
    factors = _validate.real_pair(scale, "scale", "(fx, fy)", high=1e6) if scale is not None else None
    if interpolation == "bspline3":
        dw, dh = wanted if wanted is not None else (round(width * factors[0]), round(height * factors[1]))
    else:
        arith, (dw, dh), inv_scale = plan((width, height), wanted, factors, interpolation, channels)
    if dw < 1 or dh < 1:
        raise ValueError(f"scale: {scale!r} makes a {dw}x{dh} image from {width}x{height}")
    _validate.output_elements(img.shape, (height, width), (dh, dw), "size" if size is not None else "scale")
    if interpolation == "bspline3":
        from ._zoom import zoom_to_size

        return zoom_to_size(img, (dh, dw), order=3, prefilter=True, has_channels=has_channels)
    if arith == "copy":
        return backend().xp.asarray(img, copy=True)
    return resize_kernel(img, arith=arith, size=(dw, dh), inv_scale=inv_scale, has_channels=has_channels)
