"""portcv.color conversions and thresholds not covered elsewhere: gray_to_rgb, bgr_to_rgb, and
the two threshold rules on a precomputed histogram (the host-side Gaussian taps are timed in
bench_filters' KernelTaps)."""

from __future__ import annotations

from typing import Callable

import portcv

from ._common import BACKENDS, OPENCV, SIZE_NAMES, Benchmark, Operation, gray_image, peer_module, rgb_image


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
    """``threshold_two_peaks(histogram)`` and ``threshold_otsu(gray)`` (OpenCV peer for Otsu)."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        gray = gray_image(size)
        if backend == OPENCV:
            cv2 = peer_module(OPENCV)
            otsu = lambda img: cv2.threshold(img, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[0]  # noqa: E731
            self.two_peaks = None
        else:
            otsu = portcv.color.threshold_otsu
            with portcv.using("numpy"):
                hist = portcv.color.histogram(gray)
            self.two_peaks = Operation(backend, portcv.color.threshold_two_peaks, hist)
        self.otsu = Operation(backend, otsu, gray)

    def time_threshold_otsu(self, backend, size):
        self.otsu()

    def time_threshold_two_peaks(self, backend, size):
        if self.two_peaks is None:
            raise NotImplementedError("OpenCV has no two-peaks threshold")
        self.two_peaks()
