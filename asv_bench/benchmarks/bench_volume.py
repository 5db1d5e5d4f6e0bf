"""portcv.volume: Table 1 of Lin et al.'s video-parallelization article on today's machines.

The article's task: k + 3 frames of 720 x 560 uint8 video in, the 4 output frames of a k x k x k
convolution out ('valid' in time, 'same' in space), for k = 5 ... 15. Here: backend x method x k,
with the time of one call (its 4 frames), the multiply-adds per second it reaches (``k**3`` per
output sample, whatever the method), and, on a GPU, that rate as a share of the FP32 FMA peak.
``Convolve3DBatch``: the time per clip when one call takes 16 clips (how GPU backends are judged).

Peers in the same run: ``scipy`` (scipy.ndimage.convolve on float64 for ``direct``,
scipy.signal.fftconvolve for ``fft``; the CPU) and ``cupyx`` (cupyx.scipy.ndimage.convolve on
float32 and cupyx.scipy.signal.fftconvolve; the GPU). A peer has no ``hybrid``.
"""

from __future__ import annotations

import importlib

import numpy as np

import portcv

from ._common import BACKENDS, Benchmark, Operation, gpu_timing, not_supported, require, timing

SCIPY, CUPYX = "scipy", "cupyx"
KS = [5, 7, 9, 11, 13, 15]
METHODS = ["direct", "fft", "hybrid"]
#: H100 SXM: 66.9 TFLOP/s FP32 = 33.45 T fused multiply-adds per second.
FMA_PEAK = 33.45e12
#: On the host, direct sums take over 5 s a call from k = 11 (NumPy's int32 slice products, XLA's
#: CPU convolution, scipy.ndimage): skipped there, as the article's CPU table stops direct at 15
#: with minutes a call.
HOST_DIRECT_MAX_K = 9
#: Clips per call of Convolve3DBatch on CuPy and JAX.
BATCH = 16


def _on_host(backend: str) -> bool:
    if backend in ("numpy", SCIPY):
        return True
    if backend == "jax":
        return require("jax").runs_on_host
    return False


def _article_clip(k: int) -> np.ndarray:
    rng = np.random.default_rng(k)
    return rng.integers(0, 256, (k + 3, 560, 720), dtype=np.uint8)


def _article_kernel(k: int) -> np.ndarray:
    taps, _ = portcv.volume.quantize_kernel(np.random.default_rng(100 + k).standard_normal((k, k, k)), bits=16)
    return taps


