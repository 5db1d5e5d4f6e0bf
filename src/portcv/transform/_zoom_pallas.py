"""JAX overrides of the B-spline zoom's kernels (``spline_prefilter``, ``spline_zoom``): on a GPU
Pallas (Triton) kernels, elsewhere the portable versions.

Under XLA the portable code is a whole-array slice or gather, product and sum per tap and pass
(slow: docs/benchmarks.md, "Figures behind the kernels' choices"). Here each pass of each stage
is one Pallas kernel, a program per tile of one plane, that reads its taps' samples through
host-built index tables (mirrored borders included) and sums them with the portable version's
integer weights and roundings: the same integer sums, so the same bits. ``portcv.transform`` imports this module, which registers the overrides.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import backend, require_dtype
from ..backends.jax import quiet_pallas_triton
from .._border import border_indices
from ._zoom import COEFFICIENT_BITS, prefilter_taps, spline_axis, spline_prefilter_kernel, spline_zoom_kernel


@spline_zoom_kernel.override("jax", supports="every input (on a GPU: two Pallas kernels)")
def _spline_zoom_jax(coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int) -> Any:
    params = dict(order=order, size=size, has_channels=has_channels, frac_bits=frac_bits)
    if backend().pallas_usable:
        run = pallas_zoom(tuple(coef.shape), np.dtype(coef.dtype).name, **params)
        if run is not None:
            with quiet_pallas_triton():  # JAX lowers the kernel at the first call
                return run(coef)
    return spline_zoom_kernel.portable_for(backend())(coef, **params)


def _pass_call(program: Any, grid: tuple, size: int, dtype: Any, warps: int, interpret: bool) -> Any:
    """The ``pallas_call`` of one pass: ``program`` over ``grid`` (tiles, planes) writing a flat
    output of ``size`` elements of ``dtype``."""
    import jax
    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    return pl.pallas_call(program, grid=grid, interpret=interpret, out_shape=jax.ShapeDtypeStruct((size,), dtype),
                          compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))


def _planar_shape(shape: tuple, has_channels: bool) -> tuple:
    """``(h, w, channels, lead, planes)`` of a ``(..., H, W[, C])`` shape: the kernels run on
    planar data, one plane per frame and channel."""
    h, w = shape[-3:-1] if has_channels else shape[-2:]
    channels = shape[-1] if has_channels else 1
    lead = shape[:-3] if has_channels else shape[:-2]
    return h, w, channels, lead, int(np.prod(lead, dtype=np.int64)) * channels


def _to_planes(x: Any, h: int, w: int, channels: int) -> Any:
    """``(..., H, W[, C])`` ``x`` as one flat array of its planes."""
    import jax.numpy as jnp

    return jnp.reshape(jnp.moveaxis(jnp.reshape(x, (-1, h, w, channels)), -1, 1), (-1,))


def _from_planes(out: Any, lead: tuple, channels: int, size: tuple, has_channels: bool) -> Any:
    """Flat planes ``out`` of ``size`` each back to ``lead + size (+ (channels,))``."""
    import jax.numpy as jnp

    out = jnp.reshape(out, (-1, channels) + size)
    if has_channels:
        return jnp.reshape(jnp.moveaxis(out, 1, -1), lead + size + (channels,))
    return jnp.reshape(out, lead + size)


#: Tiles (rows x columns, warps) of the interpolation's W pass (over source rows) and H pass (over
#: output rows): the fastest of a GPU sweep over batches, single frames and 1080p (the figures:
#: docs/benchmarks.md, "Figures behind the kernels' choices").
ZOOM_TILES = ((4, 128, 4), (8, 128, 4))


@functools.lru_cache(maxsize=None)
def pallas_zoom(shape: tuple, dtype: str, *, order: int, size: tuple[int, int], has_channels: bool,
                frac_bits: int, tiles: tuple = ZOOM_TILES, interpret: bool = False) -> Any:
    """Jitted ``spline_zoom`` of ``(..., H, W[, C])`` samples of ``dtype`` by two Pallas kernels,
    or ``None`` where it does not apply (an empty input or output, a grid over 65,535 planes,
    offsets past int32).

    The portable version's two passes on planar data (one plane per frame and channel), with
    the two axes' tables ``(taps, n_out)`` extended to whole tiles by the last output's entries:
    the W pass makes every source row's ``dw`` values once (``taps`` gathers and int32 weights
    widened to the accumulator's type each; rounded back to Q16 where the weights are) into an
    ``(planes, H, dw)`` buffer; the H pass reads ``taps`` rows of it per output row and writes
    uint8. The same integer sums, so the same bits. (One fused kernel gathering the ``taps**2``
    coefficients of each output made each source row's W pass again for every output row that
    reads it, 7 times at x7, and was slower.) ``tiles``: as :data:`ZOOM_TILES`."""
    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu
    import jax.numpy as jnp

    from ..backends.jax import jit

    h, w, channels, lead, planes = _planar_shape(shape, has_channels)
    dh, dw = size
    (ah, aw, a_warps), (bh, bw, b_warps) = tiles
    if min(planes, h, w, dh, dw) <= 0 or planes > 65535 or planes * max(h * w, h * dw, dh * dw) > 2**31 - 1:
        return None
    tx, ty = spline_axis(order, w, dw), spline_axis(order, h, dh)
    taps = tx.index.shape[1]
    exact = tx.exact and ty.exact
    narrow = exact and frac_bits == 0 and 255 * tx.total * ty.total + tx.total * ty.total // 2 < 2**31
    acc_type = jnp.int32 if narrow else jnp.int64
    if exact:
        divisor = (tx.total * ty.total) << frac_bits
    else:
        shift = COEFFICIENT_BITS - frac_bits
        divisor = ty.total << COEFFICIENT_BITS

    def table(axis: Any, blocks: int, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(taps, blocks * block) indices and int32 weights; past the axis' end, the last output's."""
        last = np.minimum(np.arange(blocks * block), axis.index.shape[0] - 1)
        weight = axis.weight[last].T
        assert np.abs(weight).max() < 2**31
        return np.ascontiguousarray(axis.index[last].T), np.ascontiguousarray(weight.astype(np.int32))

    a_rows, a_cols = -(-h // ah), -(-dw // aw)
    b_rows, b_cols = -(-dh // bh), -(-dw // bw)
    x_index, x_weight = table(tx, a_cols, aw)
    y_index, y_weight = table(ty, b_rows, bh)

    def w_pass(c_ref: Any, xi_ref: Any, xw_ref: Any, m_ref: Any) -> None:
        tile, plane = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // a_cols) * ah, (tile % a_cols) * aw
        # Overhanging rows and columns repeat the last ones (their values, stored there again).
        y = jnp.minimum(y0 + jnp.arange(ah, dtype=jnp.int32), h - 1)[:, None]
        ox = jnp.minimum(x0 + jnp.arange(aw, dtype=jnp.int32), dw - 1)[None, :]
        row_at = plane * (h * w) + y * w
        acc = None
        for j in range(taps):
            term = c_ref[row_at + xi_ref[j, pl.ds(x0, aw)][None, :]].astype(acc_type) \
                * xw_ref[j, pl.ds(x0, aw)].astype(acc_type)[None, :]
            acc = term if acc is None else acc + term
        if not exact:  # the first pass back to Q16, rounded half up
            acc = ((acc << shift) + tx.total // 2) // tx.total
        plgpu.store(m_ref.at[plane * (h * dw) + y * dw + ox], acc)

    def h_pass(m_ref: Any, yi_ref: Any, yw_ref: Any, o_ref: Any) -> None:
        tile, plane = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // b_cols) * bh, (tile % b_cols) * bw
        ox = jnp.minimum(x0 + jnp.arange(bw, dtype=jnp.int32), dw - 1)[None, :]
        acc = None
        for i in range(taps):
            rows = m_ref[plane * (h * dw) + yi_ref[i, pl.ds(y0, bh)][:, None] * dw + ox]
            term = yw_ref[i, pl.ds(y0, bh)].astype(acc_type)[:, None] * rows
            acc = term if acc is None else acc + term
        if divisor > 1:
            acc = (acc + divisor // 2) // divisor
        oy = jnp.minimum(y0 + jnp.arange(bh, dtype=jnp.int32), dh - 1)[:, None]
        plgpu.store(o_ref.at[plane * (dh * dw) + oy * dw + ox], jnp.clip(acc, 0, 255).astype(jnp.uint8))

    first = _pass_call(w_pass, (a_rows * a_cols, planes), planes * h * dw, acc_type, a_warps, interpret)
    second = _pass_call(h_pass, (b_rows * b_cols, planes), planes * dh * dw, jnp.uint8, b_warps, interpret)

    def run(coef: Any) -> Any:
        if not narrow:  # JAX without x64: refuse (at trace time) as the portable version does
            require_dtype(jnp.zeros((), acc_type), "int64", "zoom")
        mid = first(_to_planes(coef, h, w, channels), jnp.asarray(x_index), jnp.asarray(x_weight))
        out = second(mid, jnp.asarray(y_index), jnp.asarray(y_weight))
        return _from_planes(out, lead, channels, (dh, dw), has_channels)

    return jit(run)


#: Tiles (rows x columns, warps) of the prefilter's W pass and H pass programs: the fastest of a
#: GPU sweep in batches (docs/benchmarks.md, "Figures behind the kernels' choices"). Making the
#: int64 products from int32 partial sums of the taps' and samples' high and low halves instead
#: was no faster.
PREFILTER_TILES = ((8, 32, 1), (8, 32, 1))


@spline_prefilter_kernel.override("jax", supports="uint8 images (on a GPU: two Pallas kernels)")
def _spline_prefilter_jax(img: Any, *, has_channels: bool) -> Any:
    if backend().pallas_usable and np.dtype(img.dtype) == np.uint8:
        run = pallas_prefilter(tuple(img.shape), has_channels=has_channels, tiles=PREFILTER_TILES)
        if run is not None:
            with quiet_pallas_triton():
                return run(img)
    return spline_prefilter_kernel.portable_for(backend())(img, has_channels=has_channels)


@functools.lru_cache(maxsize=None)
def pallas_prefilter(shape: tuple, *, has_channels: bool, tiles: tuple = PREFILTER_TILES,
                     interpret: bool = False) -> Any:
    """Jitted ``spline_prefilter`` of ``(..., H, W[, C])`` uint8 by two Pallas kernels, or
    ``None`` where it does not apply (empty, a grid over 65,535 planes, offsets past int32).

    The portable version's two passes, each a program per tile of one plane: the W pass gathers
    the 27 samples of each output through a table of mirrored column indices and writes the
    rounded Q16 sums (int32) into a buffer; the H pass reads 27 rows of it through a table of
    mirrored row indices. Each tap multiplies the sum of its two mirrored samples, both factors
    int32 widened to int64 (one 32 x 32 -> 64-bit multiply); the same integer sums and
    roundings, so the same bits. ``tiles``: as :data:`PREFILTER_TILES`. (Under XLA the portable
    version is 54 slices of int64 arrays, slower.)
    """
    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu
    import jax.numpy as jnp

    from ..backends.jax import jit

    h, w, channels, lead, planes = _planar_shape(shape, has_channels)
    if min(planes, h, w) <= 0 or planes > 65535 or planes * h * w > 2**31 - 1:
        return None
    taps = prefilter_taps()
    n = len(taps) - 1
    (ah, aw, a_warps), (bh, bw, b_warps) = tiles

    def mirrored(length: int, blocks: int, block: int) -> np.ndarray:
        """(2 n + 1, blocks * block): for offset k - n, the mirrored index of each position
        (past the axis' end, the last position's)."""
        at = np.minimum(np.arange(blocks * block), length - 1)
        mirror = border_indices(length, n, n, "reflect101")
        return np.ascontiguousarray(mirror[at[None, :] + np.arange(2 * n + 1)[:, None]], dtype=np.int32)

    a_rows, a_cols = -(-h // ah), -(-w // aw)
    b_rows, b_cols = -(-h // bh), -(-w // bw)
    x_index = mirrored(w, a_cols, aw)
    y_index = mirrored(h, b_rows, bh)

    def symmetric(load: Any) -> Any:
        """h_0 v_0 + sum_k h_k (v_-k + v_k) in int64; ``load(j)`` gives v_(j - n) as int32 (the
        pair sums, < 2**27, fit int32; the taps < 2**25 too)."""
        acc = load(n).astype(jnp.int64) * taps[0]
        for k in range(1, n + 1):
            acc = acc + (load(n - k) + load(n + k)).astype(jnp.int64) * taps[k]
        return acc

    def w_pass(x_ref: Any, xi_ref: Any, m_ref: Any) -> None:
        tile, plane = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // a_cols) * ah, (tile % a_cols) * aw
        # Overhanging rows and columns repeat the last ones (their values, stored there again).
        y = jnp.minimum(y0 + jnp.arange(ah, dtype=jnp.int32), h - 1)[:, None]
        x = jnp.minimum(x0 + jnp.arange(aw, dtype=jnp.int32), w - 1)[None, :]
        row_at = plane * (h * w) + y * w
        acc = symmetric(lambda j: x_ref[row_at + xi_ref[j, pl.ds(x0, aw)][None, :]].astype(jnp.int32))
        plgpu.store(m_ref.at[row_at + x], ((acc + (1 << 7)) >> 8).astype(jnp.int32))

    def h_pass(m_ref: Any, yi_ref: Any, o_ref: Any) -> None:
        tile, plane = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // b_cols) * bh, (tile % b_cols) * bw
        x = jnp.minimum(x0 + jnp.arange(bw, dtype=jnp.int32), w - 1)[None, :]
        base = plane * (h * w)
        acc = symmetric(lambda j: m_ref[base + yi_ref[j, pl.ds(y0, bh)][:, None] * w + x])
        y = jnp.minimum(y0 + jnp.arange(bh, dtype=jnp.int32), h - 1)[:, None]
        plgpu.store(o_ref.at[base + y * w + x], ((acc + (1 << 23)) >> 24).astype(jnp.int32))

    first = _pass_call(w_pass, (a_rows * a_cols, planes), planes * h * w, jnp.int32, a_warps, interpret)
    second = _pass_call(h_pass, (b_rows * b_cols, planes), planes * h * w, jnp.int32, b_warps, interpret)

    def run(img: Any) -> Any:
        require_dtype(jnp.zeros((), jnp.int64), "int64", "spline_filter")  # JAX without x64: refuse (trace time)
        out = second(first(_to_planes(img, h, w, channels), jnp.asarray(x_index)), jnp.asarray(y_index))
        return _from_planes(out, lead, channels, (h, w), has_channels)

    return jit(run)
