"""Cubic B-spline zoom: Lin et al.'s super-resolution section, in exact fixed point.

Two kernels, as in the article (Table 4 times them apart): the *prefilter* turns pixels into
B-spline coefficients (Unser's recursive filter, here its truncated symmetric impulse response,
an integer FIR at 2**24 scale), and the *interpolation* is a separable 4-tap FIR whose weights
repeat with the period of the zoom factor. Every weight is built on the host in exact rational
arithmetic (Python integers) and every pixel operation is integer, so NumPy, CuPy and JAX give
the same bits; the result agrees with ``scipy.ndimage.zoom(order=3, mode="mirror",
grid_mode=True)`` to within one grey level, and on almost every pixel exactly.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .. import _validate
from .._border import border_indices, pad_axis
from .._kernel import kernel
from ..backends import backend, require_dtype
from ._integral import _plane_shape

#: Spline orders: nearest (0), linear (1), cubic B-spline (3).
SPLINE_ORDERS = (0, 1, 3)
#: Borders of the spline functions: whole-sample symmetric (``dcb|abcd|cba``), OpenCV's
#: BORDER_REFLECT_101 and ``scipy.ndimage``'s ``mirror``, the extension Unser's prefilter assumes.
SPLINE_BORDERS = ("reflect101",)
#: Fractional bits of the coefficients :func:`spline_filter` returns (Q16).
COEFFICIENT_BITS = 16
#: The largest magnitude of a coefficient :func:`spline_filter` returns: 2295 * 2**16 (the
#: prefilter's sum |h| times 255); ``zoom(prefilter=False)`` takes no other.
MAX_COEFFICIENT = 2295 << COEFFICIENT_BITS
#: Scale of the prefilter taps (2**24) and of its row pass result before the column pass.
PREFILTER_BITS = 24
#: Largest sum of one axis' exact interpolation weights. Both axes together give at most 2**30,
#: so with any int32 coefficient (|c| < 2**31) the one accumulator stays below 2**61 + 2**45.
MAX_WEIGHT_SUM = 2**15
#: Sum of one axis' weights where the exact ones would be larger: rounded to 2**-30 each; the
#: first pass is then brought back to Q16 before the second (each pass < 2**61).
ROUNDED_WEIGHT_SUM = 2**30
#: Output samples per block of the NumPy overrides: their int64 temporaries (2 MiB) stay in
#: cache (2 cores, 1080p: prefilter 131 -> 60 ms, interpolation x2 410 -> 95 ms at 2**22 -> 2**18).
NUMPY_BLOCK = 2**18

_Z1 = math.sqrt(3.0) - 2.0  # the pole of the cubic B-spline prefilter (Unser 1999, eq. 23)


# --------------------------------------------------------------------------------------------
# Host-built tables
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def prefilter_taps() -> tuple[int, ...]:
    """``(h_0, h_1, ..., h_N)``: the symmetric prefilter ``h[n] = h[-n]`` at 2**24 scale.

    The exact inverse of the sampled cubic B-spline ``[1, 4, 1] / 6`` is the two-sided IIR
    ``sqrt(3) * z1**|n|`` with ``z1 = sqrt(3) - 2`` (its taps sum to 1). Taps are rounded to the
    nearest integer at 2**24 and stop where they round to 0 (``|n| <= 13``; ``|z1|**14`` times
    ``sqrt(3) * 2**24`` is 0.29); the centre tap absorbs the rounding so the taps sum to exactly
    2**24 and a constant image stays exactly constant. The truncated tail is below
    ``2 sqrt(3) |z1|**14 / (1 - |z1|) * 255 = 1.2e-5`` grey levels.
    """
    scale = 1 << PREFILTER_BITS
    taps = []
    for n in range(1, 40):
        t = round(math.sqrt(3.0) * _Z1**n * scale)
        if t == 0:
            break
        taps.append(t)
    centre = scale - 2 * sum(taps)
    return (centre, *taps)


class SplineAxis(NamedTuple):
    """One axis of a zoom: per output index the mirror-mapped source index of each tap and the
    tap's integer weight; every row of ``weight`` sums to ``total``."""

    index: np.ndarray  # (n_out, taps) int32
    weight: np.ndarray  # (n_out, taps) int64
    total: int
    exact: bool  # the weights are the exact rationals (else rounded to 2**15, sum preserved)


