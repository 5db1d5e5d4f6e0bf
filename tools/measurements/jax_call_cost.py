"""Where does a synchronized JAX call's time go, beyond its GPU kernels? Run on the CUDA machine:

    python -m tools.measure jax-call-cost [--cases trivial640,trivial4k,edges4k,...] [--n 200]

For each case (inputs already on the device, compiled before timing), in microseconds, medians:
- ``block``: one call, then ``jax.block_until_ready`` (what asv and users time);
- ``spin``: one call, then polling ``Array.is_ready()`` until done (no OS wait);
- ``queue``: ``n`` calls back to back, waited for once, divided by ``n`` (the rate of a pipeline);
- ``return``: host time until the call returns (dispatch only);
- ``gpu``: GPU time of the case's kernels per call (``jax.profiler`` trace), and ``span``: first
  kernel start to last kernel end of one call (the kernels plus the gaps between them).
CuPy's figures for the same work (stream synchronize, which spins by default) are printed beside
them. Compare runs with different ``XLA_FLAGS`` by running the script once per setting.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np

import portcv


def _gray(h: int, w: int) -> np.ndarray:
    with portcv.using("numpy"):
        return portcv.to_numpy(portcv.color.rgb_to_gray(portcv.data.synthetic_rgb(h, w, seed=0)))


def cases() -> dict[str, tuple[Callable[[Any], Any], Callable[[], np.ndarray]]]:
    from portcv import color, edges, filters, transform

    g4k = lambda: _gray(2160, 3840)  # noqa: E731
    one = dict(channel_axis=None)
    return {
        "trivial640": (lambda x: x + 1, lambda: _gray(480, 640)),
        "trivial4k": (lambda x: x + 1, g4k),
        "rawjit640": (lambda x: _add_one_jit()(x), lambda: _gray(480, 640)),
        "rawjit4k": (lambda x: _add_one_jit()(x), g4k),
        "rgb_to_gray4k": (lambda x: color.rgb_to_gray(x), lambda: portcv.data.synthetic_rgb(2160, 3840, seed=0)),
        "edges4k": (lambda x: edges.detect(x, 70, 80), g4k),
        "gaussian4k": (lambda x: filters.gaussian_blur(x, ksize=5, sigma=1.2, **one), g4k),
        "box4k": (lambda x: filters.box_blur(x, 5, **one), g4k),
        "mean4k": (lambda x: filters.mean_filter(x, 5, **one), g4k),
        "sep4k": (lambda x: filters.sep_filter(x, [1, 2, 1], [1, 2, 1], 4, **one), g4k),
        "convolve5_4k": (lambda x: filters.convolve2d(x, np.ones((5, 5), np.int32), 0, **one), g4k),
        "sobel4k": (lambda x: filters.sobel(x, 1, 0, **one), g4k),
        "median5_4k": (lambda x: filters.median_filter(x, 5, **one), g4k),
        "histogram4k": (lambda x: color.histogram(x, **one), g4k),
        "otsu4k": (lambda x: color.binarize_auto(x, method="otsu"), g4k),
        "integral4k": (lambda x: transform.integral(x, **one), g4k),
    }


@functools.lru_cache(maxsize=None)
def _add_one_jit() -> Callable[[Any], Any]:
    """``x + 1`` under a bare ``jax.jit``: JAX's own floor, no portcv code in the call."""
    import jax

    return jax.jit(lambda x: x + 1)


