"""portcv.filters: gaussian_blur, box_blur, sep_filter on gray frames, with OpenCV and cupyx peers.

Times are of one synchronized call on an input already on the device; ``track_*_bandwidth`` is
the achieved GB/s (input bytes + output bytes over the median call time), to set against the
device's copy bandwidth (the roofline, DESIGN.md section 7).

portcv.filters.convolve2d, mean_filter and gaussian_blur(rule="report"): direct 2-D filters.

:class:`DirectVsSeparable` reproduces the Rice paper's Table I against Table II (section II-A,
Fig. 2): the 3x3 Gaussian ``[[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16`` applied directly
(``convolve2d``, ``O(MNk^2)``) and separated (``sep_filter([1, 2, 1], [1, 2, 1], 4)``,
``O(MNk)``) on square gray images of the paper's sizes (100x100 to 2500x2500), on every backend.
The two give the same bits; the paper's CPU figures were 0.034 s (direct) and 0.019 s
(separated) at 1000x1000. The other classes time the direct filter, the report's mean filter and
its 2-D Gaussian at the usual frame sizes, with OpenCV (``cv2.filter2D``, ``cv2.blur``) as the
host peer.

portcv.filters.median_filter on gray and RGB frames, with OpenCV and cupyx peers.

``cv2.medianBlur`` is the exact peer (portcv's default border is its border). The cupyx peer is
``cupyx.scipy.ndimage.median_filter`` with ``mode="nearest"`` (the same border), a generic
sort-per-pixel GPU kernel. The webcam report measured 575 ms for a 5x5 median of a 1920x1080 RGB
frame with a bubble sort per pixel (section 6.5): :class:`MedianFilterReportFrame` is that case.

portcv.filters.sobel and gradients on gray frames, with OpenCV and cupyx peers.

``cv2.Sobel(gray, CV_16S, dx, dy, ksize)`` is the exact peer of ``sobel``; for ``gradients``
(both first derivatives) it is ``cv2.spatialGradient`` (OpenCV's one-pass 3x3 dx + dy) and, for
other kernel sizes, two ``cv2.Sobel`` calls. The cupyx peer is ``cupyx.scipy.ndimage.sobel``
with int16 output and ``mode="mirror"`` (reflect-101). :class:`GradientsFusedVsTwoPasses` shows
what the fused CUDA kernel (one read of the image for gx and gy) saves over two ``sobel`` calls.
``track_*_bandwidth`` counts the uint8 input and every int16 output once.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

import portcv

from ._common import (
    BACKENDS,
    CUPYX,
    OPENCV,
    SIZE_NAMES,
    Benchmark,
    Operation,
    gray_image,
    not_supported,
    peer_module,
    rgb_image,
)

# ---- filters ------------------------------------------------------------

SIGMA = 1.2


def gaussian_blur_fn(backend: str, ksize: int, sigma: float = SIGMA) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.GaussianBlur(
            img, (ksize, ksize), sigmaX=sigma, sigmaY=sigma, borderType=cv2.BORDER_REFLECT_101
        )
    if backend == CUPYX:
        ndimage = peer_module(CUPYX)
        # float taps, radius ksize // 2 (truncate * sigma + 0.5 floored); "mirror" is reflect101
        return lambda img: ndimage.gaussian_filter(img, sigma, mode="mirror", truncate=(ksize // 2) / sigma)
    return functools.partial(portcv.filters.gaussian_blur, ksize=ksize, sigma=sigma)


def box_blur_fn(backend: str, ksize: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.blur(img, (ksize, ksize), borderType=cv2.BORDER_REFLECT_101)
    if backend == CUPYX:
        ndimage = peer_module(CUPYX)
        return lambda img: ndimage.uniform_filter(img, ksize, mode="mirror")
    return functools.partial(portcv.filters.box_blur, ksize=ksize)


def sep_filter_fn(backend: str, kx: list[int], ky: list[int], shift: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        # float taps: the same filter, not the same rounding (a speed peer only)
        fx = np.asarray(kx, np.float32) / np.float32(sum(kx))
        fy = np.asarray(ky, np.float32) / np.float32(2**shift / sum(kx))
        return lambda img: cv2.sepFilter2D(img, -1, fx, fy, borderType=cv2.BORDER_REFLECT_101)
    return lambda img: portcv.filters.sep_filter(img, kx, ky, shift)


class GaussianBlur(Benchmark):
    """``gaussian_blur(gray, ksize=5, sigma=1.2)`` over backend x frame size."""

    params = [BACKENDS + [OPENCV, CUPYX], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, gaussian_blur_fn(backend, 5), gray_image(size))

    def time_gaussian_blur(self, backend, size):
        self.op()

    def track_gaussian_blur_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_gaussian_blur_bandwidth.unit = "GB/s"


class GaussianBlurKernelSize(Benchmark):
    """``gaussian_blur(gray, ksize=k, sigma=1.2)`` at 1920x1080: cost against the number of taps."""

    params = [BACKENDS + [OPENCV, CUPYX], [3, 5, 15]]
    param_names = ["backend", "ksize"]

    def setup(self, backend, ksize):
        self.op = Operation(backend, gaussian_blur_fn(backend, ksize), gray_image("1920x1080"))

    def time_gaussian_blur(self, backend, ksize):
        self.op()


class GaussianBlurMemory(Benchmark):
    """Peak host memory (RSS) of ``gaussian_blur`` on a 3840x2160 gray frame.

    RSS counts host memory only: for CuPy (and JAX on a GPU) it is the host-side overhead, not
    the device's working set.
    """

    params = [BACKENDS + [OPENCV]]
    param_names = ["backend"]

    def setup(self, backend):
        self.op = Operation(backend, gaussian_blur_fn(backend, 5), gray_image("3840x2160"))

    def peakmem_gaussian_blur_4k(self, backend):
        self.op()


class BoxBlur(Benchmark):
    """``box_blur(gray, 5)`` over backend x frame size."""

    params = [BACKENDS + [OPENCV, CUPYX], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, box_blur_fn(backend, 5), gray_image(size))

    def time_box_blur(self, backend, size):
        self.op()

    def track_box_blur_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_box_blur_bandwidth.unit = "GB/s"


class SepFilter(Benchmark):
    """``sep_filter(gray, [1, 2, 1], [1, 2, 1], 4)`` over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, sep_filter_fn(backend, [1, 2, 1], [1, 2, 1], 4), gray_image(size))

    def time_sep_filter(self, backend, size):
        self.op()

    def track_sep_filter_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_sep_filter_bandwidth.unit = "GB/s"


