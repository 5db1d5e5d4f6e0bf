"""CuPy overrides of the B-spline zoom's kernels (``spline_prefilter``, ``spline_zoom``), running
``_zoom_cuda.cu``. ``_zoom.py`` holds the portable versions (the reference); ``portcv.transform``
imports this module, which registers the overrides.

The portable code on CuPy is dozens of small CuPy calls per frame (a slice, a product and a sum
per tap and pass), so its time is the host's (docs/benchmarks.md, "Figures behind the kernels'
choices"). Here the prefilter is one launch (a block copies its tile and
a border into shared memory and runs both passes there; a thread filters a run of 8 samples from
registers) and the interpolation one more (a block computes the x pass of the rows its output
tile reads into shared memory, then the tile), with the portable version's integer arithmetic.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ._integral import _plane_shape
from ._zoom import COEFFICIENT_BITS, prefilter_taps, spline_axis, spline_prefilter_kernel, spline_zoom_kernel

#: Output samples per interpolation tile row, threads across and down it (_zoom_cuda.cu's ZOOM_TW,
#: ZOOM_TX, ZOOM_TY).
TILE_WIDTH, TILE_THREADS_ACROSS, TILE_THREADS_DOWN = 128, 64, 4
#: Source rows of one tile's x pass in shared memory (int64 each; with the tile's y taps, at most
#: 64 rows x 4 taps x 8 bytes, 48 KiB: the most a block gets without opting in).
MAX_BAND_ROWS = 46
#: Taps of the prefilter beyond the centre, fixed in _zoom_cuda.cu (PF_N).
PREFILTER_REACH = 13


def divisor_args(d: int, bits: int = 64) -> tuple:
    """Kernel arguments ``(d, m, s1, s2)`` of ``_zoom_cuda.cu``'s division of ``bits``-bit
    unsigned integers by the constant ``1 <= d <= 2**(bits - 1)`` (Granlund and Montgomery's
    multiplier, in exact Python integers)."""
    if not 1 <= d <= 2 ** (bits - 1):
        raise ValueError(f"divisor {d} outside [1, 2**{bits - 1}]")
    ell = (d - 1).bit_length()  # ceil(log2 d)
    m = (2**bits * (2**ell - d)) // d + 1
    assert m < 2**bits
    return np.uint64(d), np.uint64(m), np.int32(min(ell, 1)), np.int32(max(ell - 1, 0))


def final_division_args(divisor: int) -> tuple:
    """Kernel arguments ``(half, top, e, narrow, q, m, s1, s2)`` of the interpolation's
    ``clip(floor((acc + D/2) / D), 0, 255)`` for ``D = 2**e q``, ``q`` odd: ``top = 256 D``, and the
    division of ``n >> e < 256 q`` by ``q`` in 32 bits when ``256 q <= 2**32`` (``narrow``)."""
    e = (divisor & -divisor).bit_length() - 1
    q = divisor >> e
    narrow = 256 * q <= 2**32
    return (np.int64(divisor // 2), np.int64(256 * divisor), np.int32(e), np.int32(narrow),
            *divisor_args(q, 32 if narrow else 64))


def _plane(x: Any, has_channels: bool) -> tuple[int, int, int, int]:
    """``(planes, H, W, C)`` of ``(..., H, W[, C])``."""
    h, w, c = _plane_shape(x, has_channels)
    return math.prod(x.shape[:-3] if has_channels else x.shape[:-2]), h, w, c


@functools.lru_cache(maxsize=64)
def _row_tiles(order: int, n_in: int, n_out: int, device_id: int) -> tuple[int, int, int, Any]:
    """``(tile_rows, tiles, band_rows, bands)`` of an axis zoomed from ``n_in`` to ``n_out``
    rows: the most output rows per tile (64 down to 1) whose source rows (every tap's index,
    mirrored ones included) fit :data:`MAX_BAND_ROWS`, and per tile ``(lo, n)``, the first of
    them and their count, as int32 pairs on the device. One output row reads at most 4 rows, so
    a tile of 1 always fits."""
    import cupy

    index = spline_axis(order, n_in, n_out).index
    for tile_rows in (64, 32, 16, 8, 4, 2, 1):
        tiles = -(-n_out // tile_rows)
        padded = np.concatenate([index, np.repeat(index[-1:], tiles * tile_rows - n_out, axis=0)])
        per_tile = padded.reshape(tiles, -1)
        lo = per_tile.min(axis=1)
        count = per_tile.max(axis=1) - lo + 1
        if int(count.max()) <= MAX_BAND_ROWS:
            break
    bands = np.stack([lo, count], axis=1).astype(np.int32)
    return tile_rows, tiles, int(count.max()), cupy.asarray(bands.ravel())


@functools.lru_cache(maxsize=64)
def _axis_on_device(order: int, n_in: int, n_out: int, device_id: int) -> tuple[Any, Any]:
    """One axis' interpolation table (``spline_axis``) uploaded once per device, the weights
    (non-negative, at most 2**30) as int32."""
    import cupy

    table = spline_axis(order, n_in, n_out)
    assert int(table.weight.max()) <= 2**30 and int(table.weight.min()) >= 0  # spline_axis's weights
    return cupy.asarray(table.index), cupy.asarray(table.weight.astype(np.int32))


@spline_prefilter_kernel.override("cupy", supports="uint8 images of up to 21 channels")
def _spline_prefilter_cupy(img: Any, *, has_channels: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    taps = prefilter_taps()
    if img.dtype != cupy.uint8 or len(taps) != PREFILTER_REACH + 1:
        return NotImplemented
    x = cupy.ascontiguousarray(img)
    planes, h, w, c = _plane(x, has_channels)
    out = cupy.empty(x.shape, dtype=cupy.int32)
    if out.size == 0:
        return out
    tile = _prefilter_tile(planes, h, w, c)
    if tile is None:  # too many channels for a tile in shared memory
        return NotImplemented
    rows, px = tile
    tiles_y = -(-h // rows)
    cuda_function(__name__, "portcv_spline_prefilter_tiles")(
        (-(-w // px), min(planes * tiles_y, 65535)), (PREFILTER_THREADS,),  # blocks stride over (plane, tile row)
        (x, device_constant(taps, "int32"), np.int64(planes), np.int32(h), np.int32(w), np.int32(c), np.int32(rows),
         np.int32(px), np.int32(tiles_y), out),
        shared_mem=_prefilter_shared_bytes(rows, px, c))
    return out


#: The fused prefilter's threads per block (the .cu's PT_THREADS) and its tiles, (rows, pixels)
#: with both multiples of its PF_RUN (8), largest first.
PREFILTER_THREADS = 256
PREFILTER_TILES = ((64, 64), (32, 64), (32, 32), (16, 32), (16, 16), (8, 16), (8, 8))


def _prefilter_shared_bytes(rows: int, px: int, channels: int) -> int:
    """The W pass of rows + 2 * 13 rows (int32) and the input with a 13-pixel border (uint8)."""
    band = rows + 2 * PREFILTER_REACH
    return band * (4 * px * channels + (px + 2 * PREFILTER_REACH) * channels)


def _prefilter_tile(planes: int, h: int, w: int, channels: int) -> tuple[int, int] | None:
    """The largest tile that fits 48 KiB of shared memory and still gives every multiprocessor
    two blocks (small frames take small tiles); the smallest that fits if none does; None if
    none fits."""
    from ..backends.cupy import sm_count

    fitting = [t for t in PREFILTER_TILES if _prefilter_shared_bytes(*t, channels) <= 48 * 1024]
    for rows, px in fitting:
        if planes * -(-h // rows) * -(-w // px) >= 2 * sm_count():
            return rows, px
    return fitting[-1] if fitting else None


def zoom_shared_bytes(band_rows: int, tile_rows: int, taps: int) -> int:
    """The interpolation tile's shared memory: its y taps (an int32 offset and weight each) and
    ``band_rows`` int64 x-pass sums per tile column."""
    return tile_rows * taps * 8 + band_rows * TILE_WIDTH * 8


@spline_zoom_kernel.override("cupy", supports="uint8 pixels and int32 Q16 coefficients")
def _spline_zoom_cupy(coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, current_device_id

    pixels = coef.dtype == cupy.uint8 and frac_bits == 0
    if not (pixels or (coef.dtype == cupy.int32 and frac_bits == COEFFICIENT_BITS)):
        return NotImplemented
    x = cupy.ascontiguousarray(coef)
    planes, h, w, c = _plane(x, has_channels)
    dh, dw = size
    lead = x.shape[:-3] if has_channels else x.shape[:-2]
    out = cupy.empty(lead + ((dh, dw, c) if has_channels else (dh, dw)), dtype=cupy.uint8)
    if out.size == 0:
        return out
    tx, ty = spline_axis(order, w, dw), spline_axis(order, h, dh)
    exact = tx.exact and ty.exact
    if exact:
        shift, divisor = 0, (tx.total * ty.total) << frac_bits
    else:  # the first pass brought back to Q16, as the portable version
        shift, divisor = COEFFICIENT_BITS - frac_bits, ty.total << COEFFICIENT_BITS
    device = current_device_id()
    xi, xw = _axis_on_device(order, w, dw, device)
    yi, yw = _axis_on_device(order, h, dh, device)
    tile_rows, tiles, band_rows, bands = _row_tiles(order, h, dh, device)
    taps = tx.index.shape[1]
    fn = cuda_function(__name__, f"portcv_spline_zoom_tiles<{'unsigned char' if pixels else 'int'},{taps},"
                                 f"{'true' if exact else 'false'}>")
    fn((-(-dw * c // TILE_WIDTH), min(planes * tiles, 65535)), (TILE_THREADS_ACROSS, TILE_THREADS_DOWN),
       (x, np.int64(planes), np.int32(h), np.int32(w), np.int32(c), np.int32(dh), np.int32(dw), xi, xw, yi, yw,
        bands, np.int32(tile_rows), np.int32(tiles), *divisor_args(tx.total), np.int64(tx.total // 2),
        np.int32(shift), *final_division_args(divisor), out),
       shared_mem=zoom_shared_bytes(band_rows, tile_rows, taps))
    return out
