"""Where the latency of one motion pair and one encoded frame goes on CuPy: per-step synchronized
times, a host profile (cProfile, by own time) and the GPU-only time of the same work replayed
from a CUDA graph. Run on a CUDA machine: python tools/gpu_latency.py"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import cupy
import numpy as np

import portcv
from portcv import codec, motion

portcv.use("cupy")


def synced_ms(fn, n=50):
    fn()
    cupy.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        cupy.cuda.get_current_stream().synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def graph_ms(fn, n=20):
    """GPU time of ``fn`` captured into a CUDA graph (no host launch cost), or None if it cannot be captured."""
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(3):
            fn()
        stream.synchronize()
        try:
            stream.begin_capture()
            for _ in range(n):
                fn()
            graph = stream.end_capture()
        except Exception as exc:  # noqa: BLE001 - report why, keep going
            try:
                stream.end_capture()
            except Exception:  # noqa: BLE001
                pass
            print("  graph capture failed:", type(exc).__name__, exc)
            return None
        graph.launch(stream)
        stream.synchronize()
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        s.record(stream)
        graph.launch(stream)
        e.record(stream)
        e.synchronize()
        return cupy.cuda.get_elapsed_time(s, e) / n


def profile(fn, n=50, top=18):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        fn()
    cupy.cuda.get_current_stream().synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


for h, w in ((480, 640), (2160, 3840)):
    gray = portcv.color.rgb_to_gray(portcv.data.moving_shapes(2, h, w, seed=0))
    frames = [cupy.asarray(f) for f in gray]
    det = motion.MotionDetector(t_low=70, t_high=80, beta=12, grid=(6, 10))
    det.update(frames[0])
    state = {"i": 0}

    def update():
        state["i"] += 1
        frame = frames[state["i"] % 2]
        r = det.update(frame)
        motion.area_image(frame, r.regions)
        return r

    e1, e2 = det.edges(frames[0]), det.edges(frames[1])
    d = motion.difference(e1, e2, beta=12)
    counts = motion.density(d, grid=(6, 10))
    cells = motion.regions(counts, shape=(h, w), gamma=0.01)
    print(f"== motion pair {w}x{h}: synchronized ms per step")
    steps = {
        "edges (one frame)": lambda: det.edges(frames[1]),
        "difference": lambda: motion.difference(e1, e2, beta=12),
        "density": lambda: motion.density(d, grid=(6, 10)),
        "regions": lambda: motion.regions(counts, shape=(h, w), gamma=0.01),
        "area_image": lambda: motion.area_image(frames[1], cells),
        "update + area_image": update,
        "update + area_image + regions to host": lambda: update().regions.get(),
    }
    for name, fn in steps.items():
        print(f"  {name:40s} {synced_ms(fn):8.3f}  (graph: {graph_ms(fn)})")
    if h == 480:
        profile(update)

frames = portcv.data.moving_shapes(2, 1080, 1920, seed=1)
enc = codec.DeltaEncoder(threshold=20)
enc.keyframe(frames[0])
f = [cupy.asarray(x) for x in frames]
state = {"i": 0}


def encode():
    state["i"] += 1
    return enc.encode(f[state["i"] % 2])


print("== delta_encode 1920x1080x3")
print(f"  encode synchronized {synced_ms(encode):.3f} ms; graph (GPU only) {graph_ms(encode)} ms")
print(f"  encode_host synchronized {synced_ms(lambda: enc.encode_host(f[0])):.3f} ms")
profile(encode)
