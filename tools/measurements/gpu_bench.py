"""GPU figures for the notes and docs: kernel times by CUDA events, achieved GB/s against the
device's measured copy bandwidth, and the peers (cupyx.scipy.ndimage, OpenCV on the host).

Run on a CUDA machine (tools/gpu_check.sh does): python -m tools.measure gpu-bench [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np

import portcv
from portcv._timing import (
    copy_bandwidth_gbs,
    gpu_time_ms,
    host_time_ms,
    jax_queue_ms,
    jax_time_ms,
)

# Ops whose NumPy/JAX versions take many seconds at 4K: timed on the GPU backends only.
GPU_ONLY = {"median_filter k15"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", choices=["kernels", "pipelines"], default=None,
                        help="time only the per-kernel table or only the video pipelines")
    args = parser.parse_args()
    import cupy
    import cupyx.scipy.ndimage as cndi

    results = {"device": portcv.backends.get("cupy").device, "copy_GBps": copy_bandwidth_gbs(), "ops": []}
    print(f"device: {results['device']}; measured copy bandwidth {results['copy_GBps']:.0f} GB/s (read+write)")
    try:
        import cv2
    except ImportError:
        cv2 = None

    sizes = {"640x480": (480, 640), "1920x1080": (1080, 1920), "3840x2160": (2160, 3840)}
    if args.only == "pipelines":
        sizes = {}
    for label, (h, w) in sizes.items():
        rgb_host = portcv.data.synthetic_rgb(h, w, seed=0)
        gray_host = portcv.color.rgb_to_gray(rgb_host)
        ops = {
            "rgb_to_gray": (lambda x: portcv.color.rgb_to_gray(x), rgb_host, h * w * 4,
                            (lambda: cv2.cvtColor(rgb_host, cv2.COLOR_RGB2GRAY)) if cv2 else None, None),
            "gaussian_blur k5": (lambda x: portcv.filters.gaussian_blur(x, ksize=5, sigma=1.2, channel_axis=None), gray_host, h * w * 2,
                                 (lambda: cv2.GaussianBlur(gray_host, (5, 5), 1.2)) if cv2 else None,
                                 lambda x: cndi.gaussian_filter(x, 1.2, mode="mirror", truncate=2 / 1.2)),
            "gaussian_blur k15": (lambda x: portcv.filters.gaussian_blur(x, ksize=15, sigma=3.0, channel_axis=None), gray_host, h * w * 2,
                                  (lambda: cv2.GaussianBlur(gray_host, (15, 15), 3.0)) if cv2 else None, None),
            "box_blur k5": (lambda x: portcv.filters.box_blur(x, 5, channel_axis=None), gray_host, h * w * 2,
                            (lambda: cv2.blur(gray_host, (5, 5))) if cv2 else None,
                            lambda x: cndi.uniform_filter(x, 5, mode="mirror")),
            "gaussian_blur k5 rgb": (lambda x: portcv.filters.gaussian_blur(x, ksize=5, sigma=1.2, channel_axis=-1), rgb_host, h * w * 6,
                                     (lambda: cv2.GaussianBlur(rgb_host, (5, 5), 1.2)) if cv2 else None, None),
        }
        F, C, T = portcv.filters, portcv.color, portcv.transform
        ops.update({
            "median_filter k5": (lambda x: F.median_filter(x, 5, channel_axis=None), gray_host, h * w * 2,
                                 (lambda: cv2.medianBlur(gray_host, 5)) if cv2 else None,
                                 lambda x: cndi.median_filter(x, 5, mode="nearest")),
            "median_filter k15": (lambda x: F.median_filter(x, 15, channel_axis=None), gray_host, h * w * 2,
                                  (lambda: cv2.medianBlur(gray_host, 15)) if cv2 else None, None),
            "sobel dx k3": (lambda x: F.sobel(x, 1, 0, channel_axis=None), gray_host, h * w * 3,
                            (lambda: cv2.Sobel(gray_host, cv2.CV_16S, 1, 0)) if cv2 else None, None),
            "gradients k3": (lambda x: F.gradients(x, channel_axis=None), gray_host, h * w * 5, None, None),
            "convolve2d 5x5": (lambda x: F.convolve2d(x, np.ones((5, 5), np.int32), 0, dtype="int32", channel_axis=None),
                               gray_host, h * w * 5, None, None),
            "histogram": (lambda x: C.histogram(x, channel_axis=None), gray_host, h * w,
                          (lambda: cv2.calcHist([gray_host], [0], None, [256], [0, 256])) if cv2 else None, None),
            "binarize_auto otsu": (lambda x: C.binarize_auto(x, method="otsu"), gray_host, h * w * 2, None, None),
            "integral": (lambda x: T.integral(x, channel_axis=None), gray_host, h * w * 5,
                         (lambda: cv2.integral(gray_host)) if cv2 else None, None),
            "resize 0.5 bilinear": (lambda x: T.resize(x, scale=0.5, interpolation="bilinear", channel_axis=None),
                                    gray_host, h * w * 5 // 4,
                                    (lambda: cv2.resize(gray_host, None, fx=0.5, fy=0.5)) if cv2 else None, None),
        })
        for name, (fn, host, nbytes, cv_fn, peer) in ops.items():
            row = {"op": name, "size": label, "bytes": nbytes}
            with portcv.using("cupy"):
                x = portcv.asarray(host)
                row["cupy_ms"], row["cupy_latency_ms"] = gpu_time_ms(lambda: fn(x))
                xb = cupy.stack([x] * 8)  # a batch of 8 frames: launch cost amortized (skipped by ops that take one frame)
                row["cupy_batch8_ms_per_frame"] = gpu_time_ms(lambda: fn(xb), repeat=50)[0] / 8
                on_gpu = fn(x)
            with portcv.using("numpy"):
                expected = fn(host) if name not in GPU_ONLY or h < 1000 else on_gpu
            for got, want in zip(on_gpu if isinstance(on_gpu, tuple) else (on_gpu,),
                                 expected if isinstance(expected, tuple) else (expected,)):
                got, want = portcv.to_numpy(got), portcv.to_numpy(want)
                assert got.dtype == want.dtype and np.array_equal(got, want), f"{name} {label}: cupy differs from numpy"
            if peer is not None:
                xc = cupy.asarray(host)
                row["cupyx_ms"] = gpu_time_ms(lambda: peer(xc))[0]
            if name not in GPU_ONLY:
                with portcv.using("jax"):
                    xj = portcv.asarray(host)
                    row["jax_ms"] = jax_time_ms(lambda: fn(xj))
                    xjb = portcv.asarray(np.stack([host] * 8))  # dispatch cost amortized, as for CuPy
                    row["jax_batch8_ms_per_frame"] = jax_time_ms(lambda: fn(xjb), repeat=30) / 8
                with portcv.using("numpy"):
                    row["numpy_ms"] = host_time_ms(lambda: fn(host), repeat=1 if h > 1000 else 3)
            if cv_fn is not None:
                row["opencv_ms"] = host_time_ms(cv_fn)
            row["cupy_GBps"] = nbytes / (row["cupy_batch8_ms_per_frame"] * 1e-3) / 1e9
            row["roofline_fraction"] = row["cupy_GBps"] / results["copy_GBps"]
            results["ops"].append(row)

    if args.only != "kernels":
        pipelines(results)
    cols = ["op", "size", "cupy_batch8_ms_per_frame", "cupy_ms", "cupy_latency_ms", "cupyx_ms", "jax_ms", "jax_batch8_ms_per_frame", "numpy_ms",
            "opencv_ms", "cupy_GBps", "roofline_fraction"]
    print(" | ".join(cols))
    for r in results["ops"]:
        print(" | ".join(f"{r[c]:.4g}" if isinstance(r.get(c), float) else str(r.get(c, "-")) for c in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def pipelines(results) -> None:
    """The video pipelines of the motion and streaming issues, per frame pair / per frame."""

    from portcv import codec, motion

    def motion_pipeline(video):
        r = motion.detect_motion(video, t_low=70, t_high=80, beta=12, grid=(6, 10))
        return r.regions, motion.area_image(video[1:], r.regions)

    rows = results.setdefault("pipelines", [])
    for label, (h, w), pairs in (("640x480", (480, 640), 64), ("1920x1080", (1080, 1920), 16),
                                 ("3840x2160", (2160, 3840), 16)):
        two = portcv.color.rgb_to_gray(portcv.data.moving_shapes(2, h, w, seed=0))
        video = two[np.arange(pairs + 1) % 2]
        row = {"op": f"motion pipeline x{pairs} pairs", "size": label}
        with portcv.using("cupy"):
            v = portcv.asarray(video)
            ms, _ = gpu_time_ms(lambda: motion_pipeline(v), repeat=20)
            row["cupy_pairs_per_s"] = pairs / (ms * 1e-3)
            got = [portcv.to_numpy(a) for a in motion_pipeline(v)]
            # One pair at a time: a new frame in, the previous edges kept, regions back on the host.
            det = motion.MotionDetector(t_low=70, t_high=80, beta=12, grid=(6, 10))
            frames = [portcv.asarray(f) for f in video[:2]]
            det.update(frames[0])
            lat = []
            for i in range(60):
                t0 = time.perf_counter()
                r = det.update(frames[(i + 1) % 2])
                motion.area_image(frames[(i + 1) % 2], r.regions)
                r.regions.get()
                lat.append((time.perf_counter() - t0) * 1e3)
            row["cupy_latency_ms"] = statistics.median(lat[10:])
            e = portcv.asarray(video[:1])
            row["cupy_edges_ms_per_frame"] = gpu_time_ms(
                lambda: portcv.edges.detect(e, 70, 80))[0]
        with portcv.using("numpy"):
            small = video[:3]
            want = [portcv.to_numpy(a) for a in motion_pipeline(small)]
            assert all(np.array_equal(g[:2], x) for g, x in zip(got, want)), f"motion {label}: cupy differs"
            row["numpy_pairs_per_s"] = 2 / (host_time_ms(lambda: motion_pipeline(small), repeat=1) * 1e-3)
        with portcv.using("jax"):
            vj = portcv.asarray(video)
            row["jax_pairs_per_s"] = pairs / (jax_time_ms(lambda: motion_pipeline(vj), repeat=10) * 1e-3)
            ej = portcv.asarray(video[:1])
            row["jax_edges_ms_per_frame"] = jax_time_ms(lambda: portcv.edges.detect(ej, 70, 80), repeat=20)
            # Back-to-back, as CuPy's figures: what a stream of frames sustains.
            row["jax_edges_ms_per_frame_queued"] = jax_queue_ms(lambda: portcv.edges.detect(ej, 70, 80), repeat=50)
            row["jax_pairs_per_s_queued"] = pairs / (jax_queue_ms(lambda: motion_pipeline(vj), repeat=10) * 1e-3)
        rows.append(row)

    # The webcam report's encoder: 1080p RGB frames with sensor-like noise, threshold 20.
    frames = portcv.data.moving_shapes(2, 1080, 1920, seed=1)
    row = {"op": "delta_encode rgb", "size": "1920x1080"}
    with portcv.using("cupy"):
        enc = codec.DeltaEncoder(threshold=20)
        enc.keyframe(frames[0])
        f = [portcv.asarray(x) for x in frames]
        i = iter(range(10**9))
        row["cupy_ms"] = gpu_time_ms(lambda: enc.encode(f[next(i) % 2]))[0]
        row["cupy_encode_host_ms"] = host_time_ms(lambda: enc.encode_host(f[next(i) % 2]), repeat=20)
    with portcv.using("jax"):
        enc = codec.DeltaEncoder(threshold=20)
        enc.keyframe(frames[0])
        f = [portcv.asarray(x) for x in frames]
        row["jax_ms"] = jax_time_ms(lambda: enc.encode(f[next(i) % 2])[0], repeat=30)
    with portcv.using("numpy"):
        enc = codec.DeltaEncoder(threshold=20)
        enc.keyframe(frames[0])
        row["numpy_ms"] = host_time_ms(lambda: enc.encode(frames[next(i) % 2]), repeat=5)
    rows.append(row)
    for r in rows:
        print(" | ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
