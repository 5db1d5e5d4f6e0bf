"""portcv.filters.median_filter on gray and RGB frames, with OpenCV and cupyx peers.

``cv2.medianBlur`` is the exact peer (portcv's default border is its border). The cupyx peer is
``cupyx.scipy.ndimage.median_filter`` with ``mode="nearest"`` (the same border), a generic
sort-per-pixel GPU kernel. The webcam report measured 575 ms for a 5x5 median of a 1920x1080 RGB
frame with a bubble sort per pixel (section 6.5): :class:`MedianFilterReportFrame` is that case.
"""

from __future__ import annotations

import functools
from typing import Callable

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
    rgb_image,
)

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
