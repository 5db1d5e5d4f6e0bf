"""portcv.filters.convolve2d, mean_filter and gaussian_blur(rule="report"): direct 2-D filters.

:class:`DirectVsSeparable` reproduces the Rice paper's Table I against Table II (section II-A,
Fig. 2): the 3x3 Gaussian ``[[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16`` applied directly
(``convolve2d``, ``O(MNk^2)``) and separated (``sep_filter([1, 2, 1], [1, 2, 1], 4)``,
``O(MNk)``) on square gray images of the paper's sizes (100x100 to 2500x2500), on every backend.
The two give the same bits; the paper's CPU figures were 0.034 s (direct) and 0.019 s
(separated) at 1000x1000. The other classes time the direct filter, the report's mean filter and
its 2-D Gaussian at the usual frame sizes, with OpenCV (``cv2.filter2D``, ``cv2.blur``) as the
host peer.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

import portcv

from ._common import (
    BACKENDS,
    OPENCV,
    SIZE_NAMES,
    Benchmark,
    Operation,
    gray_image,
    not_supported,
    peer_module,
)

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
            2**portcv.filters.REPORT_GAUSSIAN_BITS
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
