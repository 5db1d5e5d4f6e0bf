"""JAX override of the B-spline zoom's interpolation (``spline_zoom``): on a GPU a Pallas (Triton)
kernel, elsewhere the portable version.

The portable interpolation gathers every tap of each pass as a whole array (8 gathers and their
products for a cubic zoom), 70 µs a QCIF frame x7 in a batch of 64 on an H200. Here a program
makes one tile of output samples: per output it gathers the 4 x 4 coefficients its taps read and
sums them with the portable version's integer weights (the W pass per source row, rounded where
the weights are, then the H pass), one rounding at the end: the same integer sums, so the same
bits. ``_zoom.py`` imports this module at its end, which registers the override.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import backend
from ..backends.jax import pallas_triton_usable, quiet_pallas_triton
from ._zoom import COEFFICIENT_BITS, spline_axis, spline_zoom_kernel

#: A program's output tile: rows x columns (powers of two, as Triton's blocks must be) and warps.
#: H200, µs a frame of the interpolation (QCIF x7 in a batch of 64 / 1080p x2 / one QCIF frame):
#: 8 x 32, 1 warp 14.3 / 110 / 102; 16 x 32, 2 warps 14.8 / 126 / 86; 16 x 64, 4 warps 15.5 /
#: 120-150 / 138-171; 16 x 128 and 32 x 128 18-20 / 184-221.
PALLAS_TILE = (8, 32, 1)


@spline_zoom_kernel.override("jax", supports="every input (on a GPU: a Pallas kernel)")
def _spline_zoom_jax(coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int) -> Any:
    params = dict(order=order, size=size, has_channels=has_channels, frac_bits=frac_bits)
    if not backend().runs_on_host and pallas_triton_usable():
        run = pallas_zoom(tuple(coef.shape), np.dtype(coef.dtype).name, **params)
        if run is not None:
            with quiet_pallas_triton():  # JAX lowers the kernel at the first call
                return run(coef)
    return spline_zoom_kernel.portable_for(backend())(coef, **params)


@functools.lru_cache(maxsize=None)
def pallas_zoom(shape: tuple, dtype: str, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int,
                interpret: bool = False) -> Any:
    """Jitted ``spline_zoom`` of ``(..., H, W[, C])`` samples of ``dtype`` by a Pallas kernel, or
    ``None`` where it does not apply (an empty input or output, a grid over 65,535 planes,
    offsets past int32).

    The wrapper makes the input planar (one plane per frame and channel) and the two axes'
    tables ``(taps, n_out)``, extended to whole tiles with the last output's entries; a program
    reads its columns' and rows' tables once, gathers each tap's coefficients from the plane and
    writes its uint8 results into the output.
    """
    import jax
    import jax.numpy as jnp

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    from ..backends.jax import jit

    h, w = shape[-3:-1] if has_channels else shape[-2:]
    channels = shape[-1] if has_channels else 1
    lead = shape[:-3] if has_channels else shape[:-2]
    planes = int(np.prod(lead, dtype=np.int64)) * channels
    dh, dw = size
    bh, bw, warps = PALLAS_TILE
    y_blocks, x_blocks = -(-dh // bh), -(-dw // bw)
    if min(planes, h, w, dh, dw) <= 0 or planes > 65535 or planes * max(h * w, dh * dw) > 2**31 - 1:
        return None
    tx, ty = spline_axis(order, w, dw), spline_axis(order, h, dh)
    taps = tx.index.shape[1]
    exact = tx.exact and ty.exact
    # The portable version's accumulator: int32 only for exact weights on pixels that cannot overflow it.
    narrow = exact and frac_bits == 0 and 255 * tx.total * ty.total + tx.total * ty.total // 2 < 2**31
    acc_type = jnp.int32 if narrow else jnp.int64
    if exact:
        divisor = (tx.total * ty.total) << frac_bits
    else:
        shift = COEFFICIENT_BITS - frac_bits
        divisor = ty.total << COEFFICIENT_BITS

    def table(axis: Any, blocks: int, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(taps, blocks * block) indices and weights; past the axis' end, the last output's."""
        last = np.minimum(np.arange(blocks * block), axis.index.shape[0] - 1)
        return np.ascontiguousarray(axis.index[last].T), np.ascontiguousarray(axis.weight[last].T)

    x_index, x_weight = table(tx, x_blocks, bw)
    y_index, y_weight = table(ty, y_blocks, bh)

    def program(c_ref: Any, xi_ref: Any, xw_ref: Any, yi_ref: Any, yw_ref: Any, o_ref: Any) -> None:
        tile, plane = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // x_blocks) * bh, (tile % x_blocks) * bw
        cols = [xi_ref[j, pl.ds(x0, bw)][None, :] for j in range(taps)]
        col_weights = [xw_ref[j, pl.ds(x0, bw)].astype(acc_type)[None, :] for j in range(taps)]
        base = plane * (h * w)
        acc = None
        for i in range(taps):
            row_at = base + yi_ref[i, pl.ds(y0, bh)][:, None] * w
            rows = None
            for j in range(taps):
                term = c_ref[row_at + cols[j]].astype(acc_type) * col_weights[j]
                rows = term if rows is None else rows + term
            if not exact:  # the first pass back to Q16, rounded half up
                rows = ((rows << shift) + tx.total // 2) // tx.total
            term = yw_ref[i, pl.ds(y0, bh)].astype(acc_type)[:, None] * rows
            acc = term if acc is None else acc + term
        if divisor > 1:
            acc = (acc + divisor // 2) // divisor
        # Straight into the uint8 output (no int32 copy to cut back): the tile's overhang computed
        # the last row's or column's values (its tables' entries), so it stores them there again.
        oy = jnp.minimum(y0 + jnp.arange(bh, dtype=jnp.int32), dh - 1)[:, None]
        ox = jnp.minimum(x0 + jnp.arange(bw, dtype=jnp.int32), dw - 1)[None, :]
        plgpu.store(o_ref.at[plane * (dh * dw) + oy * dw + ox], jnp.clip(acc, 0, 255).astype(jnp.uint8))

    call = pl.pallas_call(
        program, grid=(y_blocks * x_blocks, planes), interpret=interpret,
        out_shape=jax.ShapeDtypeStruct((planes * dh * dw,), jnp.uint8),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))

    def run(coef: Any) -> Any:
        x = jnp.reshape(coef, (-1, h, w, channels))
        x = jnp.reshape(jnp.moveaxis(x, -1, 1), (-1,))
        out = call(x, jnp.asarray(x_index), jnp.asarray(x_weight), jnp.asarray(y_index), jnp.asarray(y_weight))
        out = jnp.reshape(out, (-1, channels, dh, dw))
        if has_channels:
            return jnp.reshape(jnp.moveaxis(out, 1, -1), lead + (dh, dw, channels))
        return jnp.reshape(out, lead + (dh, dw))

    return jit(run)
