"""JAX override of the joint bilateral kernel (``joint_bilateral``: ``filters.joint_bilateral`` and
``depth.dcbf``): on a GPU Pallas (Triton) kernels, elsewhere (the CPU, or no Pallas) one XLA loop
over the window's offsets (:func:`looped_bilateral`).

The portable version is a handful of whole-image operations per window offset (121 offsets for
Table 5's 11 x 11 window), each writing and reading its image through memory, and a gather of the
range table per offset (slow on a GPU: docs/benchmarks.md, "Figures behind the kernels'
choices"). Here a program keeps its
pixels' sums in registers and walks the offsets with the portable version's integer arithmetic,
in the same order, so the bits are the same: one tile of pixels (:func:`pallas_bilateral`), or,
where only the holes change (``dcbf(update="holes")``), a list of holes
(:func:`pallas_bilateral_holes`). Traced as it is, the portable version unrolls its offsets into
the program, whose compile time grows with the window; the XLA loop reads them from a table
instead. The packages that run the kernel (``portcv.filters``, ``portcv.depth``) import this module,
which registers the override.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._bilateral import WEIGHT_BITS, bilateral_kernel, bordered, offset_terms, weighted_mean
from ._border import pad_axis
from .backends import backend
from .backends.jax import quiet_pallas_triton

#: A program's tile: rows x columns (powers of two, as Triton's blocks must be) and its warps,
#: the fastest on Table 5's task in a GPU sweep (tiles 128 wide are much slower; the figures:
#: docs/benchmarks.md, "Figures behind the kernels' choices").
PALLAS_TILE = (8, 64, 4)
#: Holes per program of the hole fill (a power of two) and its warps: the fastest for DCBF of
#: Table 5's task (7 % holes) in a GPU sweep; more holes a program is slower (docs/benchmarks.md,
#: "Figures behind the kernels' choices").
HOLES_PER_PROGRAM, HOLE_WARPS = 32, 1


@bilateral_kernel.override("jax",
                           supports="every input (on a GPU: Pallas kernels, a tile of pixels or a list of holes)")
def _bilateral_jax(guide: Any, values: Any, table: Any, spatial: Any, *, offsets: tuple, radius: int,
                   guide_channels: bool, value_channels: bool, border: str, color_norm: str, hole: int | None,
                   keep_known: bool, wide: bool) -> Any:
    params = dict(offsets=offsets, radius=radius, guide_channels=guide_channels, value_channels=value_channels,
                  border=border, color_norm=color_norm, hole=hole, keep_known=keep_known, wide=wide)
    if backend().pallas_usable:
        build = pallas_bilateral_holes if keep_known and hole is not None else pallas_bilateral
        run = build(tuple(guide.shape), tuple(values.shape), np.dtype(values.dtype).name, **params)
        if run is not None:
            with quiet_pallas_triton():  # JAX lowers the kernel at the first call
                return run(guide, values, table, spatial)
    return looped_bilateral()(guide, values, table, spatial, **params)


@functools.cache
def looped_bilateral() -> Any:
    """The portable version's sums as one XLA loop over the window's offsets: jitted, every
    keyword static.

    The portable version unrolls one step per offset into the traced program, and XLA's compile
    time grows with that program (a 31 x 31 window, 961 offsets, did not compile in minutes on a
    CPU). Here the offsets are a table of ``(dy, dx)`` read by a ``fori_loop``, whose step slices
    the bordered guide and values at the offset (``dynamic_slice``) and adds that offset's
    :func:`~portcv.filters._bilateral.offset_terms`: the same integers in the same order, so the
    same bits, and a program whose size does not depend on the window.
    """
    from jax import lax

    from .backends.jax import jit

    def run(guide: Any, values: Any, table: Any, spatial: Any, *, offsets: tuple, radius: int,
            guide_channels: bool, value_channels: bool, border: str, color_norm: str, hole: int | None,
            keep_known: bool, wide: bool) -> Any:
        xp = backend().xp
        g, pg, pv = bordered(xp, guide, values, radius=radius, guide_channels=guide_channels,
                             value_channels=value_channels, border=border, hole=hole)
        acc_type = xp.int64 if wide else xp.int32
        shifts = xp.asarray(np.array(offsets, np.int32).reshape(-1, 2) + radius)

        def shifted(padded: Any, like: Any, channels: bool, dy: Any, dx: Any) -> Any:
            """``padded`` at ``like``'s shape, moved by ``(dy, dx)`` from the window's corner."""
            zero = xp.zeros((), xp.int32)
            starts = (zero,) * (like.ndim - (3 if channels else 2)) + (dy, dx) + ((zero,) if channels else ())
            return lax.dynamic_slice(padded, starts, like.shape)

        def step(k: Any, sums: tuple) -> tuple:
            num, den = sums
            dy, dx = shifts[k, 0], shifts[k, 1]
            w, term = offset_terms(xp, shifted(pg, g, guide_channels, dy, dx), g,
                                   shifted(pv, values, value_channels, dy, dx), table, spatial[k],
                                   guide_channels=guide_channels, value_channels=value_channels,
                                   color_norm=color_norm, hole=hole, acc_type=acc_type)
            return num + term, den + w

        plane = values.shape[:-1] if value_channels else values.shape
        num, den = lax.fori_loop(0, len(offsets), step,
                                 (xp.zeros(values.shape, acc_type), xp.zeros(plane, xp.int32)))
        return weighted_mean(xp, num, den, values, value_channels=value_channels, hole=hole, keep_known=keep_known,
                             acc_type=acc_type)

    return jit(run, static_argnames=("offsets", "radius", "guide_channels", "value_channels", "border",
                                     "color_norm", "hole", "keep_known", "wide"))


@functools.lru_cache(maxsize=None)
def pallas_bilateral(guide_shape: tuple, values_shape: tuple, values_dtype: str, *, offsets: tuple, radius: int,
                     guide_channels: bool, value_channels: bool, border: str, color_norm: str, hole: int | None,
                     keep_known: bool, wide: bool, interpret: bool = False) -> Any:
    """Jitted ``bilateral_kernel`` for these shapes and parameters by a Pallas (Triton) kernel, or
    ``None`` where it does not apply (holes with several value channels, an empty image, a grid
    over 65,535 frames).

    The wrapper makes planar int32 copies of the guide and the values (one plane per channel),
    extended by the border rule and then with zeros to whole tiles. A program computes one tile
    of one frame: per offset (a loop, in the window's order) it loads the shifted guide and value
    tiles, gathers ``Wr`` from the range table, and adds ``w`` and ``w v`` to sums held in
    registers (int32, or int64 where ``wide``); then the exact division, the holes and the kept
    values, as in the portable version.
    """
    import jax
    import jax.numpy as jnp

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    from .backends.jax import jit

    g_planes = guide_shape[-1] if guide_channels else 1
    v_planes = values_shape[-1] if value_channels else 1
    height, width = values_shape[-3:-1] if value_channels else values_shape[-2:]
    lead = values_shape[:-3] if value_channels else values_shape[:-2]
    frames = int(np.prod(lead, dtype=np.int64))
    bh, bw, warps = PALLAS_TILE
    y_blocks, x_blocks = -(-height // bh), -(-width // bw)
    if (hole is not None and value_channels) or min(frames, height, width) <= 0 or frames > 65535:
        return None
    rows, cols = y_blocks * bh + 2 * radius, x_blocks * bw + 2 * radius
    acc_type = jnp.int64 if wide else jnp.int32
    half = 1 << (WEIGHT_BITS - 1)
    taps = len(offsets)
    shifts = np.array([(dy + radius, dx + radius) for dy, dx in offsets], np.int32).reshape(-1)

    def program(g_ref: Any, v_ref: Any, table_ref: Any, shift_ref: Any, ws_ref: Any, o_ref: Any) -> None:
        tile, frame = pl.program_id(0), pl.program_id(1)
        y0, x0 = (tile // x_blocks) * bh, (tile % x_blocks) * bw

        def plane(ref: Any, c: int, dy: Any, dx: Any) -> Any:
            return ref[frame, c, pl.ds(y0 + dy, bh), pl.ds(x0 + dx, bw)]

        centre = [plane(g_ref, c, radius, radius) for c in range(g_planes)]

        def step(k: Any, sums: tuple) -> tuple:
            nums, den = sums
            dy, dx = shift_ref[2 * k], shift_ref[2 * k + 1]
            dist = None
            for c in range(g_planes):
                diff = plane(g_ref, c, dy, dx) - centre[c]
                d = jnp.abs(diff) if color_norm == "l1" else diff * diff
                dist = d if dist is None else dist + d
            w = (table_ref[dist] * ws_ref[k] + half) >> WEIGHT_BITS
            neighbours = [plane(v_ref, c, dy, dx) for c in range(v_planes)]
            if hole is not None:
                w = jnp.where(neighbours[0] != hole, w, 0)
            nums = tuple(n + w.astype(acc_type) * v.astype(acc_type) for n, v in zip(nums, neighbours))
            return nums, den + w

        zeros = jnp.zeros((bh, bw), acc_type)
        nums, den = jax.lax.fori_loop(0, taps, step, ((zeros,) * v_planes, jnp.zeros((bh, bw), jnp.int32)))
        den = den.astype(acc_type)
        safe = jnp.where(den > 0, den, 1)
        for c in range(v_planes):
            out = (nums[c] + den // 2) // safe
            if hole is not None:
                out = jnp.where(den > 0, out, hole)
                if keep_known:
                    known = plane(v_ref, c, radius, radius).astype(acc_type)
                    out = jnp.where(known != hole, known, out)
            o_ref[frame, c, pl.ds(y0, bh), pl.ds(x0, bw)] = out.astype(jnp.int32)

    call = pl.pallas_call(
        program, grid=(y_blocks * x_blocks, frames), interpret=interpret,
        out_shape=jax.ShapeDtypeStruct((frames, v_planes, y_blocks * bh, x_blocks * bw), jnp.int32),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))

    def planar(x: Any, fill: int) -> Any:
        """(..., H, W[, C]) -> (frames, C, rows, cols) int32: the border, then zeros to whole tiles."""
        xp = backend().xp
        x = jnp.moveaxis(jnp.reshape(x.astype(jnp.int32), (frames, height, width, -1)), -1, 1)
        x = pad_axis(xp, pad_axis(xp, x, -1, radius, radius, border, fill), -2, radius, radius, border, fill)
        return jnp.pad(x, ((0, 0), (0, 0), (0, rows - x.shape[-2]), (0, cols - x.shape[-1])))

    def run(guide: Any, values: Any, table: Any, spatial: Any) -> Any:
        out = call(planar(guide, 0), planar(values, 0 if hole is None else hole),
                   table, jnp.asarray(shifts), spatial)[:, :, :height, :width]
        out = jnp.moveaxis(out, 1, -1) if value_channels else out[:, 0]
        return jnp.reshape(out, values_shape).astype(values_dtype)

    return jit(run)


@functools.lru_cache(maxsize=None)
def pallas_bilateral_holes(guide_shape: tuple, values_shape: tuple, values_dtype: str, *, offsets: tuple,
                           radius: int, guide_channels: bool, value_channels: bool, border: str, color_norm: str,
                           hole: int | None, keep_known: bool, wide: bool, interpret: bool = False) -> Any:
    """Jitted ``bilateral_kernel`` with ``keep_known`` (``dcbf(update="holes")``) by a Pallas
    kernel that computes only the holes, or ``None`` where it does not apply (no holes to keep,
    several value channels, an empty image).

    Every known value is returned as it is, so only the holes need a window: XLA lists them
    (``nonzero``, in raster order, padded to a static length), and a program takes
    :data:`HOLES_PER_PROGRAM` of them, walks the offsets with gathered loads of the planar,
    bordered guide and values, and stores each hole's result into a copy of the values (aliased
    to the output). Programs past the last hole return at once. The arithmetic, and its order, is
    the portable version's.
    """
    import jax
    import jax.numpy as jnp

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    from .backends.jax import jit

    if not keep_known or hole is None or value_channels:
        return None
    g_planes = guide_shape[-1] if guide_channels else 1
    height, width = values_shape[-2:]
    frames = int(np.prod(values_shape[:-2], dtype=np.int64))
    pixels = frames * height * width
    if pixels <= 0 or pixels > 2**31 - 1 - HOLES_PER_PROGRAM:
        return None
    rows, cols = height + 2 * radius, width + 2 * radius
    if frames * g_planes * rows * cols > 2**31 - 1:  # int32 offsets into the bordered planes
        return None
    per, programs = HOLES_PER_PROGRAM, -(-pixels // HOLES_PER_PROGRAM)
    acc_type = jnp.int64 if wide else jnp.int32
    half = 1 << (WEIGHT_BITS - 1)
    taps = len(offsets)
    # Offsets into the bordered planes: dy * cols + dx from the window's top-left corner.
    shifts = np.array([(dy + radius) * cols + dx + radius for dy, dx in offsets], np.int32)

    def program(count_ref: Any, holes_ref: Any, g_ref: Any, v_ref: Any, table_ref: Any, shift_ref: Any,
                ws_ref: Any, out_in_ref: Any, o_ref: Any) -> None:
        first = pl.program_id(0) * per

        @pl.when(first < count_ref[0])
        def _() -> None:
            # Slots past the last hole take the program's first hole (there is one): they compute
            # its value and store it again, so no store needs a mask.
            slot = first + jnp.arange(per, dtype=jnp.int32)
            pixel = jnp.where(slot < count_ref[0], holes_ref[pl.ds(first, per)], holes_ref[first])
            frame, rest = pixel // (height * width), pixel % (height * width)
            corner = rest // width * cols + rest % width  # the window's top-left in a bordered plane
            centre_at = corner + (radius * cols + radius)
            g_base = [(frame * g_planes + c) * (rows * cols) for c in range(g_planes)]
            v_base = frame * (rows * cols)
            centre = [g_ref[g_base[c] + centre_at] for c in range(g_planes)]

            def step(k: Any, sums: tuple) -> tuple:
                num, den = sums
                at = corner + shift_ref[k]
                dist = None
                for c in range(g_planes):
                    diff = g_ref[g_base[c] + at] - centre[c]
                    d = jnp.abs(diff) if color_norm == "l1" else diff * diff
                    dist = d if dist is None else dist + d
                w = (table_ref[dist] * ws_ref[k] + half) >> WEIGHT_BITS
                neighbour = v_ref[v_base + at]
                w = jnp.where(neighbour != hole, w, 0)
                return num + w.astype(acc_type) * neighbour.astype(acc_type), den + w

            num, den = jax.lax.fori_loop(0, taps, step, (jnp.zeros((per,), acc_type), jnp.zeros((per,), jnp.int32)))
            den = den.astype(acc_type)
            out = jnp.where(den > 0, (num + den // 2) // jnp.where(den > 0, den, 1), hole)
            plgpu.store(o_ref.at[pixel], out.astype(jnp.int32))

    call = pl.pallas_call(
        program, grid=(programs,), interpret=interpret, input_output_aliases={7: 0},
        out_shape=jax.ShapeDtypeStruct((pixels,), jnp.int32),
        compiler_params=plgpu.CompilerParams(num_warps=HOLE_WARPS, num_stages=1))

    def planar(x: Any, fill: int) -> Any:
        """(..., H, W[, C]) -> flat (frames, C, rows, cols) int32, bordered."""
        xp = backend().xp
        x = jnp.moveaxis(jnp.reshape(x.astype(jnp.int32), (frames, height, width, -1)), -1, 1)
        x = pad_axis(xp, pad_axis(xp, x, -1, radius, radius, border, fill), -2, radius, radius, border, fill)
        return jnp.reshape(x, (-1,))

    def run(guide: Any, values: Any, table: Any, spatial: Any) -> Any:
        flat = jnp.reshape(values, (-1,)).astype(jnp.int32)
        is_hole = flat == hole
        (holes,) = jnp.nonzero(is_hole, size=programs * per, fill_value=0)
        count = jnp.sum(is_hole, dtype=jnp.int32)[None]
        out = call(count, holes.astype(jnp.int32), planar(guide, 0), planar(values, hole), table,
                   jnp.asarray(shifts), spatial, flat)
        return jnp.reshape(out, values_shape).astype(values_dtype)

    return jit(run)
