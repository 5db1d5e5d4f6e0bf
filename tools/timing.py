"""Timing helpers shared by every tool in tools/: CUDA events, synchronized latency, JAX back-to-back.

One place for how portcv measures (docs/benchmarks.md): GPU backends are judged by the time per
call of many back-to-back calls (CUDA events on CuPy, one wait at the end on JAX), with the
latency of one call waited for on the host reported beside it. :func:`device_ms` adds the GPU's
own time per call, host dispatch hidden, where a slow host hides what the kernels cost.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def gpu_time_ms(fn, repeat=200, warmup=10, rounds=5):
    """Time per call of ``repeat`` back-to-back calls between two CUDA events (the median of
    ``rounds``): what a pipeline of such calls sustains, host launch cost included, no host sync
    per call. Also the latency of one call waited for on the host."""
    import cupy

    for _ in range(warmup):
        fn()
    stream = cupy.cuda.get_current_stream()
    stream.synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    per_call = []
    for _ in range(rounds):
        start.record()
        for _ in range(repeat):
            fn()
        stop.record()
        stop.synchronize()
        per_call.append(cupy.cuda.get_elapsed_time(start, stop) / repeat)
    latency = []
    for _ in range(20):
        t0 = time.perf_counter()
        fn()
        stream.synchronize()
        latency.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(per_call), statistics.median(latency)


_SPIN = r"""
extern "C" __global__ void portcv_timing_spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"""


def _spin_cycles(fn, calls):
    """GPU clock cycles a spin must last for the host to queue ``calls`` calls of ``fn`` behind
    it: four times as long as ``calls`` synchronized calls took."""
    import cupy

    fn()
    stream = cupy.cuda.get_current_stream()
    stream.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    stream.synchronize()
    hz = cupy.cuda.Device().attributes["ClockRate"] * 1e3  # kHz
    return int(4 * (time.perf_counter() - t0) * hz) + 100_000


def _behind_spin(fn, calls, cycles):
    """``calls`` calls of ``fn`` queued behind one GPU thread spinning ``cycles``: the CUDA events
    just before and after them, or ``None`` if the spin ended before the last call was queued
    (gaps crept in)."""
    import cupy

    spin = cupy.RawKernel(_SPIN, "portcv_timing_spin")
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    spin((1,), (1,), (cupy.int64(cycles),))
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    if start.done:
        cupy.cuda.get_current_stream().synchronize()
        return None
    stop.synchronize()
    return start, stop


def device_ms(fn, calls=50, rounds=3):
    """GPU time per call with the host's dispatch hidden (CuPy): one thread spins on the GPU while
    the host queues ``calls`` calls behind it, so the CUDA events around them time the calls'
    kernels back to back, without the gaps a slower host leaves between them. The median of
    ``rounds``; ``None`` if the host could not queue the calls within a spin four times as long
    as ``calls`` synchronized calls took (a call that waits for the GPU, for one)."""
    import cupy

    cycles = _spin_cycles(fn, calls)
    times = []
    for _ in range(rounds):
        events = _behind_spin(fn, calls, cycles)
        if events is None:
            return None
        times.append(cupy.cuda.get_elapsed_time(*events) / calls)
    return statistics.median(times)


def jax_queue_ms(fn, repeat=100, warmup=5, rounds=5):
    """Time per call of ``repeat`` back-to-back calls, waited for once at the end (JAX dispatches
    asynchronously): the same quantity as :func:`gpu_time_ms`'s first value, so CuPy and JAX
    compare like with like. The median of ``rounds``. Only the last call's output is kept (one
    device runs the calls in order; not so for outputs spread over several devices): holding
    all 20 outputs of a batched convolve3d (103 MB each) made JAX's allocator grow, and the calls
    timed 337.5 µs a clip against 67.7 waited for one by one (H200)."""
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    per_call = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = None
        for _ in range(repeat):
            out = fn()
        jax.block_until_ready(out)
        per_call.append((time.perf_counter() - t0) * 1e3 / repeat)
    return statistics.median(per_call)


def queued_ms(backend_name, fn, repeat=20, warmup=3, rounds=3):
    """Time per call of ``repeat`` back-to-back calls on a GPU backend, the median of ``rounds``:
    :func:`gpu_time_ms` on CuPy, :func:`jax_queue_ms` on JAX (the same quantity)."""
    if backend_name == "cupy":
        return gpu_time_ms(fn, repeat=repeat, warmup=warmup, rounds=rounds)[0]
    return jax_queue_ms(fn, repeat=repeat, warmup=warmup, rounds=rounds)


def jax_time_ms(fn, repeat=100, warmup=5):
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def host_time_ms(fn, repeat=5):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def copy_bandwidth_gbs():
    """Device-to-device copy of 1 GiB: (bytes read + bytes written) / time."""
    import cupy

    a = cupy.ones(1 << 30, dtype=cupy.uint8)
    b = cupy.empty_like(a)
    ms, _ = gpu_time_ms(lambda: cupy.copyto(b, a), repeat=20, warmup=3)
    return 2 * a.nbytes / (ms * 1e-3) / 1e9


def synced_ms(fn: Callable[[], Any], n: int = 50) -> float:
    """Median latency of one CuPy call waited for on the host (ms), after one warm-up call."""
    import cupy

    fn()
    cupy.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        cupy.cuda.get_current_stream().synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def timed(fn: Callable[[], Any], repeat: int, cupy_events: bool) -> tuple[Any, float, float | None]:
    """``(result, median wall ms, median GPU ms or None)`` over ``repeat`` runs after a warm-up.
    ``fn`` returns host data, so it has synchronized when it returns."""
    result = fn()
    walls, gpus = [], []
    for _ in range(repeat):
        if cupy_events:
            import cupy

            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
        t0 = time.perf_counter()
        result = fn()
        if cupy_events:
            end.record()
            end.synchronize()
            gpus.append(cupy.cuda.get_elapsed_time(start, end))
        walls.append((time.perf_counter() - t0) * 1e3)
    return result, statistics.median(walls), (statistics.median(gpus) if gpus else None)


def interleaved_ms(fns: dict[str, Callable[[], Any]], rounds: int = 15, warmup: int = 1) -> dict[str, float]:
    """Median ms per call of each host function, timed in turn within every round (one process).

    On a machine shared with other work, interleaving spreads any slow spell over every side
    instead of one, so the ratios between sides stay meaningful even when the absolute times drift.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def kernel_split_ms(fn, calls=20):
    """Where a CuPy call's GPU time goes, per portcv kernel: CUDA events around every launch made
    through ``portcv.backends.cupy.cuda_function``, with the host's dispatch hidden as in
    :func:`device_ms` (a spinning thread holds the GPU while the calls are queued). Returns
    ``{kernel: ms per call}`` plus ``"(total)"``; ``"(other)"`` is the rest (CuPy's own kernels,
    memsets, gaps). ``None`` if the host could not queue the calls behind the spin."""
    import cupy

    import portcv.backends.cupy as pc

    launches = []
    original = pc.cuda_function

    def timed(module, name_expression):
        kernel = original(module, name_expression)

        def launch(*args, **kwargs):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            kernel(*args, **kwargs)
            stop.record()
            launches.append((name_expression.split("<")[0], start, stop))
        return launch

    pc.cuda_function = timed
    try:
        cycles = _spin_cycles(fn, calls)
        launches.clear()
        events = _behind_spin(fn, calls, cycles)
    finally:
        pc.cuda_function = original
    if events is None:
        return None
    start, stop = events
    split = {"(total)": cupy.cuda.get_elapsed_time(start, stop) / calls}
    for name, a, b in launches:
        split[name] = split.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b) / calls
    split["(other)"] = split["(total)"] - sum(v for k, v in split.items() if k != "(total)")
    return split
