"""The joint bilateral kernel in integers, shared by OpenCV's ``jointBilateralFilter``
(``portcv.filters.joint_bilateral``) and Lin et al.'s depth-colour bilateral filter
(``portcv.depth.dcbf``), with the parameter checks both use.

Every weight is a host-built integer table (the spatial Gaussian per window offset, the range
Gaussian per colour difference), every pixel operation is integer, and the one division is an
exact integer division, so NumPy, CuPy and JAX give the same bits. The portable array-API kernel
loops over the window's offsets only; each offset is a handful of whole-image operations
(:func:`offset_terms`). CuPy's override is ``_bilateral_cuda.py``, JAX's (Pallas kernels on a GPU,
elsewhere an XLA loop over a table of the offsets) ``_bilateral_pallas.py``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from . import _validate
from ._border import pad_axis
from ._kernel import kernel
from .backends import backend, cached_constant, require_dtype

#: Fractional bits of the spatial weights, the range weights and their product (Q15).
WEIGHT_BITS = 15
#: Largest window radius: a 31 x 31 window (961 offsets; each offset is a pass over the image).
MAX_RADIUS = 15
#: Window shapes: OpenCV's disk (offsets with dx**2 + dy**2 <= r**2) or the full square.
WINDOWS = ("disk", "square")
#: Colour distances: the L1 sum of channel differences (OpenCV's) or the squared L2 distance.
COLOR_NORMS = ("l1", "l2")
#: Pixels per band of the NumPy override (its int32 temporaries stay in cache).
NUMPY_BAND = 1 << 15
#: Borders of the bilateral filters (``constant`` reads 0 outside the image; DCBF: a hole).
BILATERAL_BORDERS = ("reflect101", "replicate", "constant")
#: Smallest sigma of either Gaussian: ``2 sigma**2`` (the tables divide by it) stays a normal
#: float64; below about 1e-162 it is 0 and the tables would hold NaN cast to int32.
MIN_SIGMA = 1e-150


class Window(NamedTuple):
    """The spatial part of a bilateral filter: ``(dy, dx, weight)`` per offset with a non-zero weight."""

    taps: tuple[tuple[int, int, int], ...]
    radius: int


@functools.lru_cache(maxsize=64)
def spatial_window(radius: int, sigma_space: float, window: str) -> Window:
    """``Ws[dy, dx] = round(2**15 exp(-(dx**2 + dy**2) / (2 sigma_space**2)))`` over the window.

    ``window="disk"`` keeps the offsets with ``dx**2 + dy**2 <= radius**2`` (OpenCV's window),
    ``"square"`` every offset of the ``(2 radius + 1)**2`` square. Offsets whose weight rounds to
    0 are dropped (they add nothing). Python's ``round`` is half to even; the value is computed
    in float64 on the host, once.
    """
    taps = []
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            r2 = dx * dx + dy * dy
            if window == "disk" and r2 > radius * radius:
                continue
            w = round((1 << WEIGHT_BITS) * math.exp(-r2 / (2.0 * sigma_space * sigma_space)))
            if w > 0:
                taps.append((dy, dx, w))
    return Window(tuple(taps), radius)


@functools.lru_cache(maxsize=64)
def range_table(sigma_color: float, channels: int, color_norm: str) -> np.ndarray:
    """``Wr[delta]``: the range weight of every possible colour distance, Q15 (int32, read-only).

    ``l1``: ``delta = sum_c |I_A[c] - I_B[c]|`` in ``0 .. 255 C`` and
    ``Wr = round(2**15 exp(-delta**2 / (2 sigma_color**2)))`` (OpenCV's table, which it indexes
    the same way). ``l2``: ``delta = sum_c (I_A[c] - I_B[c])**2`` in ``0 .. 255**2 C`` and
    ``Wr = round(2**15 exp(-delta / (2 sigma_color**2)))``. For one channel both give the same
    weights.
    """
    top = 255 * channels if color_norm == "l1" else 255 * 255 * channels
    delta = np.arange(top + 1, dtype=np.float64)
    square = delta * delta if color_norm == "l1" else delta
    table = np.rint(np.exp(-square / (2.0 * sigma_color * sigma_color)) * (1 << WEIGHT_BITS)).astype(np.int32)
    table.flags.writeable = False
    return table


def accumulator_is_wide(taps: int, max_value: int) -> bool:
    """Whether ``N = sum w d`` needs int64: each weight is at most 2**15, so
    ``N + W / 2 <= taps 2**15 max_value + taps 2**14``, which must stay below 2**31 for int32
    (uint8 values: up to 256 offsets, e.g. any 15 x 15 square; 11 x 11 gives 1.01e9)."""
    return taps * (1 << WEIGHT_BITS) * max_value + taps * (1 << (WEIGHT_BITS - 1)) >= 2**31


# --------------------------------------------------------------------------------------------
# The kernel
# --------------------------------------------------------------------------------------------
@kernel("joint_bilateral")
def bilateral_kernel(
    xp: Any,
    guide: Any,
    values: Any,
    table: Any,
    spatial: Any,
    *,
    offsets: tuple,
    radius: int,
    guide_channels: bool,
    value_channels: bool,
    border: str,
    color_norm: str,
    hole: int | None,
    keep_known: bool,
    wide: bool,
) -> Any:
    """Portable joint bilateral sum over the window's ``offsets`` (``(dy, dx)``, static) with
    their spatial weights ``spatial`` (int32 array, ``Ws`` per offset), one exact division.

    The weights and the range table are arrays, not static parameters, so a new sigma
    compiles nothing new under JAX (only a new window shape does). Per offset: ``delta``
    (colour distance of the guide, int32), ``Wr = table[delta]``, ``w = (Ws Wr + 2**14) >> 15``
    (``Ws Wr <= 2**30``: int32), ``w = 0`` where the neighbour's value is ``hole``; ``N += w v``
    (int32 or, ``wide``, int64), ``W += w``. Then ``out = (N + W // 2) // W`` (round half up);
    ``W = 0`` gives ``hole``; ``keep_known`` keeps every value that is not ``hole``.
    """
    g, pg, pv = bordered(xp, guide, values, radius=radius, guide_channels=guide_channels,
                         value_channels=value_channels, border=border, hole=hole)
    return _bilateral_sums(xp, pg, g, pv, values, table, spatial, offsets=offsets, radius=radius,
                           guide_channels=guide_channels, value_channels=value_channels, color_norm=color_norm,
                           hole=hole, keep_known=keep_known, wide=wide)


def bordered(xp: Any, guide: Any, values: Any, *, radius: int, guide_channels: bool, value_channels: bool,
             border: str, hole: int | None) -> tuple[Any, Any, Any]:
    """``(g, pg, pv)``: the guide in int32, and it and the values extended by ``radius`` on every
    side of the plane by the border rule (``constant``: guide 0, values 0 or ``hole``)."""
    gy, gx = (-3, -2) if guide_channels else (-2, -1)
    vy, vx = (-3, -2) if value_channels else (-2, -1)
    g = xp.astype(guide, xp.int32)
    value_fill = 0 if hole is None else hole
    pg = pad_axis(xp, pad_axis(xp, g, gx, radius, radius, border, 0), gy, radius, radius, border, 0)
    pv = pad_axis(xp, pad_axis(xp, values, vx, radius, radius, border, value_fill), vy, radius, radius, border,
                  value_fill)
    return g, pg, pv


def _bilateral_sums(xp: Any, pg: Any, g: Any, pv: Any, values: Any, table: Any, spatial: Any, *, offsets: tuple,
                    radius: int, guide_channels: bool, value_channels: bool, color_norm: str, hole: int | None,
                    keep_known: bool, wide: bool) -> Any:
    """The sums and the division, from the guide ``g`` (int32) and the ``values`` with their
    copies ``pg``, ``pv`` extended by ``radius`` on every side (NumPy's bands pass a band of
    rows and its halo)."""
    gy, gx = (-3, -2) if guide_channels else (-2, -1)
    height, width = g.shape[gy], g.shape[gx]
    acc_type = xp.int64 if wide else xp.int32
    g_tail = (slice(None),) if guide_channels else ()
    v_tail = (slice(None),) if value_channels else ()
    num = None
    den = None
    for k, (dy, dx) in enumerate(offsets):  # the only Python loop: over the window's offsets
        rows = slice(radius + dy, radius + dy + height)
        cols = slice(radius + dx, radius + dx + width)
        w, term = offset_terms(xp, pg[(..., rows, cols) + g_tail], g, pv[(..., rows, cols) + v_tail], table,
                               spatial[k], guide_channels=guide_channels, value_channels=value_channels,
                               color_norm=color_norm, hole=hole, acc_type=acc_type)
        num = term if num is None else num + term
        den = w if den is None else den + w
    return weighted_mean(xp, num, den, values, value_channels=value_channels, hole=hole, keep_known=keep_known,
                         acc_type=acc_type)


def offset_terms(xp: Any, guide_at: Any, g: Any, values_at: Any, table: Any, ws: Any, *, guide_channels: bool,
                 value_channels: bool, color_norm: str, hole: int | None, acc_type: Any) -> tuple[Any, Any]:
    """One window offset's weights ``w`` (int32) and terms ``w v`` (``acc_type``), from the
    guide ``g`` (int32), the guide and the values shifted by the offset (``guide_at``,
    ``values_at``) and the offset's spatial weight ``ws``: the one definition of the portable
    loop's arithmetic and of JAX's XLA loop over a table of the offsets (``_bilateral_pallas.py``)."""
    diff = guide_at - g
    dist = xp.abs(diff) if color_norm == "l1" else diff * diff
    if guide_channels:
        dist = xp.sum(dist, axis=-1, dtype=xp.int32)
    wr = xp.reshape(xp.take(table, xp.reshape(dist, (-1,))), dist.shape)
    w = (wr * ws + (1 << (WEIGHT_BITS - 1))) >> WEIGHT_BITS
    if hole is not None:
        w = xp.where(values_at != hole, w, xp.zeros_like(w))
    wv = w[..., None] if value_channels else w
    return w, xp.astype(wv, acc_type) * xp.astype(values_at, acc_type)


def weighted_mean(xp: Any, num: Any, den: Any, values: Any, *, value_channels: bool, hole: int | None,
                  keep_known: bool, acc_type: Any) -> Any:
    """``(N + W // 2) // W`` from the sums ``num`` (``acc_type``) and ``den`` (int32), with the
    hole rule (``W = 0`` gives ``hole``; ``keep_known`` keeps every value that is not one), in
    ``values``' dtype."""
    den = xp.astype(den, acc_type)
    if value_channels:
        den = den[..., None]
    safe = xp.where(den > 0, den, xp.ones_like(den))
    out = (num + den // 2) // safe  # exact floor division of non-negative integers
    if hole is not None:
        out = xp.where(den > 0, out, xp.full_like(out, hole))
        if keep_known:
            out = xp.where(values != hole, xp.astype(values, acc_type), out)
    return xp.astype(out, values.dtype)


@bilateral_kernel.override("numpy", supports="every input (bands of rows on the host's threads)")
def _bilateral_numpy(guide: Any, values: Any, table: Any, spatial: Any, *, offsets: tuple, radius: int,
                     guide_channels: bool, value_channels: bool, border: str, color_norm: str, hole: int | None,
                     keep_known: bool, wide: bool) -> Any:
    """The portable sums by bands of about :data:`NUMPY_BAND` pixels (their int32 temporaries stay in cache)
    spread over the host's threads: each band reads its rows and their halo of the once-padded
    images and writes only its rows, so the bits are the portable version's (measured on a
    loaded 2-core machine, DCBF 11 x 11 of the 500 x 741 motorcycle map, RGB guide: 7.1 s
    whole-image, 4.6 s by bands)."""
    from .backends.numpy import row_bands, run_bands

    gy, gx = (-3, -2) if guide_channels else (-2, -1)
    vy = -3 if value_channels else -2
    height, width = guide.shape[gy], guide.shape[gx]
    g_plane, v_plane = tuple(guide.shape[gy:]), tuple(values.shape[vy:])
    frames = math.prod(guide.shape[:gy])
    v = values.reshape((frames,) + v_plane)
    g, pg, pv = bordered(np, guide.reshape((frames,) + g_plane), v, radius=radius, guide_channels=guide_channels,
                         value_channels=value_channels, border=border, hole=hole)
    out = np.empty(v.shape, values.dtype)

    def band(item: tuple[int, int, int]) -> None:
        f, r0, r1 = item
        out[f, r0:r1] = _bilateral_sums(
            np, pg[f, r0:r1 + 2 * radius], g[f, r0:r1], pv[f, r0:r1 + 2 * radius], v[f, r0:r1], table, spatial,
            offsets=offsets, radius=radius, guide_channels=guide_channels, value_channels=value_channels,
            color_norm=color_norm, hole=hole, keep_known=keep_known, wide=wide)

    run_bands(band, row_bands(height, width, planes=frames, target=NUMPY_BAND))
    return out.reshape(values.shape)


def run_bilateral(
    guide: Any,
    values: Any,
    window: Window,
    sigma_color: float,
    *,
    guide_channels: bool,
    value_channels: bool,
    border: str,
    color_norm: str,
    hole: int | None = None,
    keep_known: bool = False,
) -> Any:
    """Build the range table on the host, pick the accumulator width, run the kernel."""
    channels = guide.shape[-1] if guide_channels else 1
    table_host = range_table(sigma_color, channels, color_norm)
    max_value = int(np.iinfo(np.dtype(values.dtype)).max)
    wide = accumulator_is_wide(len(window.taps), max_value)
    xp = backend().xp
    if wide:
        require_dtype(xp.empty((0,), dtype=xp.int64), "int64", "a bilateral filter of this size")
    # Host-built tables copied to the device once (cached_constant), not on every call.
    table = cached_constant(("bilateral range table", sigma_color, channels, color_norm), lambda: table_host)
    spatial = cached_constant(("bilateral spatial weights", window.taps),
                              lambda: np.array([w for _, _, w in window.taps], np.int32))
    return bilateral_kernel(
        guide, values, table, spatial,
        offsets=tuple((dy, dx) for dy, dx, _ in window.taps), radius=window.radius,
        guide_channels=guide_channels, value_channels=value_channels, border=border, color_norm=color_norm,
        hole=hole, keep_known=keep_known, wide=wide,
    )


def gaussian_sigma(value: Any, name: str) -> float:
    """A sigma of the spatial or the range Gaussian: a finite real number of at least :data:`MIN_SIGMA`
    (any sigma far below one pixel or grey level already gives the tables of the limit: only the
    centre, or only equal colours, weigh)."""
    value = _validate.real(value, name, positive=True)
    if value < MIN_SIGMA:
        raise ValueError(f"{name} must be at least {MIN_SIGMA} (2 {name}**2 must not underflow to 0), got {value}")
    return value


def guided_pair(guide: Any, values: Any, guide_name: str, values_name: str, channel_axis: Any,
                values_dtypes: tuple = (np.uint8,), value_channels_allowed: bool = True) -> tuple[Any, Any, bool, bool]:
    """Check a guide image and the image it steers: uint8 guide with 1 or 3 channels, values of
    one of ``values_dtypes``; the same ``(..., H, W)`` (leading axes and plane)."""
    guide = _validate.image(guide, guide_name)
    allowed = tuple(np.dtype(d) for d in values_dtypes)
    dtype = owner_of_dtype(values)
    if dtype is not None and dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise TypeError(f"{values_name} must have dtype {names}, got {dtype}")
    values = _validate.image(values, values_name, dtype=dtype if dtype is not None else allowed[0])
    gc = _validate.has_channels(guide, channel_axis)
    vc = _validate.has_channels(values, channel_axis) if value_channels_allowed else False
    if gc and guide.shape[-1] not in (1, 3):
        raise ValueError(f"{guide_name} must have 1 or 3 channels, got shape {tuple(guide.shape)}")
    g_plane = tuple(guide.shape[:-1]) if gc else tuple(guide.shape)
    v_plane = tuple(values.shape[:-1]) if vc else tuple(values.shape)
    if g_plane != v_plane and not value_channels_allowed:  # the library's colour rule, with its hint
        _validate.gray(values, values_name, "auto", batches=False)
    if g_plane != v_plane:
        raise ValueError(f"{guide_name} and {values_name} must have the same (..., H, W) shape, got "
                         f"{tuple(guide.shape)} and {tuple(values.shape)}")
    return guide, values, gc, vc


def owner_of_dtype(x: Any) -> Any:
    """The NumPy dtype of an array argument (a list becomes a NumPy array first); ``None`` if it has none."""
    dtype = getattr(x, "dtype", None)
    if dtype is None and isinstance(x, (list, tuple)):
        try:
            dtype = np.asarray(x).dtype
        except ValueError:  # a ragged list: _validate.image names the argument
            return None
    try:
        return None if dtype is None else np.dtype(dtype)
    except TypeError:
        return None
