"""Where does a JAX pipeline's GPU time go? Profiles jitted portcv calls with ``jax.profiler``
(a Perfetto trace: plain JSON, no TensorBoard needed) and sums the GPU kernels' time by name.

    python -m tools.measure jax-profile [--cases motion640,edges4k,...] [--repeat 10] [--top 8]

Per case: the wall time per call (synchronized), the GPU kernel time per call and its share of
the wall time, how long the call takes to return (the host's dispatch), and the kernels (XLA
fusions, named after their HLO) that take most of it. Run on the CUDA machine; on a CPU-only
machine JAX's CPU kernels are not in the trace (only the wall time is meaningful there).
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np

import portcv


def cases() -> dict[str, Callable[[], Callable[[], Any]]]:
    """Name -> a builder returning the call to profile (inputs already on the JAX device)."""
    from portcv import color, edges, filters, motion, transform

    def video(h: int, w: int, pairs: int) -> Any:
        two = color.rgb_to_gray(portcv.data.moving_shapes(2, h, w, seed=0))
        return portcv.asarray(two[np.arange(pairs + 1) % 2])

    def gray4k(batch: int = 1) -> Any:
        g = color.rgb_to_gray(portcv.data.synthetic_rgb(2160, 3840, seed=0))
        return portcv.asarray(np.stack([g] * batch) if batch > 1 else g)

    def motion_case(h: int, w: int, pairs: int) -> Callable[[], Callable[[], Any]]:
        def build() -> Callable[[], Any]:
            v = video(h, w, pairs)

            def run() -> Any:
                r = motion.detect_motion(v, t_low=70, t_high=80, beta=12, grid=(6, 10))
                return r.regions, motion.area_image(v[1:], r.regions)

            return run

        return build

    def one(fn: Callable[[Any], Any], make: Callable[[], Any]) -> Callable[[], Callable[[], Any]]:
        def build() -> Callable[[], Any]:
            x = make()
            return lambda: fn(x)

        return build

    def detect1080() -> Callable[[], Any]:
        from portcv.detect import CascadeDetector

        from tools.measurements.cascade_schedule import face_scene

        det = CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")
        g = portcv.asarray(face_scene("1920x1080"))
        return lambda: det.detect(g, scale_factor=1.1, min_neighbors=5, min_size=(30, 30))

    return {
        "motion640": motion_case(480, 640, 64),
        "motion4k": motion_case(2160, 3840, 8),
        "edges640x8": one(lambda x: edges.detect(x, 70, 80), lambda: video(480, 640, 7)),
        "edges4k": one(lambda x: edges.detect(x, 70, 80), lambda: video(2160, 3840, 0)),
        "gaussian4k_x8": one(lambda x: filters.gaussian_blur(x, ksize=5, sigma=1.2, channel_axis=None),
                             lambda: gray4k(8)),
        "sobel4k_x8": one(lambda x: filters.sobel(x, 1, 0, channel_axis=None), lambda: gray4k(8)),
        "mean4k_x8": one(lambda x: filters.mean_filter(x, 5, channel_axis=None), lambda: gray4k(8)),
        "median5_4k": one(lambda x: filters.median_filter(x, 5, channel_axis=None), lambda: gray4k(1)),
        "median5_4k_x8": one(lambda x: filters.median_filter(x, 5, channel_axis=None), lambda: gray4k(8)),
        "histogram4k_x8": one(lambda x: color.histogram(x, channel_axis=None), lambda: gray4k(8)),
        "binarize_otsu4k_x8": one(lambda x: color.binarize_auto(x, method="otsu"), lambda: gray4k(8)),
        "integral4k_x8": one(lambda x: transform.integral(x, channel_axis=None), lambda: gray4k(8)),
        "convolve5_4k_x8": one(lambda x: filters.convolve2d(x, np.ones((5, 5), np.int32), 0, channel_axis=None),
                               lambda: gray4k(8)),
        "detect1080": detect1080,
    }


def fusion_lines(dump_dir: str, seen: set[str]) -> dict[str, str]:
    """Fusion name -> its defining instruction in the optimized HLO dumped since ``seen`` (the
    case's own modules; the largest wins a name clash: that is the pipeline's program)."""
    lines: dict[str, str] = {}
    files = sorted(set(glob.glob(os.path.join(dump_dir, "*after_optimizations.txt"))) - seen, key=os.path.getsize)
    for path in files:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("%") and " fusion(" in line:
                    lines[line[1:].split(" ", 1)[0]] = line
    return lines


def gpu_kernel_events(trace_dir: str) -> list[tuple[str, float, float]]:
    """``(name, start us, duration us)`` of every GPU kernel in the ``jax.profiler`` trace in ``trace_dir``."""
    path = sorted(glob.glob(os.path.join(trace_dir, "**", "perfetto_trace.json.gz"), recursive=True))[-1]
    with gzip.open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {e["pid"]: e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    gpu = {pid for pid, name in names.items() if "gpu" in name.lower()}
    return [(e["name"], float(e["ts"]), float(e["dur"])) for e in events
            if e.get("ph") == "X" and e.get("pid") in gpu and "dur" in e]


def kernel_times(trace_dir: str) -> tuple[dict[str, float], int]:
    """GPU kernel time (us) by name over the trace, and the number of kernel events."""
    total: dict[str, float] = collections.defaultdict(float)
    events = gpu_kernel_events(trace_dir)
    for name, _, dur in events:
        total[name] += dur
    return total, len(events)


def main(argv: list[str] | None = None) -> int:
    import jax

    all_cases = cases()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(all_cases), help=f"from {', '.join(all_cases)}")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--hlo", action="store_true",
                    help="dump the optimized HLO and print each top kernel's instruction (its shape and operands)")
    args = ap.parse_args(argv)
    dump = tempfile.mkdtemp() if args.hlo else None
    if dump:  # before JAX starts its backend
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={dump} --xla_dump_hlo_as_text").strip()
    portcv.use("jax")
    print(f"JAX {jax.__version__} on {jax.devices()[0]}")
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        if name not in all_cases:
            ap.error(f"--cases: unknown case {name!r}")
        seen = set(glob.glob(os.path.join(dump, "*after_optimizations.txt"))) if dump else set()
        run = all_cases[name]()
        for _ in range(3):
            jax.block_until_ready(run())
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            jax.block_until_ready(run())
        wall_us = (time.perf_counter() - t0) / args.repeat * 1e6
        returns = []  # host time until the call returns (dispatch), each call then waited for
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = run()
            returns.append(time.perf_counter() - t0)
            jax.block_until_ready(out)
        dispatch_us = sorted(returns)[len(returns) // 2] * 1e6
        with tempfile.TemporaryDirectory() as d:
            jax.profiler.start_trace(d, create_perfetto_trace=True)
            for _ in range(args.repeat):
                jax.block_until_ready(run())
            jax.profiler.stop_trace()
            total, n = kernel_times(d)
        gpu_us = sum(total.values()) / args.repeat
        print(f"\n{name}: wall {wall_us:,.0f} us/call, GPU kernels {gpu_us:,.0f} us/call "
              f"({n / args.repeat:.0f} kernels/call, {100 * gpu_us / wall_us:.0f}% of wall), "
              f"the call returns after {dispatch_us:,.0f} us (median)")
        hlo = fusion_lines(dump, seen) if dump else {}
        for kname, us in sorted(total.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  {us / args.repeat:10,.1f} us  {kname[:110]}")
            if kname in hlo:
                print(f"                 {hlo[kname][:240]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
