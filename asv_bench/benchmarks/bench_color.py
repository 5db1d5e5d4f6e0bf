"""portcv.color: rgb_to_gray on RGB frames, with OpenCV's cvtColor as the host peer.

``track_rgb_to_gray_bandwidth`` is the achieved GB/s: 3 bytes read + 1 byte written per pixel
over the median call time.

portcv.color conversions and thresholds not covered elsewhere: gray_to_rgb, bgr_to_rgb, and
the two threshold rules on a precomputed histogram (the host-side Gaussian taps are timed in
bench_filters' KernelTaps).

portcv.color section-8 pipeline: histogram, binarize, binarize_auto, rgb_to_bgr, with OpenCV peers.

``Histogram`` is the one the CUDA kernel is tuned for (target: a 3840x2160 gray frame in under
40 us on an H100); its peer is ``cv2.calcHist``. ``BinarizeAuto`` times the whole report
pipeline (histogram, threshold, binarize; no host round trip) against OpenCV's
``threshold(THRESH_OTSU)`` for ``method="otsu"``. ``track_*_bandwidth`` is input + output bytes
over the median call time (DESIGN.md section 7).

portcv.color decoder output to colour: ``NV12ToRGB`` times ``nv12_to_rgb``, ``nv12_to_bgr``,
``i420_to_rgb`` and ``i420_to_bgr`` on 1080p and 4K frames (the sizes video decoders hand out),
with ``cv2.cvtColor`` (``COLOR_YUV2RGB_NV12`` and siblings) as the host peer;
``track_nv12_to_rgb_bandwidth`` is 1.5 bytes read + 3 written per pixel over the median call time.
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
    _shared,
    gray_image,
    not_supported,
    peer_module,
    rgb_image,
)

# ---- color ------------------------------------------------------------

def rgb_to_gray_fn(backend: str, method: str) -> Callable:
    if backend == OPENCV:
        if method != "weighted":
            not_supported(backend, f"rgb_to_gray method {method!r}")
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    return functools.partial(portcv.color.rgb_to_gray, method=method)


class RgbToGray(Benchmark):
    """``rgb_to_gray(rgb, method=m)`` over backend x frame size x method."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES, ["weighted", "average"]]
    param_names = ["backend", "size", "method"]

    def setup(self, backend, size, method):
        self.op = Operation(backend, rgb_to_gray_fn(backend, method), rgb_image(size))

    def time_rgb_to_gray(self, backend, size, method):
        self.op()

    def track_rgb_to_gray_bandwidth(self, backend, size, method):
        return self.op.bandwidth_gbs()

    track_rgb_to_gray_bandwidth.unit = "GB/s"


# ---- color_channels ------------------------------------------------------------

def _peer_or(backend: str, own: Callable, cv_code: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        code = getattr(cv2, cv_code)
        return lambda img: cv2.cvtColor(img, code)
    return own


class GrayToRgb(Benchmark):
    """``gray_to_rgb(gray)`` (channel replication) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, _peer_or(backend, portcv.color.gray_to_rgb, "COLOR_GRAY2RGB"), gray_image(size))

    def time_gray_to_rgb(self, backend, size):
        self.op()


class BgrToRgb(Benchmark):
    """``bgr_to_rgb(bgr)`` (a channel gather) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, _peer_or(backend, portcv.color.bgr_to_rgb, "COLOR_BGR2RGB"), rgb_image(size))

    def time_bgr_to_rgb(self, backend, size):
        self.op()


class Thresholds(Benchmark):
    """``threshold_otsu(gray)`` over backend x frame size (OpenCV peer: ``cv2.threshold`` with Otsu)."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        gray = gray_image(size)
        if backend == OPENCV:
            cv2 = peer_module(OPENCV)
            otsu = lambda img: cv2.threshold(img, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[0]  # noqa: E731
        else:
            otsu = portcv.color.threshold_otsu
        self.otsu = Operation(backend, otsu, gray)

    def time_threshold_otsu(self, backend, size):
        self.otsu()


class ThresholdTwoPeaks(Benchmark):
    """``threshold_two_peaks(histogram)`` over backend x frame size (OpenCV has no such threshold)."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        with portcv.using("numpy"):
            hist = portcv.color.histogram(gray_image(size))
        self.two_peaks = Operation(backend, portcv.color.threshold_two_peaks, hist)

    def time_threshold_two_peaks(self, backend, size):
        self.two_peaks()


# ---- color_histogram ------------------------------------------------------------

