"""JAX override of the direct 3-D convolution (``convolve3d_direct``): on a GPU a Pallas (Triton)
kernel (:func:`pallas_conv3d`) where the sums are exact in float32 and the program small
enough, elsewhere XLA's convolution. ``portcv.volume`` imports this module, which registers the
override."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..backends import backend
from ._convolve3d import (
    FFT_BOUND_LIMIT, _fft_error_bound, _float32_exact_for, _jax_conv, _taps_array,
    convolve3d_direct_kernel, convolve3d_fft_kernel, dtype_name, pad_video,
)


@convolve3d_direct_kernel.override(
    "jax", supports="max abs(video) * sum abs(kernel) < 2**24 (float32 convolution), else within the FFT bound (float64 FFT)")
def _convolve3d_direct_jax(video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                           time_mode: str) -> Any:
    # XLA has no integer convolution on the GPU, and the portable code (one slice per tap) makes
    # a program of k**3 operations: where float32 is exact, a Pallas kernel on a GPU (up to
    # k = 9) or XLA's float32 convolution, else the float64 FFT (same bits by its bound).
    padded = pad_video(backend().xp, video, shape[1:], border, border_value, time_mode)
    w4 = _taps_array(taps, shape)
    if _float32_exact_for(dtype_name(padded.dtype), taps, shape):
        if backend().pallas_usable:
            conv = pallas_conv3d(tuple(padded.shape), shape)
            if conv is not None:
                return conv(padded, w4.astype(np.float32))
        return _jax_conv()(padded, w4.astype(np.float32))
    if _fft_error_bound(padded.dtype, tuple(padded.shape), w4, "fft") < FFT_BOUND_LIMIT:
        return convolve3d_fft_kernel.portable_for(backend())(video, taps=taps, shape=shape, border=border,
                                                             border_value=border_value, time_mode=time_mode)
    return NotImplemented

#: Pallas convolution: a program makes `frames` output frames of a `rows` x `cols` tile (powers of
#: two, as Triton's blocks must be) with `warps` warps, chosen by the kernel's width: the first
#: entry whose kw bound is at least kw: the fastest of a GPU sweep of the article's clips in
#: batches (docs/benchmarks.md, "Figures behind the kernels' choices").
PALLAS_TILES = ((5, (4, 16, 128, 8)), (31, (4, 4, 128, 8)))


def pallas_tile(kw: int) -> tuple[int, int, int, int]:
    """``(frames, rows, cols, warps)`` of the Pallas program for kernels kw wide."""
    return next(tile for bound, tile in PALLAS_TILES if kw <= bound)

#: The program is unrolled over (frames + kt - 1) x kw shifted loads; its compile time grows
#: with them (6 s at k = 9, over a minute at k = 15), so larger kernels keep XLA's convolution.
PALLAS_MAX_LOADS = 108


@functools.lru_cache(maxsize=None)
def pallas_conv3d(shape: tuple, kernel_shape: tuple, interpret: bool = False) -> Any:
    """Jitted exact 3-D correlation of a padded volume ``(..., Tp, Hp, Wp)`` with float32 taps
    ``(F, kt, kh, kw)`` by a Pallas (Triton) kernel -> ``(..., F, T, H, W)`` int32, or ``None``
    where the grid would not fit (more than 65,535 programs on a grid axis) or the program would be
    too large (PALLAS_MAX_LOADS). Its caller checks :attr:`~portcv.backends.Backend.pallas_usable` first.

    XLA's float32 convolution of one channel (cuDNN) runs far below the GPU's multiply-add rate
    at small k. Here a program keeps a few output frames of one tile in registers (float32:
    the caller checked that every partial sum is an integer below 2**24, so every product and
    add is exact in any order) and walks the input frames they need: each shifted input tile,
    loaded once, feeds every output frame whose time tap reaches it (the CUDA kernel's
    streaming). Masked loads and stores keep the tiles that overhang the volume inside it, so
    the padded video is read as it is and the output written at its size, with no copies.
    """
    import jax
    import jax.numpy as jnp

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    from ..backends.jax import jit

    lead, (tp, hp, wp) = shape[:-3], shape[-3:]
    planes = math.prod(lead)
    f_count, kt, kh, kw = kernel_shape
    t_out, h, w = tp - kt + 1, hp - kh + 1, wp - kw + 1
    tf, bh, bw, warps = pallas_tile(kw)
    t_blocks, y_blocks, x_blocks = -(-t_out // tf), -(-h // bh), -(-w // bw)
    grid = (y_blocks * x_blocks, t_blocks, planes * f_count)
    if min(planes, t_out, h, w) <= 0 or max(grid[1:]) > 65535 or grid[0] > 2**31 - 1:
        return None
    if (tf + kt - 1) * kw > PALLAS_MAX_LOADS:
        return None
    # Where the tiles overhang the volume, masks keep loads and stores inside it (masked-out
    # samples read as 0 and feed only outputs that are not stored): no padded copy of the input,
    # no cut copy of the output. Each axis gets a mask only where its tiles overhang.
    rows_overhang, cols_overhang = y_blocks * bh + kh - 1 > hp, x_blocks * bw + kw - 1 > wp
    frames_overhang = t_blocks * tf > t_out

    def program(x_ref: Any, k_ref: Any, o_ref: Any) -> None:
        tile, tb, pf = pl.program_id(0), pl.program_id(1), pl.program_id(2)
        plane, f = pf // f_count, pf % f_count
        t0, y0, x0 = tb * tf, (tile // x_blocks) * bh, (tile % x_blocks) * bw
        rows = jnp.arange(bh)[:, None]
        cols = jnp.arange(bw)[None, :]

        def inside(y: Any, x: Any, y_size: int, x_size: int, rows_masked: bool, cols_masked: bool) -> Any:
            mask = None
            if rows_masked:
                mask = rows + y < y_size
            if cols_masked:
                col_mask = cols + x < x_size
                mask = col_mask if mask is None else mask & col_mask
            return mask

        def row_tap(n: Any, acc: tuple) -> tuple:
            acc = list(acc)
            # Row n's masks, one per column tap, the same for every input frame.
            masks = [inside(y0 + n, x0 + m, hp, wp, rows_overhang, cols_overhang) for m in range(kw)]
            for tt in range(tf + kt - 1):  # input frame t0 + tt
                frame = t0 + tt
                if frames_overhang:
                    frame = jnp.minimum(frame, tp - 1)  # frames past the end feed only uncut outputs
                for m, mask in enumerate(masks):
                    window = plgpu.load(x_ref.at[plane, frame, pl.ds(y0 + n, bh), pl.ds(x0 + m, bw)], mask=mask,
                                        other=0 if mask is not None else None).astype(jnp.float32)
                    for j in range(max(0, tt - kt + 1), min(tf, tt + 1)):  # output frames reaching it
                        acc[j] = acc[j] + k_ref[f, tt - j, n, m] * window
            return tuple(acc)

        zeros = tuple(jnp.zeros((bh, bw), jnp.float32) for _ in range(tf))
        acc = jax.lax.fori_loop(0, kh, row_tap, zeros)
        store_mask = inside(y0, x0, h, w, y_blocks * bh > h, x_blocks * bw > w)
        for j in range(tf):
            def store(j: int = j) -> None:
                plgpu.store(o_ref.at[plane, f, t0 + j, pl.ds(y0, bh), pl.ds(x0, bw)], acc[j].astype(jnp.int32),
                            mask=store_mask)
            if frames_overhang and j:
                pl.when(t0 + j < t_out)(store)
            else:
                store()

    call = pl.pallas_call(
        program, grid=grid, interpret=interpret,
        out_shape=jax.ShapeDtypeStruct((planes, f_count, t_out, h, w), jnp.int32),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))

    def run(padded: Any, taps: Any) -> Any:
        y = call(jnp.reshape(padded, (planes, tp, hp, wp)), jnp.asarray(taps, jnp.float32))
        return jnp.reshape(y, lead + (f_count, t_out, h, w))

    return jit(run)
