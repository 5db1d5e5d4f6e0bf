"""Where the latency of one call goes on CuPy (motion pair, encoded frame, 4K edge detector,
1080p cascade detection): per-step synchronized times, a host profile (cProfile, by own time)
and the GPU-only time of the same work replayed from a CUDA graph. Run on a CUDA machine:

    python -m tools.measure gpu-latency [--only motion,codec,edges,cascade]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import cupy
import numpy as np

import portcv
from portcv._timing import synced_ms
from portcv import codec, motion

portcv.use("cupy")




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


def motion_latency():
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


def codec_latency():
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


def edges_latency():
    from portcv import edges
    from portcv.edges._edges import detect_kernel

    gray = cupy.asarray(portcv.color.rgb_to_gray(portcv.data.synthetic_rgb(2160, 3840, seed=0)))
    blurred = edges._detect._low_pass(gray, 3, None, "reflect101")
    noop = cupy.RawKernel("extern \"C\" __global__ void noop(int n) {}", "noop")
    print("== edges.detect 3840x2160 (alpha 2, 3x3 binomial): synchronized ms per step")
    steps = {
        "detect (the public call)": lambda: edges.detect(gray, 70, 80),
        "low-pass alone": lambda: edges._detect._low_pass(gray, 3, None, "reflect101"),
        "detect_kernel alone (blurred input)": lambda: detect_kernel(blurred, blur_taps=(), low_sq=4900, high_sq=6400, alpha=2,
                                                     variant="pseudocode", border="reflect101"),
        "empty kernel launch": lambda: noop((1,), (32,), (np.int32(0),)),
        "cupy.empty 8 MB": lambda: cupy.empty(gray.shape, cupy.uint8),
        "synchronize only": lambda: None,
    }
    for name, fn in steps.items():
        print(f"  {name:40s} {synced_ms(fn, n=200):8.3f}  (graph: {graph_ms(fn)})")
    profile(lambda: edges.detect(gray, 70, 80), n=200)


def cascade_latency(backend="cupy"):
    from tools.measurements.cascade_schedule import face_scene

    from portcv.detect import CascadeDetector

    det = CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")
    with portcv.using(backend):
        gray = portcv.asarray(face_scene("1920x1080"))

    def detect():  # boxes come back as NumPy arrays: every call is synchronized
        with portcv.using(backend):
            return det.detect(gray, scale_factor=1.1, min_neighbors=5, min_size=(30, 30))

    def candidates():
        with portcv.using(backend):
            return det.detect(gray, scale_factor=1.1, min_neighbors=0, min_size=(30, 30))

    print(f"== CascadeDetector.detect on {backend}, 1920x1080 frontalface_default 1.1/5/30: synchronized ms")
    for name, fn in {"detect": detect, "candidates only (min_neighbors=0)": candidates}.items():
        print(f"  {name:40s} {synced_ms(fn, n=50):8.3f}")
    profile(detect, n=50, top=30)


SECTIONS = {"motion": motion_latency, "codec": codec_latency, "edges": edges_latency, "cascade": cascade_latency,
            "cascade_jax": lambda: cascade_latency("jax")}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections: " + ", ".join(SECTIONS))
    for name in ap.parse_args().only.split(","):
        SECTIONS[name]()
