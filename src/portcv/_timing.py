"""How portcv measures time: the one definition used by asv, the ``portcv`` command line and tools/.

- **NumPy (host) wall time**: the median of synchronized calls after a warm-up
  (:func:`host_time_ms`, :func:`synced_s`, :func:`warm_then_synced_s`; ``wait`` makes a call
  synchronous on a device backend, ``Backend.block``).
- **GPU backends** are judged by the time per call of many back-to-back calls: CUDA events
  around them on CuPy (:func:`gpu_time_ms`), one wait at the end on JAX (:func:`jax_queue_ms`),
  either through :func:`queued_ms` or, for any backend, :func:`queued_s`. The latency of one
  call waited for on the host is reported beside it (:func:`synced_ms`); :func:`device_ms`
  gives the GPU's own time per call with the host's dispatch hidden, where a slow host hides
  what the kernels cost.
- **Per frame in batches**: one call on a stack of frames, its median time divided by the
  number of frames (:func:`per_frame_s`), so a GPU's batch and a host's single frame compare.

CuPy and JAX are imported inside the functions that need them: importing this module imports
neither. Every host clock reading goes through :data:`_clock` (a fake clock in the tests).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

#: The host clock every measurement here reads (seconds).
_clock: Callable[[], float] = time.perf_counter


def _no_wait(out: Any) -> Any:
    return out


def synced_s(call: Callable[[], Any], *, min_calls: int = 1, max_calls: int = 100,
             budget_s: float = 0.0) -> list[float]:
    """Seconds of each timed call of ``call`` (which must return only when its work is done):
    at least ``min_calls`` calls, more (up to ``max_calls``) while their sum is under ``budget_s``."""
    times: list[float] = []
    while len(times) < min_calls or (len(times) < max_calls and sum(times) < budget_s):
        t0 = _clock()
        call()
        times.append(_clock() - t0)
    return times


def warm_then_synced_s(fn: Callable[[], Any], wait: Callable[[Any], Any] = _no_wait, *, min_calls: int = 1,
                       max_calls: int = 100, budget_s: float = 0.0) -> tuple[float, list[float], Any]:
    """``(first call's seconds, seconds of each timed call, the last call's output)``: one call
    first (it includes JIT and kernel compilation, so it is reported apart), then the calls of
    :func:`synced_s`, each ``wait(fn())``."""
    t0 = _clock()
    out = wait(fn())
    first = _clock() - t0
    last = [out]

    def call() -> None:
        last[0] = wait(fn())

    times = synced_s(call, min_calls=min_calls, max_calls=max_calls, budget_s=budget_s)
    return first, times, last[0]


def queued_s(fn: Callable[[], Any], wait: Callable[[Any], Any] = _no_wait, *, calls: int,
             rounds: int = 5) -> float:
    """Seconds per call of ``calls`` back-to-back calls waited for once at the end (``wait`` on
    the last output), the median of ``rounds``: on a GPU the host queues the next call while the
    previous one's kernels run, so this is the larger of the host's dispatch and the GPU's work
    per call. The same quantity as :func:`gpu_time_ms`'s first value and :func:`jax_queue_ms`."""
    times: list[float] = []
    for _ in range(rounds):
        t0 = _clock()
        for _ in range(calls - 1):
            fn()
        wait(fn())
        times.append((_clock() - t0) / calls)
    return statistics.median(times)


def per_frame_s(fn: Callable[[], Any], frames: int, wait: Callable[[Any], Any] = _no_wait, *,
                min_calls: int = 3, max_calls: int = 100, budget_s: float = 0.5) -> float:
    """Median seconds of one synchronized call of ``fn`` on a batch of ``frames`` frames, per frame
    (``fn`` warmed up already)."""
    times = synced_s(lambda: wait(fn()), min_calls=min_calls, max_calls=max_calls, budget_s=budget_s)
    return statistics.median(times) / frames


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
        t0 = _clock()
        fn()
        stream.synchronize()
        latency.append((_clock() - t0) * 1e3)
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
    t0 = _clock()
    for _ in range(calls):
        fn()
    stream.synchronize()
    hz = cupy.cuda.Device().attributes["ClockRate"] * 1e3  # kHz
    return int(4 * (_clock() - t0) * hz) + 100_000


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
    the outputs of a batched convolve3d made JAX's allocator grow and the calls time several times
    slower than waited for one by one (figures: docs/benchmarks.md, "How GPU time is measured")."""
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    return queued_s(fn, jax.block_until_ready, calls=repeat, rounds=rounds) * 1e3


def queued_ms(backend_name, fn, repeat=20, warmup=3, rounds=3):
    """Time per call of ``repeat`` back-to-back calls on a GPU backend, the median of ``rounds``:
    :func:`gpu_time_ms` on CuPy, :func:`jax_queue_ms` on JAX (the same quantity)."""
    if backend_name == "cupy":
        return gpu_time_ms(fn, repeat=repeat, warmup=warmup, rounds=rounds)[0]
    return jax_queue_ms(fn, repeat=repeat, warmup=warmup, rounds=rounds)


def jax_time_ms(fn, repeat=100, warmup=5):
    """Median latency (ms) of one JAX call waited for on the host (``block_until_ready``), after
    ``warmup`` calls."""
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    times = synced_s(lambda: jax.block_until_ready(fn()), min_calls=repeat, max_calls=repeat)
    return statistics.median(times) * 1e3


def host_time_ms(fn, repeat=5):
    """Median wall time (ms) of ``repeat`` host calls after one warm-up call (NumPy, OpenCV)."""
    fn()
    return statistics.median(synced_s(fn, min_calls=repeat, max_calls=repeat)) * 1e3


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

    def call() -> None:
        fn()
        cupy.cuda.get_current_stream().synchronize()

    call()
    return statistics.median(synced_s(call, min_calls=n, max_calls=n)) * 1e3


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
        t0 = _clock()
        result = fn()
        if cupy_events:
            end.record()
            end.synchronize()
            gpus.append(cupy.cuda.get_elapsed_time(start, end))
        walls.append((_clock() - t0) * 1e3)
    return result, statistics.median(walls), (statistics.median(gpus) if gpus else None)


def interleaved_ms(fns: dict[str, Callable[[], Any]], rounds: int = 15, warmup: int = 1) -> dict[str, float]:
    """Median ms per call of each host function, timed in turn within every round (one process).

    On a machine shared with other work, interleaving spreads any slow spell over every side
    instead of one, so the ratios between sides stay meaningful even when the absolute times drift.
    Each round starts one side later than the one before: the side that follows a slow one (whose
    temporaries evicted the caches) is a different one each round, not always the same.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        shift = r % len(order)
        for name, fn in order[shift:] + order[:shift]:
            t0 = _clock()
            fn()
            times[name].append((_clock() - t0) * 1e3)
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