def _peer(backend: str, method: str, k: int):
    """The peer's call on a reflect101-padded float clip: 'valid' results of the same size."""
    kernel = _article_kernel(k).astype(np.float64)
    pad = ((0, 0), (k // 2, k // 2), (k // 2, k // 2))
    if method == "hybrid":
        not_supported(backend, "hybrid method")
    try:
        if backend == SCIPY:
            ndimage, signal = importlib.import_module("scipy.ndimage"), importlib.import_module("scipy.signal")
            xp, dtype, arrays = np, np.float64, "numpy"
        else:
            ndimage = importlib.import_module("cupyx.scipy.ndimage")
            signal = importlib.import_module("cupyx.scipy.signal")
            xp, dtype, arrays = importlib.import_module("cupy"), np.float32, "cupy"
    except ImportError as exc:
        raise NotImplementedError(f"peer {backend!r} unavailable ({exc})") from exc
    require(arrays)
    clip = np.pad(_article_clip(k), pad, mode="reflect").astype(dtype)
    k_dev = xp.asarray(kernel.astype(dtype))
    if method == "fft":
        return arrays, lambda v: signal.fftconvolve(v, k_dev, mode="valid"), clip
    half = k // 2
    return arrays, lambda v: ndimage.convolve(v, k_dev, mode="constant")[half:-half, half:-half, half:-half], clip


class _Convolve3DCase(Benchmark):
    """Table 1's layout: one call = the 4 output frames of a k-cube convolution of k + 3 frames."""

    params = [BACKENDS + [SCIPY, CUPYX], METHODS, KS]
    param_names = ["backend", "method", "k"]
    timeout = 300

    def setup(self, backend, method, k):
        if method == "direct" and k > HOST_DIRECT_MAX_K and _on_host(backend):
            not_supported(backend, f"direct method on the host at k > {HOST_DIRECT_MAX_K} within the benchmark timeout")
        if backend in (SCIPY, CUPYX):
            arrays, fn, clip = _peer(backend, method, k)
            self.op = Operation(arrays, fn, clip)
        else:
            kernel = _article_kernel(k)
            self.op = Operation(backend, lambda v: portcv.volume.convolve3d(v, kernel, method=method), _article_clip(k))
        self.macs = 4 * 560 * 720 * k**3

    def _seconds(self, calls: int = 3) -> float:
        return float(np.median(timing.synced_s(self.op, min_calls=calls, max_calls=calls)))


class Convolve3D(_Convolve3DCase):
    def time_convolve3d(self, backend, method, k):
        self.op()

    def track_gmacs(self, backend, method, k):
        """Multiply-adds of eq. (1) per second (k**3 per output sample), in billions."""
        return round(self.macs / self._seconds() / 1e9, 2)

    track_gmacs.unit = "GMAC/s"


class Convolve3DFmaPeak(_Convolve3DCase):
    """The GPU sides' rate against the H100's FP32 FMA peak: its own class so that the host's
    backends are refused in ``setup`` (asv's n/a), not by a failing benchmark."""

    params = [["jax", "cupy", CUPYX], METHODS, KS]

    def setup(self, backend, method, k):
        if _on_host(backend):
            not_supported(backend, "GPU")
        super().setup(backend, method, k)

    def track_fma_peak_percent(self, backend, method, k):
        """Multiply-adds per second against the H100's FP32 FMA peak (33.45 T/s)."""
        return round(100 * self.macs / self._seconds() / FMA_PEAK, 2)

    track_fma_peak_percent.unit = "%"


class Convolve3DBatch(Benchmark):
    """Per clip of Table 1's task in batches: one call on a stack of 16 clips on a GPU (CuPy, JAX),
    so the host's dispatch of a call is shared by the batch, as GPU backends are judged
    (docs/benchmarks.md); on the host (NumPy, JAX on a CPU) one clip a call, whose time per clip
    does not depend on the batch."""

    params = [BACKENDS, METHODS, [5, 9, 15]]
    param_names = ["backend", "method", "k"]
    timeout = 600

    def setup(self, backend, method, k):
        if method == "direct" and k > HOST_DIRECT_MAX_K and _on_host(backend):
            not_supported(backend, f"direct method on the host at k > {HOST_DIRECT_MAX_K} within the benchmark timeout")
        self.clips = 1 if _on_host(backend) else BATCH
        kernel = _article_kernel(k)
        self.op = Operation(backend, lambda v: portcv.volume.convolve3d(v, kernel, method=method),
                            np.stack([_article_clip(k)] * self.clips))

    def track_convolve3d_us_per_clip(self, backend, method, k):
        return round(1e6 * self.op.median_s(max_calls=3) / self.clips, 1)

    track_convolve3d_us_per_clip.unit = "us"


class Convolve3DGpuTime(Benchmark):
    """Microseconds of GPU time per clip of :class:`Convolve3DBatch`'s calls (16 clips a call),
    the per-frame time in batches by which GPU backends are judged, without the host's dispatch
    and the clock changes that three synchronized calls after a setup also measure
    (``portcv._timing``). CuPy: ``device_ms`` (a spinning kernel holds the GPU while 10 calls are
    queued behind it, CUDA events around them). JAX: ``Operation.queued_s`` (10 calls queued back
    to back, one wait at the end; a call's 80-140 µs of dispatch hides behind the GPU's
    300-3000 µs). n/a on the host."""

    params = [BACKENDS, METHODS, [5, 9, 15]]
    param_names = ["backend", "method", "k"]
    timeout = 600

    def setup(self, backend, method, k):
        if backend not in ("cupy", "jax") or _on_host(backend):
            not_supported(backend, "GPU time")
        kernel = _article_kernel(k)
        self.op = Operation(backend, lambda v: portcv.volume.convolve3d(v, kernel, method=method),
                            np.stack([_article_clip(k)] * BATCH))
        self.device_ms = gpu_timing().device_ms if backend == "cupy" else None

    def track_gpu_us_per_clip(self, backend, method, k):
        if self.device_ms is None:
            return round(1e6 * self.op.queued_s(calls=10, rounds=3) / BATCH, 1)
        with portcv.using("cupy"):
            ms = self.device_ms(lambda: self.op.fn(*self.op.arrays), calls=10, rounds=3)
        return None if ms is None else round(1e3 * ms / BATCH, 1)

    track_gpu_us_per_clip.unit = "us"


class Convolver3DPush(Benchmark):
    """Live video: ``Convolver3D.push`` of one 720x560 frame through a 9-cube (one output frame)."""

    params = [BACKENDS, ["direct", "hybrid"]]
    param_names = ["backend", "method"]

    def setup(self, backend, method):
        if method == "direct" and _on_host(backend):
            not_supported(backend, "direct method on the host within the benchmark timeout")
        require(backend)
        self.backend = backend
        clip = _article_clip(9)
        with portcv.using(backend):
            self.frames = [portcv.asarray(f) for f in clip]
            self.conv = portcv.volume.Convolver3D(_article_kernel(9), (560, 720), method=method)
            for f in self.frames[:9]:
                self.conv.push(f)  # the ring is full: every push makes a frame

    def time_push(self, backend, method):
        with portcv.using(self.backend) as b:
            b.block(self.conv.push(self.frames[9]))


class KernelsOnTheHost(Benchmark):
    """Host-side set-up of a call: a Gabor bank (8 orientations x 2 speeds, k = 15) and the FFT
    error bound of the article's task."""

    def setup(self):
        self.taps = _article_kernel(15)

    def time_gabor_kernel3d_bank(self):
        portcv.volume.gabor_kernel3d(15, 3.0, 8.0, theta=np.linspace(0, np.pi, 8, endpoint=False), speed=[-1.0, 1.0])

    def time_fft_error_bound(self):
        portcv.volume.fft_error_bound((18, 560, 720), np.uint8, self.taps)
