"""portcv.color: rgb_to_gray on RGB frames, with OpenCV's cvtColor as the host peer.

``track_rgb_to_gray_bandwidth`` is the achieved GB/s: 3 bytes read + 1 byte written per pixel
over the median call time.
"""

from __future__ import annotations

import functools
from typing import Callable

import portcv

from ._common import BACKENDS, OPENCV, SIZE_NAMES, Benchmark, Operation, not_supported, peer_module, rgb_image


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