THRESHOLD = 128


def histogram_fn(backend: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.calcHist([img], [0], None, [256], [0, 256])  # float32 counts
    return portcv.color.histogram


def binarize_fn(backend: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.threshold(img, THRESHOLD, 255, cv2.THRESH_BINARY)[1]
    return functools.partial(portcv.color.binarize, threshold=THRESHOLD)


def binarize_auto_fn(backend: str, method: str) -> Callable:
    if backend == OPENCV:
        if method != "otsu":
            not_supported(backend, f"binarize_auto method {method!r}")
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.threshold(img, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]
    return functools.partial(portcv.color.binarize_auto, method=method)


def rgb_to_bgr_fn(backend: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    return portcv.color.rgb_to_bgr


class Histogram(Benchmark):
    """``histogram(gray)`` (256 bins, int64 counts) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, histogram_fn(backend), gray_image(size))

    def time_histogram(self, backend, size):
        self.op()

    def track_histogram_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_histogram_bandwidth.unit = "GB/s"


class Binarize(Benchmark):
    """``binarize(gray, 128)`` over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, binarize_fn(backend), gray_image(size))

    def time_binarize(self, backend, size):
        self.op()

    def track_binarize_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_binarize_bandwidth.unit = "GB/s"


class BinarizeAuto(Benchmark):
    """``binarize_auto(gray, method=m)``: histogram + threshold + binarize, on the device."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES, ["two_peaks", "otsu"]]
    param_names = ["backend", "size", "method"]

    def setup(self, backend, size, method):
        self.op = Operation(backend, binarize_auto_fn(backend, method), gray_image(size))

    def time_binarize_auto(self, backend, size, method):
        self.op()


class RgbToBgr(Benchmark):
    """``rgb_to_bgr(rgb)`` (a channel gather) over backend x frame size."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, rgb_to_bgr_fn(backend), rgb_image(size))

    def time_rgb_to_bgr(self, backend, size):
        self.op()


# ---- color_yuv420 ------------------------------------------------------------

#: Decoder frame sizes: 1080p and 4K.
VIDEO_SIZES = ["1920x1080", "3840x2160"]
#: Conversion -> (layout of its input, OpenCV's code).
YUV420_CONVERSIONS = {
    "nv12_to_rgb": ("nv12", "COLOR_YUV2RGB_NV12"),
    "nv12_to_bgr": ("nv12", "COLOR_YUV2BGR_NV12"),
    "i420_to_rgb": ("i420", "COLOR_YUV2RGB_I420"),
    "i420_to_bgr": ("i420", "COLOR_YUV2BGR_I420"),
}


@functools.lru_cache(maxsize=None)
def yuv420_frame(size: str, layout: str) -> np.ndarray:
    """A ``(3H/2, W)`` frame of :func:`rgb_image`'s photograph-like content: its gray as luma and
    its blue and red channels, subsampled 2 x 2, as U and V (NV12 pairs or I420 planes)."""
    rgb = rgb_image(size)
    h, w = rgb.shape[:2]
    u, v = rgb[::2, ::2, 2], rgb[::2, ::2, 0]
    if layout == "nv12":
        chroma = np.stack([u, v], axis=-1).reshape(h // 2, w)
    else:
        chroma = np.concatenate([u.reshape(-1), v.reshape(-1)]).reshape(h // 2, w)
    return _shared(np.concatenate([gray_image(size), chroma]))


def yuv420_fn(backend: str, conversion: str) -> Callable:
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        code = getattr(cv2, YUV420_CONVERSIONS[conversion][1])
        return lambda yuv: cv2.cvtColor(yuv, code)
    return getattr(portcv.color, conversion)


class NV12ToRGB(Benchmark):
    """``nv12_to_rgb(nv12)`` and its BGR and I420 siblings over backend x frame size x conversion."""

    params = [BACKENDS + [OPENCV], VIDEO_SIZES, list(YUV420_CONVERSIONS)]
    param_names = ["backend", "size", "conversion"]

    def setup(self, backend, size, conversion):
        frame = yuv420_frame(size, YUV420_CONVERSIONS[conversion][0])
        self.op = Operation(backend, yuv420_fn(backend, conversion), frame)

    def time_nv12_to_rgb(self, backend, size, conversion):
        self.op()

    def track_nv12_to_rgb_bandwidth(self, backend, size, conversion):
        return self.op.bandwidth_gbs()

    track_nv12_to_rgb_bandwidth.unit = "GB/s"
