"""portcv.filters: gaussian_blur, box_blur, sep_filter on gray frames, with OpenCV and cupyx peers.

Times are of one synchronized call on an input already on the device; ``track_*_bandwidth`` is
the achieved GB/s (input bytes + output bytes over the median call time), to set against the
device's copy bandwidth (the roofline, DESIGN.md section 7).
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
    peer_module,
)

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
        portcv.filters._gaussian_taps_q8.cache_clear()  # time the computation, not the cache
        portcv.filters.gaussian_taps_q8(ksize, 1.7)
