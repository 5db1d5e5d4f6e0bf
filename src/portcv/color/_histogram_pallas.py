"""JAX override of the histogram kernel (``histogram``): on a GPU one-hot products on the tensor
cores in a Pallas (Triton) kernel (:func:`pallas_histogram`); elsewhere an integer scatter-add, or
on the CPU the NumPy version through a host callback. ``portcv.color`` imports this module,
which registers the override."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..backends import backend
from ..backends.jax import jit, quiet_pallas_triton
from ._histogram import _histogram_jax_compiled, _shape_parts, histogram_kernel


#: Pallas histogram: pixels per step of a program's loop (one 16 x 16 x 1024 integer MMA), and at
#: most this many steps per program (its counts stay at most 2^13). Chosen by measurement against
#: 256-2048 pixels, 4-32 steps and 4 or 8 warps (docs/benchmarks.md).
_PALLAS_STEP = 1024


_PALLAS_MAX_STEPS = 8


@functools.lru_cache(maxsize=None)
def pallas_histogram(shape: tuple, bins: int, has_channels: bool, interpret: bool = False) -> Any:
    """Jitted counts (int64) of one-channel uint8 images of ``shape`` by a Pallas (Triton) kernel,
    or ``None`` where it does not apply (several channels, empty or too many frames).

    A GPU scatter-add of every pixel costs one global atomic per pixel. Here a program counts
    1024 pixels per step as a matrix product: with
    ``H[p, i] = (value_p >> 4 == i)`` and ``L[p, j] = (value_p & 15 == j)`` (int8 one-hots built
    in registers), ``(H^T L)[i, j]`` is the number of pixels of value ``16 i + j``: an exact
    integer MMA (int32 accumulator) on the tensor cores. Programs write their 16 x 16 counts; one
    sum over programs follows, and bins below 256 sum 256 / bins adjacent counts.

    Each operand loads the step's pixels already broadcast to its own shape (``H^T`` as 16 x 1024,
    ``L`` as 1024 x 16, by index arrays) rather than broadcasting one loaded vector: Triton then
    builds the one-hots in the MMA operands' register layouts instead of passing them through
    shared memory, which is faster (``docs/benchmarks.md``).
    """
    lead, pixels, channels = _shape_parts(shape, has_channels)
    frames = math.prod(lead)
    chunks = -(-pixels // _PALLAS_STEP)
    steps = max(d for d in range(1, _PALLAS_MAX_STEPS + 1) if chunks % d == 0) if chunks else 0
    programs = chunks // steps if steps else 0
    if channels != 1 or not 0 < frames <= 65535 or not 0 < programs <= 65535:
        return None
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    step = _PALLAS_STEP
    padded = programs * steps * step

    def kernel(x_ref: Any, out_ref: Any) -> None:
        frame, program = pl.program_id(0), pl.program_id(1)
        start = program * (steps * step)
        lanes = jnp.arange(16, dtype=jnp.int32)
        pixel = jnp.arange(step, dtype=jnp.int32)
        # Pixel offsets broadcast to each operand's shape: (16, step) for H^T, (step, 16) for L.
        offsets_t = pixel[None, :] + 0 * lanes[:, None]
        offsets = pixel[:, None] + 0 * lanes[None, :]

        def body(i: Any, acc: Any) -> Any:
            first = start + i * step
            values_t = x_ref[frame, first + offsets_t].astype(jnp.int32)
            values = x_ref[frame, first + offsets].astype(jnp.int32)
            high_t = (values_t >> 4 == lanes[:, None]).astype(jnp.int8)
            low = (values & 15 == lanes[None, :]).astype(jnp.int8)
            return acc + plgpu.dot(high_t, low)  # int8 x int8 -> int32, exact

        out_ref[frame, program] = jax.lax.fori_loop(0, steps, body, jnp.zeros((16, 16), jnp.int32))

    count = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((frames, programs, 16, 16), jnp.int32),
                           grid=(frames, programs), interpret=interpret,
                           compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1))

    def run(img: Any) -> Any:
        x = jnp.reshape(img, (frames, pixels))
        if padded != pixels:  # zeros to whole steps, taken off bin 0 below
            x = jnp.pad(x, ((0, 0), (0, padded - pixels)))
        counts = jnp.reshape(jnp.sum(count(x), axis=1, dtype=jnp.int64), (frames, 256))
        if padded != pixels:
            counts = counts.at[:, 0].add(-(padded - pixels))
        if bins < 256:  # bin = value >> shift: 256 / bins adjacent values per bin
            counts = jnp.sum(jnp.reshape(counts, (frames, bins, 256 // bins)), axis=-1)
        return jnp.reshape(counts, lead + ((1, bins) if has_channels else (bins,)))

    return jit(run)


@histogram_kernel.override("jax")
def _histogram_jax(img: Any, *, bins: int, has_channels: bool) -> Any:
    if backend().runs_on_host and img.dtype == np.uint8:
        # XLA:CPU's scatter-add is serial (4.4 ms for a 1080p frame, 6.9x OpenCV); NumPy's
        # counts take 2 ms on the same host memory.
        from ..backends.jax import host_call

        return host_call(histogram_kernel, img, bins=bins, has_channels=has_channels)

    # On a GPU: one-hot products on the tensor cores (pallas_histogram). Elsewhere, and for
    # several channels, a scatter-add: XLA's CPU sort takes ~1 s for a 4K frame (see run()).
    if backend().pallas_usable:
        counted = pallas_histogram(tuple(img.shape), bins, has_channels)
        if counted is not None:
            with quiet_pallas_triton():  # JAX lowers the kernel at the first call
                return counted(img)
    return _histogram_jax_compiled(bins, has_channels)(img)
