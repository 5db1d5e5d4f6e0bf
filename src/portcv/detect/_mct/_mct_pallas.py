"""JAX override of the MCT detector's stage segment (``mct_segment_alive``) on a GPU: a Pallas
(Triton) kernel. ``_mct.py`` holds the portable version (the reference); importing this module
(``portcv.detect`` does) registers the override.

Under XLA the portable segment is a whole-array gather of codes, a gather of LUT entries and a
sum per chunk of cascade positions, over every slot of the plan whatever the count: the long
last stage ran over every survivor of the first. Here a program takes a block of plan slots and
runs the segment's stages in turn, a loop over each stage's positions (one code and one int16
LUT entry gathered per window and position, an exact int32 sum), and skips a stage once none of
its windows is alive, and the whole block past the plan's count. So the plan can keep its full
length, with no count read on the host between segments (``_detector.whole_plan_scan``).
"""

from __future__ import annotations

import functools
from typing import Any

from ...backends import backend
from ...backends.jax import quiet_pallas_triton
from ._cascade_file import LUT_WIDTH
from ._mct import segment_alive_kernel

#: Plan slots per program, its warps, and cascade positions per step of a stage's loop.
SEGMENT_BLOCK, SEGMENT_WARPS, SEGMENT_UNROLL = 256, 8, 4


@segment_alive_kernel.override("jax", supports="every input (on a GPU: a Pallas kernel)")
def _segment_alive_jax(codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any,
                       thresholds: Any, *, stages: tuple) -> Any:
    args = (codes, offsets, plan, count, position_offsets, lut, thresholds)
    if backend().pallas_usable and int(plan.shape[0]) > 0:
        with quiet_pallas_triton():
            return pallas_segment(int(plan.shape[0]), stages)(*args)
    return segment_alive_kernel.portable_for(backend())(*args, stages=stages)


@functools.lru_cache(maxsize=64)
def pallas_segment(n: int, stages: tuple, *, block: int = SEGMENT_BLOCK, warps: int = SEGMENT_WARPS,
                   unroll: int = SEGMENT_UNROLL, interpret: bool = False) -> Any:
    """``segment_alive_kernel`` for a plan of ``n`` slots as a function of its array arguments:
    one Pallas program per ``block`` slots (the output is cut back to ``n``), ``unroll``
    positions a loop step."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    programs = -(-n // block)

    def program(count_ref: Any, plan_ref: Any, offsets_ref: Any, codes_ref: Any, positions_ref: Any, lut_ref: Any,
                thresholds_ref: Any, out_ref: Any) -> None:
        first = pl.program_id(0) * block
        slot = first + jnp.arange(block, dtype=jnp.int32)
        count = count_ref[0]
        none = jnp.zeros(block, jnp.int32)

        def scan() -> Any:
            # Slots past the count hold some window (zeros): computed and then masked out.
            where = offsets_ref[plan_ref[jnp.minimum(slot, n - 1)]]
            alive = slot < count

            def add(k: Any, total: Any) -> Any:  # position k's LUT entry (k static or traced)
                code = codes_ref[where + positions_ref[k]].astype(jnp.int32)
                return total + lut_ref[k * LUT_WIDTH + code].astype(jnp.int32)

            for j, (begin, end) in stages:
                def stage(begin: int = begin, end: int = end) -> Any:
                    steps = (end - begin) // unroll

                    def step(i: Any, total: Any) -> Any:
                        # `unroll` positions a step: their gathers are independent, so they overlap.
                        for u in range(unroll):
                            total = add(begin + i * unroll + u, total)
                        return total

                    total = lax.fori_loop(0, steps, step, none)
                    for k in range(begin + steps * unroll, end):  # the rest
                        total = add(k, total)
                    return total

                # |sum| < 2**24: exact in int32, in any order.
                total = lax.cond(jnp.max(alive.astype(jnp.int32)) > 0, stage, lambda: none)
                alive = alive & (total <= thresholds_ref[j])
            return alive.astype(jnp.int32)

        out_ref[pl.ds(first, block)] = lax.cond(first < count, scan, lambda: none)

    call = pl.pallas_call(
        program, grid=(programs,), interpret=interpret,
        out_shape=jax.ShapeDtypeStruct((programs * block,), jnp.int32),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))

    def run(codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any, thresholds: Any) -> Any:
        as_type = lambda a, dt: jnp.asarray(a).astype(dt)  # noqa: E731
        out = call(jnp.reshape(as_type(count, jnp.int32), (1,)), as_type(plan, jnp.int32),
                   as_type(offsets, jnp.int32), as_type(codes, jnp.uint16), as_type(position_offsets, jnp.int32),
                   as_type(lut, jnp.int16), as_type(thresholds, jnp.int32))
        return out[:n]

    return run