def _bspline_weights(order: int, a: int, d: int) -> tuple[int, ...]:
    """Integer numerators of the B-spline weights at ``t = a / d`` (``0 <= a < d``); the
    denominator is ``d`` (order 1) or ``6 d**3`` (order 3, Unser's cubic B-spline pieces
    ``(1-t)**3/6, (3t**3 - 6t**2 + 4)/6, (-3t**3 + 3t**2 + 3t + 1)/6, t**3/6``)."""
    if order == 1:
        return (d - a, a)
    return ((d - a) ** 3, 3 * a**3 - 6 * a * a * d + 4 * d**3, -3 * a**3 + 3 * a * a * d + 3 * a * d * d + d**3, a**3)


@functools.lru_cache(maxsize=256)
def spline_axis(order: int, n_in: int, n_out: int) -> SplineAxis:
    """The interpolation table of one axis of ``n_in`` samples zoomed to ``n_out``.

    Pixel centres map as in ``scipy.ndimage.zoom(grid_mode=True)`` and OpenCV's resize:
    ``x = (o + 1/2) n_in / n_out - 1/2``. With ``n_in / n_out = Q / P`` in lowest terms, output
    ``o = m P + p`` reads from ``x = m Q + ((2p + 1) Q - P) / (2P)``: the fractional part ``t``
    and so the weights repeat with period ``P`` (the article's "periodically shift-invariant"
    response; ``P = u`` for an integer factor ``u``), and are exact rationals of denominator
    ``2P`` (order 1) or ``6 (2P)**3`` (order 3), reduced by their common divisor. Where that
    denominator exceeds :data:`MAX_WEIGHT_SUM` the weights are rounded to multiples of
    ``2**-30`` (half up, in exact integers) and the largest weight of each phase absorbs the
    rounding so the sum stays ``2**30``. Order 0 takes the sample at ``floor(x + 1/2)``.
    """
    g = math.gcd(n_in, n_out)
    p_period, q_step = n_out // g, n_in // g
    d = 2 * p_period
    firsts, rows = [], []
    for p in range(p_period):
        num = (2 * p + 1) * q_step - p_period  # x - m Q = num / d
        if order == 0:
            firsts.append((num + p_period) // d)
            rows.append((1,))
        else:
            first = num // d  # floor, also for negative num
            firsts.append(first - (1 if order == 3 else 0))
            rows.append(_bspline_weights(order, num - first * d, d))
    total = d if order == 1 else (6 * d**3 if order == 3 else 1)
    common = functools.reduce(math.gcd, (w for row in rows for w in row), total)
    rows = [tuple(w // common for w in row) for row in rows]
    total //= common
    exact = total <= MAX_WEIGHT_SUM
    if not exact:
        rows = [_round_weights(row, total) for row in rows]
        total = ROUNDED_WEIGHT_SUM
    taps = len(rows[0])
    o = np.arange(n_out, dtype=np.int64)
    first = (o // p_period) * q_step + np.asarray(firsts, dtype=np.int64)[o % p_period]
    # Taps reach at most 2 samples outside the axis (x lies in (-1/2, n_in - 1/2)).
    mirror = border_indices(n_in, 2, 2, "reflect101")
    index = mirror[first[:, None] + np.arange(taps) + 2]
    weight = np.asarray(rows, dtype=np.int64)[o % p_period]
    index = np.ascontiguousarray(index, dtype=np.int32)
    weight = np.ascontiguousarray(weight)
    index.flags.writeable = weight.flags.writeable = False  # cached: shared by every call
    return SplineAxis(index, weight, total, exact)


def _round_weights(row: tuple[int, ...], total: int) -> tuple[int, ...]:
    """``row / total`` rounded half up to multiples of 2**-30, the rounding added to the largest."""
    q = [(2 * w * ROUNDED_WEIGHT_SUM + total) // (2 * total) for w in row]
    largest = max(range(len(q)), key=lambda i: row[i])
    q[largest] += ROUNDED_WEIGHT_SUM - sum(q)
    return tuple(q)


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------
@kernel("spline_prefilter")
def spline_prefilter_kernel(xp: Any, img: Any, *, has_channels: bool) -> Any:
    """Cubic B-spline coefficients (int32, Q16) of ``(..., H, W[, C])`` uint8, W pass first."""
    return _prefilter(xp, img, has_channels=has_channels, pad_rows=True)


def _prefilter(xp: Any, img: Any, *, has_channels: bool, pad_rows: bool) -> Any:
    """The prefilter; ``pad_rows=False`` takes rows already extended by the taps' reach and
    returns ``2 N`` rows fewer (NumPy's bands)."""
    taps = prefilter_taps()
    n = len(taps) - 1
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)

    def symmetric(x: Any, axis: int, pad: bool) -> Any:
        padded = pad_axis(xp, x, axis, n, n, "reflect101", 0) if pad else x
        length = padded.shape[axis] - 2 * n

        def shifted(k: int) -> Any:  # x[i + k] for every i, from the padded array
            index = [slice(None)] * x.ndim
            index[axis] = slice(n + k, n + k + length)
            return padded[tuple(index)]

        acc = taps[0] * shifted(0)
        for k in range(1, n + 1):
            acc = acc + taps[k] * (shifted(-k) + shifted(k))
        return acc

    wide = require_dtype(xp.astype(img, xp.int64), "int64", "spline_filter")
    # W pass: |acc| <= 255 * sum|h| = 255 * 3 * 2**24 < 2**34; round to Q16 (>> 8, half up).
    rows = (symmetric(wide, x_axis, True) + (1 << 7)) >> 8
    # H pass: |acc| <= (765 * 2**16 + 1) * 3 * 2**24 < 2**52; round to Q16 (>> 24, half up).
    coef = (symmetric(rows, y_axis, pad_rows) + (1 << 23)) >> 24
    return xp.astype(coef, xp.int32)  # |coef| <= 2295 * 2**16 < 2**28


@spline_prefilter_kernel.override("numpy")
def _spline_prefilter_numpy(img: Any, *, has_channels: bool) -> Any:
    """The portable prefilter by blocks of about :data:`NUMPY_BLOCK` samples (a few frames, or a
    band of rows read with the taps' reach of mirrored rows around it), so its int64
    temporaries stay in cache; the same sums, so the same bits."""
    n = len(prefilter_taps()) - 1
    y_axis = -3 if has_channels else -2
    plane = img.shape[y_axis:]
    frames = img.reshape((-1,) + plane)
    out = np.empty(frames.shape, np.int32)
    h = plane[0]
    per_frame = math.prod(plane)
    step = max(1, NUMPY_BLOCK // per_frame)
    band = max(1, NUMPY_BLOCK // (per_frame // h))
    rows = border_indices(h, n, n, "reflect101")  # padded row -> source row
    for f in range(0, frames.shape[0], step):
        chunk = frames[f:f + step]
        for r in range(0, h, band):
            stop = min(h, r + band)
            source = chunk[:, rows[r:stop + 2 * n]]
            out[f:f + step, r:stop] = _prefilter(np, source, has_channels=has_channels, pad_rows=False)
    return out.reshape(img.shape)


@kernel("spline_zoom")
def spline_zoom_kernel(
    xp: Any, coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int
) -> Any:
    """Interpolate ``(..., H, W[, C])`` samples (uint8 pixels, ``frac_bits=0``, or int32 Q16
    coefficients, ``frac_bits=16``) to ``(..., dh, dw[, C])`` uint8: W pass, then H pass, one
    rounding at the end (exact weights) or one after each pass (rounded weights)."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    dh, dw = size
    tx = spline_axis(order, coef.shape[x_axis], dw)
    ty = spline_axis(order, coef.shape[y_axis], dh)
    return _interpolate(xp, coef, tx, ty, has_channels=has_channels, frac_bits=frac_bits)


def _interpolate(xp: Any, coef: Any, tx: SplineAxis, ty: SplineAxis, *, has_channels: bool, frac_bits: int) -> Any:
    """The interpolation with given tables (``ty`` may be a block of output rows whose indices
    point into ``coef``'s rows)."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    dh, dw = ty.index.shape[0], tx.index.shape[0]
    taps = tx.index.shape[1]
    tail = (1,) if has_channels else ()
    if tx.total == 1 and taps == 1 and frac_bits == 0:  # nearest on pixels: a pure gather
        return xp.take(xp.take(coef, xp.asarray(ty.index[:, 0]), axis=y_axis), xp.asarray(tx.index[:, 0]), axis=x_axis)
    exact = tx.exact and ty.exact
    # Weights are non-negative, so a pass multiplies max|c| by at most its weight sum. Exact
    # weights: one accumulator, |acc| <= max|c| S_x S_y <= 2**31 * 2**30 (any int32 input); uint8
    # pixels stay in int32 while 255 S_x S_y + D/2 < 2**31. Rounded weights (sum 2**30): each
    # pass <= 2**31 * 2**30 = 2**61, the first brought back to Q16 in between.
    narrow = exact and frac_bits == 0 and 255 * tx.total * ty.total + tx.total * ty.total // 2 < 2**31
    wide_type = xp.int32 if narrow else xp.int64
    wide = xp.astype(coef, wide_type)
    if not narrow:
        wide = require_dtype(wide, "int64", "zoom")

    def one_axis(x: Any, table: SplineAxis, axis: int, shape: tuple[int, ...]) -> Any:
        acc = None
        for k in range(taps):
            term = xp.take(x, xp.asarray(table.index[:, k]), axis=axis)
            if taps > 1:  # order 0 has the one weight 1
                term = term * xp.reshape(xp.asarray(table.weight[:, k], dtype=wide_type), shape)
            acc = term if acc is None else acc + term
        return acc

    rows = one_axis(wide, tx, x_axis, (dw,) + tail)
    if exact:
        divisor = (tx.total * ty.total) << frac_bits
    else:
        # Q16 of the first pass, rounded half up (error <= 2**-17 grey): |rows| <= 2**31.
        shift = COEFFICIENT_BITS - frac_bits
        rows = ((rows << shift) + tx.total // 2) // tx.total
        divisor = ty.total << COEFFICIENT_BITS
    acc = one_axis(rows, ty, y_axis, (dh, 1) + tail)
    if divisor > 1:
        # Round half up, as scipy rounds uint8 output (floor(v + 0.5)); floor division by a
        # positive constant is exact on every backend, negative sums included.
        acc = (acc + divisor // 2) // divisor
    return xp.astype(xp.clip(acc, 0, 255), xp.uint8)



@spline_zoom_kernel.override("numpy")
def _spline_zoom_numpy(coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int) -> Any:
    """The portable interpolation by blocks of about :data:`NUMPY_BLOCK` output samples: a few
    frames of a batch at a time, or bands of output rows of a large frame, each band reading
    only the source rows its taps reach. The same integer sums, so the same bits; the whole
    batch at once made int64 temporaries of hundreds of MB (64 QCIF frames x7 on 2 cores: 6.7 s
    whole, 1.1 s by blocks)."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    dh, dw = size
    tx = spline_axis(order, coef.shape[x_axis], dw)
    ty = spline_axis(order, coef.shape[y_axis], dh)
    plane = coef.shape[y_axis:]
    frames = coef.reshape((-1,) + plane)
    out_plane = (dh, dw) + plane[2:]
    out = np.empty((frames.shape[0],) + out_plane, np.uint8)
    per_frame = math.prod(out_plane)
    step = max(1, NUMPY_BLOCK // per_frame)
    band = max(1, NUMPY_BLOCK // (per_frame // dh))
    for f in range(0, frames.shape[0], step):
        chunk = frames[f:f + step]
        for r in range(0, dh, band):
            rows = slice(r, min(dh, r + band))
            lo, hi = int(ty.index[rows].min()), int(ty.index[rows].max())
            part = SplineAxis(ty.index[rows] - lo, ty.weight[rows], ty.total, ty.exact)
            out[f:f + step, rows] = _interpolate(np, chunk[:, lo:hi + 1], tx, part, has_channels=has_channels,
                                                 frac_bits=frac_bits)
    return out.reshape(coef.shape[:y_axis] + out_plane)


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
def _check_order(order: Any) -> int:
    order = _validate.integer(order, "order")
    if order not in SPLINE_ORDERS:
        raise ValueError(f"order must be one of {SPLINE_ORDERS} (nearest, linear, cubic B-spline), got {order}")
    return order


def spline_filter(image: Any, *, order: int = 3, border: str = "reflect101", channel_axis: Any = "auto") -> Any:
    """B-spline coefficients of an image, as Q16 fixed-point integers.

    The prefilter stage of :func:`zoom` (the "IIR" column of Lin et al.'s Table 4): the
    coefficients ``c`` with ``sum_i c[i] beta(x - i) = image[x]`` at every pixel, the analogue
    of ``scipy.ndimage.spline_filter(image, order, mode="mirror") * 2**16`` per 2-D plane.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        A frame, a batch of frames or a colour image; each plane is filtered along H and W.
    order : {3, 1, 0}
        Spline order. Orders 0 and 1 interpolate the samples themselves: their coefficients
        are ``image * 2**16``.
    border : {'reflect101'}
        Whole-sample symmetric extension (``dcb|abcd|cba``, scipy's ``mirror``).
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    (..., H, W[, C]) int32 array
        Coefficients times 2**16 (``|c| <= 2295 * 2**16``); :func:`zoom` takes them with
        ``prefilter=False``.

    Notes
    -----
    Lin et al., "The Parallelization of Video Processing", section "Enhancement example:
    spatial interpolation": the prefilter of cubic B-spline interpolation (Unser, "Splines: a
    perfect fit for signal and image processing", 1999) is two single-pole recursive filters
    per direction with the pole ``z1 = sqrt(3) - 2``. Their combined impulse response is
    ``sqrt(3) z1**|n|``; portcv applies it as a symmetric integer FIR (taps
    ``round(sqrt(3) z1**|n| 2**24)`` for ``|n| <= 13``, centre tap corrected so they sum to
    ``2**24``), which every backend computes in parallel and exactly:

    - along W: ``r = (sum_n h[n] x[i + n] + 2**7) >> 8`` (Q16; ``|sum| < 2**34``, int64),
    - along H: ``c = (sum_n h[n] r[j + n] + 2**23) >> 24`` (Q16; ``|sum| < 2**52``),

    with the image extended by ``border`` (repeatedly for images narrower than 14 pixels).
    Arithmetic shifts round half up. The result is within ``2e-4`` of scipy's float64
    coefficients (measured ``<= 1e-4``).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 60, 120, 180, 240]], np.uint8)
    >>> c = portcv.to_numpy(portcv.transform.spline_filter(img))
    >>> c.dtype, np.round(c / 2**16, 3)
    (dtype('int32'), array([[-34.286,  68.571, 120.   , 171.429, 274.286]]))
    >>> int(portcv.to_numpy(portcv.transform.spline_filter(np.full((3, 3), 7, np.uint8)))[1, 1])
    458752
    """
    img = _validate.image(image)
    order = _check_order(order)
    _validate.choice(border, "border", SPLINE_BORDERS)
    has_channels = _validate.has_channels(img, channel_axis)
    if order < 2:
        xp = backend().xp
        return xp.astype(img, xp.int32) << COEFFICIENT_BITS
    return spline_prefilter_kernel(img, has_channels=has_channels)


def zoom(
    image: Any,
    factor: Any,
    *,
    order: int = 3,
    border: str = "reflect101",
    prefilter: bool = True,
    channel_axis: Any = "auto",
    check: bool = True,
) -> Any:
    """Zoom an image by cubic B-spline (or linear, or nearest) interpolation, in exact fixed point.

    ``scipy.ndimage.zoom(image, factor, order=order, mode="mirror", grid_mode=True)`` on each
    2-D plane, computed with integers: the same bits on every backend, within one grey level of
    scipy's uint8 result everywhere; in order 3 equal on at least 99.99 % of pixels, in orders 0
    and 1 everywhere except at exact ``.5`` ties, which scipy's float64 sum rounds either way.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Frames (leading axes are a batch) or colour images. With ``prefilter=False``: the int32
        coefficients :func:`spline_filter` returned for them.
    factor : float or (float, float)
        Zoom factor, or ``(rows, columns)`` factors in array-axis order as in scipy. The output
        is ``round(H * f_rows) x round(W * f_cols)`` (round half to even, as scipy); the
        sampling follows the output size: ``x = (o + 1/2) H / H_out - 1/2`` (pixel centres).
    order : {3, 1, 0}
        Cubic B-spline (default), linear or nearest interpolation.
    border : {'reflect101'}
        Whole-sample symmetric extension (scipy's ``mirror``).
    prefilter : bool
        ``False`` takes ``image`` as already-computed :func:`spline_filter` coefficients (int32,
        ``|c| <= 2295 * 2**16``), so the prefilter and the interpolation can run (and be timed)
        apart. Coefficients outside that range are no spline's and are refused (see ``check``).
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.
    check : bool
        With ``prefilter=False``: ``True`` (default) refuses coefficients outside that range with
        a ``ValueError`` (one flag read back from the device, as
        :func:`portcv.codec.delta_decode` checks its positions); ``False``: no host round trip
        (and usable inside a caller's ``jax.jit``), out-of-range coefficients then give clipped
        pixels. Ignored with ``prefilter=True``, whose coefficients are in range by construction.

    Returns
    -------
    (..., H_out, W_out[, C]) uint8 array

    Notes
    -----
    Lin et al., "The Parallelization of Video Processing", section "Enhancement example:
    spatial interpolation" (Table 4: QCIF 176x144 to 1232x1008, x7): a prefilter
    (:func:`spline_filter`) then a separable 4-tap FIR whose weights are the cubic B-spline
    ``beta3`` at the fractional source position ``t`` (Unser 1999). With
    ``H / H_out = Q / P`` in lowest terms, ``t`` repeats with period ``P`` and is a multiple of
    ``1 / (2P)``, so the weights are exact rationals of denominator ``6 (2P)**3`` (``48 u**3``
    for an integer factor ``u``, reduced by the common divisor of the weights); they are used
    exactly while that denominator is at most ``2**15`` (integer factors up to 8, odd ones up to
    17). With ``S_y``, ``S_x`` the weight sums of the two axes and ``D = S_y S_x 2**16``:

    ``out = clip(floor((sum_ij Wy_i Wx_j c[i, j] + D / 2) / D), 0, 255)``

    -- round half up, as scipy rounds uint8 output (``floor(v + 0.5)``); the sum is exact in
    int64 (``< 2**62``). Other factors (``H / H_out`` with a large ``P``) use weights rounded to
    ``2**-30`` (sum kept) and round the W pass back to Q16 (half up) before the H pass. Order 1
    uses the weights ``1 - t, t`` on the pixels themselves (int32 when ``255 S_y S_x`` fits),
    order 0 the pixel at ``floor(x + 1/2)``. Source indices outside
    the image reflect (``border``). Differences from scipy (float64) come only from the
    prefilter's quantization (``< 1e-4``) and from values within that of a ``.5`` boundary.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[10, 200, 30], [90, 0, 250], [60, 120, 180]], np.uint8)
    >>> portcv.to_numpy(portcv.transform.zoom(img, 2))
    array([[ 43,  43, 144, 158,  78,  78],
           [ 43,  43, 144, 158,  78,  78],
           [ 63,  63,  31,  78, 179, 179],
           [ 72,  72,   6,  66, 222, 222],
           [ 67,  67,  80, 127, 185, 185],
           [ 67,  67,  80, 127, 185, 185]], dtype=uint8)
    >>> portcv.to_numpy(portcv.transform.zoom(img, (1, 1.5), order=1))
    array([[ 34, 129, 136,  51],
           [ 79,  34,  94, 219],
           [ 68,  98, 143, 173]], dtype=uint8)
    >>> coef = portcv.transform.spline_filter(img)        # the two stages apart
    >>> bool((portcv.to_numpy(portcv.transform.zoom(coef, 2, prefilter=False))
    ...       == portcv.to_numpy(portcv.transform.zoom(img, 2))).all())
    True
    """
    order = _check_order(order)
    _validate.choice(border, "border", SPLINE_BORDERS)
    prefilter = _validate.boolean(prefilter, "prefilter")
    check = _validate.boolean(check, "check")
    if prefilter:
        img = _validate.image(image)
    else:
        img = _validate.image(image, dtype=np.int32)
        if check:
            _check_coefficients(img)
    has_channels = _validate.has_channels(img, channel_axis)
    fy, fx = _validate.real_pair(factor, "factor", "(rows, columns)", high=1e6)
    height, width, _ = _plane_shape(img, has_channels)
    dh, dw = round(height * fy), round(width * fx)  # Python's round: half to even, as scipy
    if dh < 1 or dw < 1:
        raise ValueError(f"factor: {factor!r} makes a {dh}x{dw} image from {height}x{width}")
    _validate.output_elements(img.shape, (height, width), (dh, dw), "factor")
    return zoom_to_size(img, (dh, dw), order=order, prefilter=prefilter, has_channels=has_channels)


def _check_coefficients(coef: Any) -> None:
    """Refuse int32 samples outside :func:`spline_filter`'s range (they would give clipped garbage
    silently): one bool read back from the device."""
    from ..backends import to_numpy

    xp = backend().xp
    if bool(to_numpy(xp.any((coef > MAX_COEFFICIENT) | (coef < -MAX_COEFFICIENT)))):
        lo, hi = (int(to_numpy(v)) for v in (xp.min(coef), xp.max(coef)))
        raise ValueError(f"image: with prefilter=False it must hold spline_filter's coefficients, |c| <= 2295 * "
                         f"2**16 = {MAX_COEFFICIENT}; got values from {lo} to {hi}")


def zoom_to_size(img: Any, size: tuple[int, int], *, order: int, prefilter: bool, has_channels: bool) -> Any:
    """:func:`zoom` of a checked image to ``size = (rows, columns)`` (also ``resize``'s
    ``'bspline3'``): the sampling follows the size ratio."""
    if prefilter and order == 3:
        img = spline_prefilter_kernel(img, has_channels=has_channels)
        frac_bits = COEFFICIENT_BITS
    else:
        frac_bits = 0 if prefilter else COEFFICIENT_BITS
    return spline_zoom_kernel(img, order=order, size=size, has_channels=has_channels, frac_bits=frac_bits)
