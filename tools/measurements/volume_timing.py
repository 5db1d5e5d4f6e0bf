"""GPU figures of portcv.volume and portcv.distance at the article's sizes (docs/volume.md,
docs/distance.md): ms per call of back-to-back calls (CUDA events on CuPy, one wait at the end on
JAX), with one synchronized call beside it, and GMAC/s / % of the FP32 FMA peak for convolve3d.

    python -m tools.measure volume-timing [--quick] [--distance]   # --distance: the distances only
    python -m tools.measure volume-timing --direct    # CuPy's direct kernel alone: one clip, 16 clips a call
    python -m tools.measure volume-timing --direct --jax   # the same for JAX's direct method
    python -m tools.measure volume-timing --fft       # the FFT methods per clip, 16 clips a call (CuPy, JAX)

--direct is what a change to the direct kernels is A/B-timed with:
    BASE=.device/base bash tools/gpu_ab.sh python3 -m tools.measure volume-timing --direct
"""

from __future__ import annotations

import sys

import numpy as np

import portcv
from portcv._timing import device_ms, gpu_time_ms, jax_queue_ms, queued_ms, synced_ms

from asv_bench.benchmarks import bench_distance as DIST  # the asv suite's inputs
from asv_bench.benchmarks import bench_volume as V

FMA_PEAK = 33.45e12  # H100 SXM FP32 FMA/s


def article_clip(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Table 1's case: a (k + 3, 560, 720) uint8 clip and a quantized k x k x k kernel."""
    return V._article_clip(k), V._article_kernel(k)


def direct_per_clip(name: str = "cupy") -> None:
    """Time of the direct method per call of one clip and per clip in a batch of 16 (CUDA events
    on CuPy, one wait after back-to-back calls on JAX). The first k is timed twice, the first
    time unreported: on an H200 the first JAX measurement of a process ran 3-8x slower (k = 5:
    153 and 382 µs a clip, then 45-50), even right after CuPy's timings; the cause is not isolated."""
    for i, k in enumerate((5, 5, 9, 15)):
        clip, taps = article_clip(k)
        with portcv.using(name) as b:
            one = portcv.asarray(clip)
            batch = b.xp.stack([one] * 16)
            if name == "cupy":
                single, _ = gpu_time_ms(lambda: portcv.volume.convolve3d(one, taps, method="direct"), repeat=20, rounds=3)
                many, _ = gpu_time_ms(lambda: portcv.volume.convolve3d(batch, taps, method="direct"), repeat=5, rounds=3)
            else:
                single = jax_queue_ms(lambda: portcv.volume.convolve3d(one, taps, method="direct"), repeat=20, rounds=3)
                many = jax_queue_ms(lambda: portcv.volume.convolve3d(batch, taps, method="direct"), repeat=5, rounds=3)
        if i:
            print(f"convolve3d {name} direct k={k:2d}: {single * 1e3:.1f} µs/call, {many * 1e3 / 16:.1f} µs/clip in 16",
                  flush=True)


def fft_per_clip() -> None:
    """The FFT methods per clip with 16 clips a call: CuPy's time of back-to-back calls and its
    GPU time with the host's dispatch hidden (``device_ms``), JAX's back-to-back time; one
    synchronized call of one clip beside them."""
    for k in (5, 9, 15):
        clip, taps = article_clip(k)
        for name in ("cupy", "jax"):
            with portcv.using(name) as b:
                one = portcv.asarray(clip)
                batch = b.xp.stack([one] * 16)
                for method in ("fft", "hybrid"):
                    fn = lambda: portcv.volume.convolve3d(batch, taps, method=method)  # noqa: E731
                    single = synced_ms(lambda: b.block(portcv.volume.convolve3d(one, taps, method=method)), n=5)
                    queued_ms(name, fn, repeat=3, warmup=2, rounds=1)  # JAX's first timing of a process runs slow
                    queued = queued_ms(name, fn, repeat=5, warmup=2, rounds=3)
                    gpu = device_ms(fn, calls=5, rounds=3) if name == "cupy" else None
                    gpu_text = f", GPU {gpu * 1e3 / 16:6.1f}" if gpu else ""
                    print(f"convolve3d {name:5s} {method:6s} k={k:2d}: {queued * 1e3 / 16:6.1f} µs/clip in 16{gpu_text}; "
                          f"one clip synchronized {single * 1e3:6.0f} µs", flush=True)


def main(quick: bool, distance_only: bool) -> None:
    for k in () if distance_only else (5, 9, 15):
        clip, taps = article_clip(k)
        macs = 4 * 560 * 720 * k**3
        for name in ("cupy", "jax"):
            with portcv.using(name) as b:
                v = portcv.asarray(clip)
                for method in ("direct", "fft", "hybrid"):
                    fn = lambda: portcv.volume.convolve3d(v, taps, method=method)  # noqa: E731
                    if name == "cupy":
                        per_call, _ = gpu_time_ms(fn, repeat=10 if quick else 30, rounds=3)
                    else:
                        per_call = jax_queue_ms(fn, repeat=10 if quick else 30, rounds=3)
                    single = synced_ms(lambda: b.block(fn()), n=5)
                    print(f"convolve3d {name:5s} {method:7s} k={k:2d}: {per_call:8.3f} ms/call (4 frames), "
                          f"single {single:8.3f} ms, {macs / per_call / 1e6:8.1f} GMAC/s, "
                          f"{100 * macs / (per_call * 1e-3) / FMA_PEAK:5.1f} % FMA peak", flush=True)
    for size, (m, n, l) in DIST.SIZES.items():  # 4096x16384x128 and the LBP-sized 64x20000x11907
        F, D = DIST.features(size)
        for name in ("cupy", "jax"):
            with portcv.using(name):
                f, d = portcv.asarray(F), portcv.asarray(D)
                for what, fn in (("sqeuclidean", lambda: portcv.distance.sqeuclidean(f, d)),
                                 ("nearest", lambda: portcv.distance.nearest(f, d, k=1))):
                    gpu_text = ""
                    if name == "cupy":
                        per_call, _ = gpu_time_ms(fn, repeat=3, rounds=3, warmup=2)
                        gpu = device_ms(fn, calls=30, rounds=3)  # the host's dispatch hidden
                        gpu_text = f", GPU {gpu:9.4f} ms" if gpu else ""
                    else:
                        per_call = jax_queue_ms(fn, repeat=3, rounds=3, warmup=2)
                    single = synced_ms(lambda: portcv.backend().block(fn()), n=5)
                    print(f"distance {name:5s} {what:11s} {m}x{n}x{l}: {per_call:9.3f} ms/call{gpu_text}, "
                          f"single {single:9.3f} ms, {m * n * l / per_call / 1e6:8.1f} GMAC/s", flush=True)


if __name__ == "__main__":
    if "--direct" in sys.argv:
        direct_per_clip("jax" if "--jax" in sys.argv else "cupy")
    elif "--fft" in sys.argv:
        fft_per_clip()
    else:
        main("--quick" in sys.argv, "--distance" in sys.argv)
