"""portcv.edges: the Rice paper's detector (section II, Algorithm 1) and Canny, over backend x size.

:class:`Detect` is the whole of ``detect`` (3x3 binomial low-pass, then one fused CUDA kernel for
Sobel, magnitude, sector, NMS and the apron gather on CuPy); the issue's target is 3840x2160
under 0.2 ms on an H100. Its OpenCV peer is the paper's own comparison (section II-F, Listing 5):
``cv2.Canny`` after ``cv2.GaussianBlur`` -- a different algorithm, timed for scale; its cupyx
peer is the Gaussian step alone (``cupyx.scipy.ndimage.gaussian_filter``, sigma 0.8 truncated to
3 taps, mirror border), the figure the issue quotes (0.41 ms at 4K). :class:`Canny`
has an exact peer, ``cv2.Canny``. :class:`DetectPaperSizes` repeats the paper's Table IV sizes
(square frames, 500 to 3000 pixels a side) so the speedup of each GPU backend over NumPy can be
drawn against the pixel count, as the paper's Fig. 27. ``track_*_bandwidth`` counts the uint8
frame read once and the uint8 edge map written once.
"""

from __future__ import annotations

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

#: The paper's Fig. 12 thresholds (t_l = 70, t_h = 80).
T_LOW, T_HIGH = 70, 80
#: Canny thresholds of the benchmarks (cv2.Canny's documentation example).
CANNY_LOW, CANNY_HIGH = 50, 150
#: The paper's Table IV frame sizes (square), up to 3000 (NumPy takes seconds beyond).
PAPER_SIZES = [500, 1000, 2000, 3000]


def detect_fn(backend: str, alpha: int = 2):
    if backend == CUPYX:
        ndimage = peer_module(CUPYX)
        return lambda img: ndimage.gaussian_filter(img, 0.8, mode="mirror", truncate=1.25)
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.Canny(cv2.GaussianBlur(img, (3, 3), 0), T_LOW, T_HIGH, L2gradient=True)
    return lambda img: portcv.edges.detect(img, T_LOW, T_HIGH, alpha=alpha)


def canny_fn(backend: str):
    if backend == OPENCV:
        cv2 = peer_module(OPENCV)
        return lambda img: cv2.Canny(img, CANNY_LOW, CANNY_HIGH)
    return lambda img: portcv.edges.canny(img, CANNY_LOW, CANNY_HIGH)


class Detect(Benchmark):
    """``detect(gray, 70, 80)`` (alpha 2, 3x3 binomial) over backend x frame size."""

    params = [BACKENDS + [OPENCV, CUPYX], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, detect_fn(backend), gray_image(size))

    def time_detect(self, backend, size):
        self.op()

    def track_detect_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_detect_bandwidth.unit = "GB/s"


class DetectAlpha(Benchmark):
    """``detect`` at 3840x2160 with apron radius 0, 2 (the listing's) and 8 (CUDA tile of 32 rows)."""

    params = [BACKENDS, [0, 2, 8]]
    param_names = ["backend", "alpha"]

    def setup(self, backend, alpha):
        if backend != "cupy" and alpha != 2:
            not_supported(backend, "alpha sweep (its portable code is O(alpha) per pixel for any alpha)")
        self.op = Operation(backend, detect_fn(backend, alpha), gray_image("3840x2160"))

    def time_detect(self, backend, alpha):
        self.op()


class DetectBatch(Benchmark):
    """``detect`` on a batch of 8 frames of 640x480 (one launch for all frames on CuPy)."""

    params = [BACKENDS]
    param_names = ["backend"]

    def setup(self, backend):
        frames = np.stack([np.roll(gray_image("640x480"), 3 * t, axis=1) for t in range(8)])
        self.op = Operation(backend, detect_fn(backend), frames)

    def time_detect(self, backend):
        self.op()

    def track_frames_per_second(self, backend):
        return round(8 * self.op.bandwidth_gbs() * 1e9 / self.op.traffic_bytes, 1)

    track_frames_per_second.unit = "frames/s"


class DetectPaperSizes(Benchmark):
    """``detect`` on the paper's Table IV square sizes: speedup of each backend over NumPy vs pixels."""

    params = [BACKENDS, PAPER_SIZES]
    param_names = ["backend", "side"]

    def setup(self, backend, side):
        gray = gray_image("3840x2160")
        frame = np.tile(gray, (-(-side // gray.shape[0]), -(-side // gray.shape[1])))[:side, :side]
        self.op = Operation(backend, detect_fn(backend), np.ascontiguousarray(frame))

    def time_detect(self, backend, side):
        self.op()


class Canny(Benchmark):
    """``canny(gray, 50, 150)`` over backend x frame size; ``cv2.Canny`` is the exact peer."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, canny_fn(backend), gray_image(size))

    def time_canny(self, backend, size):
        self.op()


class Magnitude(Benchmark):
    """``magnitude(gx, gy)`` (exact integer square root) and ``direction_sector(gx, gy)``."""

    params = [BACKENDS, SIZE_NAMES, ["magnitude_l2", "magnitude_l1", "direction_sector"]]
    param_names = ["backend", "size", "function"]

    def setup(self, backend, size, function):
        with portcv.using("numpy"):
            gx, gy = (portcv.to_numpy(g) for g in portcv.edges.gradient(gray_image(size)))
        fn = {
            "magnitude_l2": lambda a, b: portcv.edges.magnitude(a, b),
            "magnitude_l1": lambda a, b: portcv.edges.magnitude(a, b, kind="l1"),
            "direction_sector": portcv.edges.direction_sector,
        }[function]
        self.op = Operation(backend, fn, gx, gy)

    def time_elementwise(self, backend, size, function):
        self.op()
