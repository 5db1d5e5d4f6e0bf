"""portcv.transform: integral, resize, pyramid (+ pack_pyramid) on gray frames, with OpenCV peers.

The OpenCV peers compute the same bits: ``cv2.integral`` / ``cv2.integral2`` and ``cv2.resize``
with ``INTER_LINEAR`` / ``INTER_LINEAR_EXACT`` / ``INTER_NEAREST``; the pyramid peer resizes the
same level sizes with ``INTER_LINEAR_EXACT`` (what ``CascadeClassifier::detectMultiScale`` does
before scanning). ``track_*_bandwidth`` is compulsory bytes (input read once + output written
once) over the median synchronized call time, to set against the device's copy bandwidth.
Targets on an H100: ``integral`` of a 3840x2160 frame under 0.2 ms.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import portcv
from portcv.transform._pyramid import pyramid_plan

from ._common import (
    BACKENDS,
    OPENCV,
    SIZE_NAMES,
    SIZES,
    Benchmark,
    Operation,
    gray_image,
    nbytes,
    peer_module,
    prepare,
    rgb_image,
)

INTERPOLATIONS = list(portcv.transform.INTERPOLATIONS)
CV2_FLAG = {"bilinear": "INTER_LINEAR", "bilinear_exact": "INTER_LINEAR_EXACT", "nearest": "INTER_NEAREST"}


class TupleOperation(Operation):
    """An :class:`Operation` whose function returns several arrays (a tuple or list); all are waited for."""

    def __init__(self, backend: str, fn: Callable, *arrays: np.ndarray) -> None:
        self.backend = backend
        self.fn = fn
        self.arrays = tuple(prepare(backend, a) for a in arrays)
        outs = self()
        self.traffic_bytes = sum(nbytes(a) for a in self.arrays) + sum(nbytes(o) for o in outs)


# -------------------------------------------------------------------------------- integral
def integral_fn(backend: str, squared: bool) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return (lambda img: tuple(cv2.integral2(img))) if squared else (lambda img: (cv2.integral(img),))
    fn = functools.partial(portcv.transform.integral, squared=squared)
    return (lambda img: fn(img)) if squared else (lambda img: (fn(img),))


class Integral(Benchmark):
    """``integral(gray)`` (int32 sums) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = TupleOperation(backend, integral_fn(backend, False), gray_image(size))

    def time_integral(self, backend, size):
        self.op()

    def track_integral_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_integral_bandwidth.unit = "GB/s"


class IntegralSquared(Benchmark):
    """``integral(gray, squared=True)`` (int32 sums + int64 squared sums; OpenCV: float64 squares)."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = TupleOperation(backend, integral_fn(backend, True), gray_image(size))

    def time_integral_squared(self, backend, size):
        self.op()

    def track_integral_squared_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_integral_squared_bandwidth.unit = "GB/s"


class IntegralRgb(Benchmark):
    """``integral(rgb)`` (per channel) at 1920x1080."""

    params = [BACKENDS + [OPENCV]]
    param_names = ["backend"]

    def setup(self, backend):
        self.op = TupleOperation(backend, integral_fn(backend, False), rgb_image("1920x1080"))

    def time_integral_rgb(self, backend):
        self.op()


# -------------------------------------------------------------------------------- resize
def resize_fn(backend: str, size: Any = None, scale: Any = None, interpolation: str = "bilinear") -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        flag = getattr(cv2, CV2_FLAG[interpolation])
        if size is not None:
            return lambda img: cv2.resize(img, size, interpolation=flag)
        return lambda img: cv2.resize(img, None, fx=scale, fy=scale, interpolation=flag)
    return functools.partial(portcv.transform.resize, size=size, scale=scale, interpolation=interpolation)


class Resize(Benchmark):
    """``resize(gray, scale=1/1.1)`` (one pyramid step) over backend x frame size x interpolation."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES, INTERPOLATIONS]
    param_names = ["backend", "size", "interpolation"]

    def setup(self, backend, size, interpolation):
        self.op = Operation(backend, resize_fn(backend, scale=1 / 1.1, interpolation=interpolation), gray_image(size))

    def time_resize(self, backend, size, interpolation):
        self.op()

    def track_resize_bandwidth(self, backend, size, interpolation):
        return self.op.bandwidth_gbs()

    track_resize_bandwidth.unit = "GB/s"


class ResizeHalf(Benchmark):
    """``resize(gray, scale=0.5)``: OpenCV's exact 2x area path, over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, resize_fn(backend, scale=0.5), gray_image(size))

    def time_resize_half(self, backend, size):
        self.op()


class ResizeUpRgb(Benchmark):
    """``resize(rgb, size=(3840, 2160))`` from 1920x1080 RGB (2x up), over backend x interpolation."""

    params = [BACKENDS + [OPENCV], INTERPOLATIONS]
    param_names = ["backend", "interpolation"]

    def setup(self, backend, interpolation):
        h, w = SIZES["3840x2160"]
        self.op = Operation(backend, resize_fn(backend, size=(w, h), interpolation=interpolation),
                            rgb_image("1920x1080"))

    def time_resize_up_rgb(self, backend, interpolation):
        self.op()


# -------------------------------------------------------------------------------- pyramid
def pyramid_fn(backend: str, scale: float = 1.1, window: tuple = (24, 24)) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)

        def levels(img):
            h, w = img.shape
            return [cv2.resize(img, wh, interpolation=cv2.INTER_LINEAR_EXACT)
                    for _, wh in pyramid_plan(w, h, scale, window)]

        return levels
    return functools.partial(portcv.transform.pyramid, scale=scale, min_size=window)


def packed_pyramid_fn(backend: str) -> Callable:
    make = pyramid_fn(backend)
    if backend == OPENCV:
        def packed(img):
            levels = make(img)
            with portcv.using("numpy"):
                return portcv.transform.pack_pyramid(levels)[0]

        return packed
    return lambda img: portcv.transform.pack_pyramid(make(img))[0]


class Pyramid(Benchmark):
    """``pyramid(gray, scale=1.1, min_size=(24, 24))`` (all levels) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = TupleOperation(backend, pyramid_fn(backend), gray_image(size))

    def time_pyramid(self, backend, size):
        self.op()

    def track_pyramid_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_pyramid_bandwidth.unit = "GB/s"


class PackedPyramid(Benchmark):
    """``pack_pyramid(pyramid(gray))``: the MCT thesis' one-image pyramid, over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, packed_pyramid_fn(backend), gray_image(size))

    def time_packed_pyramid(self, backend, size):
        self.op()

