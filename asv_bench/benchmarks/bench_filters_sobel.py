"""portcv.filters.sobel and gradients on gray frames, with OpenCV and cupyx peers.

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
)


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