def _median_us(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def _spin(out: Any) -> Any:
    import jax

    for leaf in jax.tree_util.tree_leaves(out):
        while not leaf.is_ready():
            pass
    return out


def gpu_span_us(trace_dir: str, calls: int) -> tuple[float, float]:
    """(GPU kernel time per call, median span of one call) from a ``jax.profiler`` trace of
    ``calls`` calls, each waited for (so calls are separated by idle gaps of the host)."""
    from tools.measurements.jax_profile import gpu_kernel_events

    kernels = sorted((ts, dur) for _, ts, dur in gpu_kernel_events(trace_dir))
    if not kernels:
        return float("nan"), float("nan")
    total = sum(d for _, d in kernels)
    # Split into calls at the largest gaps (each call is followed by a host wait).
    gaps = sorted(range(1, len(kernels)), key=lambda i: kernels[i][0] - (kernels[i - 1][0] + kernels[i - 1][1]))
    cuts = sorted(gaps[-(calls - 1):]) if calls > 1 else []
    spans, start = [], 0
    for cut in cuts + [len(kernels)]:
        group = kernels[start:cut]
        spans.append(max(t + d for t, d in group) - group[0][0])
        start = cut
    return total / calls, statistics.median(spans)


def jax_figures(fn: Callable[[Any], Any], x: Any, n: int) -> dict[str, float]:
    import jax

    with portcv.using("jax"):
        for _ in range(5):
            jax.block_until_ready(fn(x))
        block = _median_us(lambda: jax.block_until_ready(fn(x)), n)
        spin = _median_us(lambda: _spin(fn(x)), n)
        outs: list[Any] = []
        t0 = time.perf_counter()
        for _ in range(n):
            outs.append(fn(x))
        jax.block_until_ready(outs)
        queue = (time.perf_counter() - t0) / n * 1e6
        del outs
        returns = []
        for _ in range(n):
            t0 = time.perf_counter()
            out = fn(x)
            returns.append(time.perf_counter() - t0)
            jax.block_until_ready(out)
        calls = 20
        with tempfile.TemporaryDirectory() as d:
            jax.profiler.start_trace(d, create_perfetto_trace=True)
            for _ in range(calls):
                jax.block_until_ready(fn(x))
                time.sleep(0.002)  # a clear gap between calls in the trace
            jax.profiler.stop_trace()
            gpu, span = gpu_span_us(d, calls)
    return {"block": block, "spin": spin, "queue": queue, "return": statistics.median(returns) * 1e6,
            "gpu": gpu, "span": span}


def cupy_figures(fn: Callable[[Any], Any], x: Any, n: int) -> dict[str, float]:
    import cupy

    stream = cupy.cuda.get_current_stream()
    with portcv.using("cupy"):
        for _ in range(5):
            fn(x)
        stream.synchronize()

        def one() -> None:
            fn(x)
            stream.synchronize()

        block = _median_us(one, n)
        t0 = time.perf_counter()
        for _ in range(n):
            fn(x)
        stream.synchronize()
        queue = (time.perf_counter() - t0) / n * 1e6
    return {"block": block, "queue": queue}


def main(argv: list[str] | None = None) -> int:
    import jax

    all_cases = cases()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(all_cases), help=f"from {', '.join(all_cases)}")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile of n synchronized JAX calls per case (top by own time)")
    args = ap.parse_args(argv)
    print(f"JAX {jax.__version__} on {jax.devices()[0]}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    have_cupy = not args.no_cupy and "cupy" in portcv.available_backends()
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        if name not in all_cases:
            ap.error(f"--cases: unknown case {name!r}")
        fn, make = all_cases[name]
        host = make()
        with portcv.using("jax"):
            xj = portcv.asarray(host)
        j = jax_figures(fn, xj, args.n)
        line = "  ".join(f"{k} {v:8.1f}" for k, v in j.items())
        print(f"{name:12s} jax   {line}")
        if args.profile:
            import cProfile
            import pstats

            with portcv.using("jax"):
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(args.n):
                    jax.block_until_ready(fn(xj))
                pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(14)
        if have_cupy and not name.startswith("rawjit"):
            with portcv.using("cupy"):
                xc = portcv.asarray(host)
            c = cupy_figures(fn, xc, args.n)
            print(f"{name:12s} cupy  " + "  ".join(f"{k} {v:8.1f}" for k, v in c.items()))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