class KernelTaps:
    """Host-side Q8 Gaussian taps (``gaussian_taps_q8``): float64 exp + error diffusion, per call."""

    params = [[3, 5, 15, 31]]
    param_names = ["ksize"]

    def time_gaussian_taps_q8(self, ksize):
        portcv.filters._gaussian.q8_gaussian_taps.cache_clear()  # time the computation, not the cache
        portcv.filters.gaussian_taps_q8(ksize, 1.7)


# ---- filters_convolve ------------------------------------------------------------

#: The paper's Table I / II image sides (square images, 0.01 to 6.25 megapixels).
PAPER_SIDES = [100, 500, 1000, 1500, 2000, 2500]
GAUSS3 = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]])
#: A non-separable 5x5 integer kernel (a Laplacian of Gaussian; taps sum to 0) for the direct filter.
LOG5 = np.array(
    [[0, 0, -1, 0, 0], [0, -1, -2, -1, 0], [-1, -2, 16, -2, -1], [0, -1, -2, -1, 0], [0, 0, -1, 0, 0]]
)


def square_gray(side: int) -> np.ndarray:
    """A ``side x side`` gray frame: the 3840x2160 input tiled (and cropped) to size."""
    base = gray_image("3840x2160")
    reps = (-(-side // base.shape[0]), -(-side // base.shape[1]))
    return np.ascontiguousarray(np.tile(base, reps)[:side, :side])


def gaussian3_fn(backend: str, method: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        if method == "direct":
            k = GAUSS3.astype(np.float32) / np.float32(16)
            return lambda img: cv2.filter2D(img, -1, k, borderType=cv2.BORDER_REFLECT_101)
        k1 = np.array([1, 2, 1], np.float32) / np.float32(4)
        return lambda img: cv2.sepFilter2D(img, -1, k1, k1, borderType=cv2.BORDER_REFLECT_101)
    if method == "direct":
        return functools.partial(portcv.filters.convolve2d, kernel=GAUSS3, shift=4)
    return functools.partial(portcv.filters.sep_filter, kx=[1, 2, 1], ky=[1, 2, 1], shift=4)


class DirectVsSeparable(Benchmark):
    """Table I vs Table II: the 3x3 Gaussian, direct against separated, as the pixel count grows."""

    params = [BACKENDS + [OPENCV], ["direct", "separable"], PAPER_SIDES]
    param_names = ["backend", "method", "side"]

    def setup(self, backend, method, side):
        self.op = Operation(backend, gaussian3_fn(backend, method), square_gray(side))

    def time_gaussian3(self, backend, method, side):
        self.op()

    def track_megapixels_per_second(self, backend, method, side):
        gbs = self.op.bandwidth_gbs()  # 2 bytes of compulsory traffic per pixel (uint8 in, out)
        return gbs * 1e3 / 2

    track_megapixels_per_second.unit = "Mpixel/s"


def convolve2d_fn(backend: str, kernel: np.ndarray, shift: int, dtype: str) -> Callable:
    if backend == OPENCV:
        if shift:
            not_supported(backend, "a fixed-point shift (cv2.filter2D rounds float sums)")
        cv2 = peer_module(OPENCV)
        ddepth = {"int16": cv2.CV_16S, "uint8": -1}[dtype]
        k32 = kernel.astype(np.float32)
        return lambda img: cv2.filter2D(img, ddepth, k32, borderType=cv2.BORDER_REFLECT_101)
    return functools.partial(portcv.filters.convolve2d, kernel=kernel, shift=shift, dtype=dtype)


class Convolve2d(Benchmark):
    """``convolve2d(gray, LoG 5x5, 0, dtype='int16')`` (= ``cv2.filter2D(gray, CV_16S, k)``) over backend x size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, convolve2d_fn(backend, LOG5, 0, "int16"), gray_image(size))

    def time_convolve2d(self, backend, size):
        self.op()

    def track_convolve2d_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_convolve2d_bandwidth.unit = "GB/s"


class Convolve2dKernelSize(Benchmark):
    """``convolve2d(gray, k x k, 0, dtype='int16')`` at 1920x1080: cost against the k^2 taps."""

    params = [BACKENDS + [OPENCV], [3, 7, 15]]
    param_names = ["backend", "ksize"]

    def setup(self, backend, ksize):
        kernel = np.random.default_rng(ksize).integers(-3, 4, (ksize, ksize))
        self.op = Operation(backend, convolve2d_fn(backend, kernel, 0, "int16"), gray_image("1920x1080"))

    def time_convolve2d(self, backend, ksize):
        self.op()


def mean_filter_fn(backend: str, ksize: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        # Same window and border; cv2 rounds where the report truncates (a speed peer).
        return lambda img: cv2.blur(img, (ksize, ksize), borderType=cv2.BORDER_CONSTANT)
    return functools.partial(portcv.filters.mean_filter, ksize=ksize)


class MeanFilter(Benchmark):
    """``mean_filter(gray, 5)`` (the report's truncating mean, zero border) over backend x size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, mean_filter_fn(backend, 5), gray_image(size))

    def time_mean_filter(self, backend, size):
        self.op()

    def track_mean_filter_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_mean_filter_bandwidth.unit = "GB/s"


def report_gaussian_fn(backend: str, sigma: float) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        k = portcv.filters.gaussian_kernel(sigma, rule="report").astype(np.float32) / np.float32(
            2**portcv.filters._gaussian.REPORT_GAUSSIAN_BITS
        )
        return lambda img: cv2.filter2D(img, -1, k, borderType=cv2.BORDER_CONSTANT)
    return functools.partial(portcv.filters.gaussian_blur, sigma=sigma, border="constant", rule="report")


class GaussianBlurReport(Benchmark):
    """``gaussian_blur(gray, sigma=1, rule='report')``: the report's 5x5 2-D kernel, applied directly."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, report_gaussian_fn(backend, 1.0), gray_image(size))

    def time_gaussian_blur_report(self, backend, size):
        self.op()


# ---- filters_median ------------------------------------------------------------

PEERS = [OPENCV, CUPYX]


def median_filter_fn(backend: str, ksize: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.medianBlur(img, ksize)
    if backend == CUPYX:
        ndimage = peer_module(CUPYX)
        size = (ksize, ksize)
        return lambda img: ndimage.median_filter(img, size=size + (1,) * (img.ndim - 2), mode="nearest")
    return functools.partial(portcv.filters.median_filter, ksize=ksize)


class MedianFilter(Benchmark):
    """``median_filter(gray, 5)`` over backend x frame size (target: 4K under 0.3 ms on an H100)."""

    params = [BACKENDS + PEERS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, median_filter_fn(backend, 5), gray_image(size))

    def time_median_filter(self, backend, size):
        self.op()

    def track_median_filter_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_median_filter_bandwidth.unit = "GB/s"


class MedianFilterKernelSize(Benchmark):
    """``median_filter(gray, k)`` at 1920x1080: networks (3, 5) against the sliding histogram (7..15)."""

    params = [BACKENDS + PEERS, [3, 5, 7, 9, 15]]
    param_names = ["backend", "ksize"]

    def setup(self, backend, ksize):
        self.op = Operation(backend, median_filter_fn(backend, ksize), gray_image("1920x1080"))

    def time_median_filter(self, backend, ksize):
        self.op()


class MedianFilterLargeKernel4K(Benchmark):
    """``median_filter(gray, 15)`` at 3840x2160, GPU backends and peers only (NumPy takes seconds)."""

    params = [["jax", "cupy"] + PEERS]
    param_names = ["backend"]

    def setup(self, backend):
        self.op = Operation(backend, median_filter_fn(backend, 15), gray_image("3840x2160"))

    def time_median_filter_k15_4k(self, backend):
        self.op()


class MedianFilterReportFrame(Benchmark):
    """The report's case: 5x5 median of a 1920x1080 RGB frame (575 ms there with a bubble sort)."""

    params = [BACKENDS + PEERS]
    param_names = ["backend"]

    def setup(self, backend):
        self.op = Operation(backend, median_filter_fn(backend, 5), rgb_image("1920x1080"))

    def time_median_filter_rgb_1080p(self, backend):
        self.op()


# ---- filters_sobel ------------------------------------------------------------

def sobel_fn(backend: str, dx: int, dy: int, ksize: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.Sobel(img, cv2.CV_16S, dx, dy, ksize=ksize, borderType=cv2.BORDER_REFLECT_101)
    if backend == CUPYX:
        if (ksize, dx + dy) != (3, 1):
            not_supported(backend, f"Sobel with ksize={ksize}, dx={dx}, dy={dy}")
        ndimage = peer_module(CUPYX)
        axis = 1 if dx else 0
        return lambda img: ndimage.sobel(img, axis=axis, output=np.int16, mode="mirror")
    return functools.partial(portcv.filters.sobel, dx=dx, dy=dy, ksize=ksize)


def gradients_fn(backend: str, ksize: int) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        if ksize == 3:
            return lambda img: cv2.spatialGradient(img, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        return lambda img: (
            cv2.Sobel(img, cv2.CV_16S, 1, 0, ksize=ksize, borderType=cv2.BORDER_REFLECT_101),
            cv2.Sobel(img, cv2.CV_16S, 0, 1, ksize=ksize, borderType=cv2.BORDER_REFLECT_101),
        )
    if backend == CUPYX:
        if ksize != 3:
            not_supported(backend, f"Sobel with ksize={ksize}")
        ndimage = peer_module(CUPYX)
        return lambda img: (
            ndimage.sobel(img, axis=1, output=np.int16, mode="mirror"),
            ndimage.sobel(img, axis=0, output=np.int16, mode="mirror"),
        )
    return functools.partial(portcv.filters.gradients, ksize=ksize)


class Sobel(Benchmark):
    """``sobel(gray, 1, 0)`` (3x3) over backend x frame size."""

    params = [BACKENDS + [OPENCV, CUPYX], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, sobel_fn(backend, 1, 0, 3), gray_image(size))

    def time_sobel(self, backend, size):
        self.op()

    def track_sobel_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_sobel_bandwidth.unit = "GB/s"


class SobelKernelSize(Benchmark):
    """``sobel(gray, 1, 0, ksize=k)`` at 1920x1080 (-1: Scharr)."""

    params = [BACKENDS + [OPENCV], [-1, 1, 3, 5, 7]]
    param_names = ["backend", "ksize"]

    def setup(self, backend, ksize):
        self.op = Operation(backend, sobel_fn(backend, 1, 0, ksize), gray_image("1920x1080"))

    def time_sobel(self, backend, ksize):
        self.op()


class Gradients(Benchmark):
    """``gradients(gray)`` (gx and gy, 3x3) over backend x frame size."""

    params = [BACKENDS + [OPENCV, CUPYX], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, gradients_fn(backend, 3), gray_image(size))

    def time_gradients(self, backend, size):
        self.op()

    def track_gradients_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_gradients_bandwidth.unit = "GB/s"


class GradientsFusedVsTwoPasses(Benchmark):
    """``gradients(gray, ksize=k)`` against ``sobel(gray, 1, 0)`` + ``sobel(gray, 0, 1)`` at 3840x2160."""

    params = [BACKENDS, ["fused", "two_passes"], [3, 7]]
    param_names = ["backend", "method", "ksize"]

    def setup(self, backend, method, ksize):
        if method == "fused":
            fn = gradients_fn(backend, ksize)
        else:
            gx, gy = sobel_fn(backend, 1, 0, ksize), sobel_fn(backend, 0, 1, ksize)

            def fn(img):
                return gx(img), gy(img)

        self.op = Operation(backend, fn, gray_image("3840x2160"))

    def time_gradients(self, backend, method, ksize):
        self.op()
