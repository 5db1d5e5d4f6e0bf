"""portcv.transform: integral, resize, pyramid (+ pack_pyramid), spline_filter and zoom on gray
frames, with OpenCV and SciPy peers.

The OpenCV peers compute the same bits: ``cv2.integral`` / ``cv2.integral2`` and ``cv2.resize``
with ``INTER_LINEAR`` / ``INTER_LINEAR_EXACT`` / ``INTER_NEAREST``; the pyramid peer resizes the
same level sizes with ``INTER_LINEAR_EXACT`` (what ``CascadeClassifier::detectMultiScale`` does
before scanning). ``track_*_bandwidth`` is compulsory bytes (input read once + output written
once) over the median synchronized call time, to set against the device's copy bandwidth.
Targets on an H100: ``integral`` of a 3840x2160 frame under 0.2 ms.

``spline_filter`` / ``zoom``: Table 4 of Lin et al.'s video-parallelization article, QCIF
176x144 enlarged x7 to 1232x1008 by cubic B-spline, with the prefilter (the article's "IIR"
column, :class:`ZoomPrefilter`) and the interpolation (its "FIR" column,
:class:`ZoomInterpolation`, ``zoom(coefficients, prefilter=False)``) timed apart, one frame and
a batch of 64 (``track_*_us_per_frame``), plus 1920x1080 x2 to 3840x2160. Peers in the same run:
``scipy`` (scipy.ndimage.spline_filter / zoom with ``mode="mirror", grid_mode=True``, float64, one
call per frame), ``cupyx`` (cupyx.scipy.ndimage, the same calls on the GPU) and, for the whole
zoom, ``opencv`` (``cv2.resize(INTER_CUBIC)``: Keys' cubic convolution, not a B-spline, so a speed
peer only).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import portcv
from portcv._resize_plans import pyramid_plan

from ._common import (
    BACKENDS,
    CUPYX,
    OPENCV,
    SIZE_NAMES,
    SIZES,
    Benchmark,
    Operation,
    _shared,
    gray_image,
    nbytes,
    not_supported,
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



# -------------------------------------------------------------------------------- spline zoom
SCIPY = "scipy"
#: Table 4's task (one QCIF frame x7, and a batch of 64 of them) and HD to 4K, by name:
#: (frames, zoom factor); the frames are QCIF unless the name says 1920x1080.
ZOOM_CASES = {"176x144 x7": (1, 7), "176x144 x7 batch64": (64, 7), "1920x1080 x2": (1, 2)}
ZOOM_CASE_NAMES = list(ZOOM_CASES)


@functools.lru_cache(maxsize=None)
def zoom_frames(case: str) -> np.ndarray:
    """The case's uint8 input, ``(H, W)`` or ``(64, 144, 176)`` (read-only, made once a process):
    the 640x480 gray frame reduced to QCIF with OpenCV's bilinear rule, a batch of it shifted."""
    frames, _ = ZOOM_CASES[case]
    if case.startswith("1920x1080"):
        return gray_image("1920x1080")
    with portcv.using("numpy"):
        qcif = portcv.to_numpy(portcv.transform.resize(gray_image("640x480"), size=(176, 144)))
    if frames > 1:
        qcif = np.stack([np.roll(qcif, 3 * i, axis=1) for i in range(frames)])
    return _shared(np.ascontiguousarray(qcif))


@functools.lru_cache(maxsize=None)
def zoom_coefficients(case: str, floating: bool = False) -> np.ndarray:
    """``spline_filter`` of the case's frames (int32 Q16, or float64 values for the peers that
    interpolate float coefficients; NumPy, read-only, made once a process)."""
    with portcv.using("numpy"):
        coef = portcv.to_numpy(portcv.transform.spline_filter(zoom_frames(case)))
    return _shared(coef / float(2**16) if floating else coef)


def _per_frame(fn: Callable) -> Callable:
    """``fn`` on each frame of an ``(H, W)`` frame or ``(T, H, W)`` batch (scipy's functions
    filter every axis, so a batch is a loop, as a user of them would write it)."""
    def call(x):
        if x.ndim == 2:
            return fn(x)
        return [fn(f) for f in x]

    return call


def _scipy_ndimage(backend: str) -> Any:
    if backend == SCIPY:
        try:
            import scipy.ndimage
        except ImportError as exc:
            raise NotImplementedError(f"peer 'scipy' needs scipy ({exc})") from exc
        return scipy.ndimage
    return peer_module(CUPYX)


def zoom_op(backend: str, case: str, stage: str) -> Operation:
    """The Operation timing ``stage`` (``"zoom"``, ``"prefilter"`` or ``"interpolation"``) of
    ``case`` on ``backend`` or a peer."""
    u = ZOOM_CASES[case][1]
    frames = zoom_frames(case)
    if backend == OPENCV:
        if stage != "zoom":
            not_supported(backend, f"B-spline {stage} (INTER_CUBIC is one pass of cubic convolution)")
        cv2 = peer_module(OPENCV)
        return Operation(backend, _per_frame(lambda f: cv2.resize(f, None, fx=u, fy=u, interpolation=cv2.INTER_CUBIC)),
                         frames)
    if backend in (SCIPY, CUPYX):
        ndimage = _scipy_ndimage(backend)
        arrays = "numpy" if backend == SCIPY else backend  # the Operation's arrays (and the wait)
        if stage == "prefilter":
            return Operation(arrays, _per_frame(lambda f: ndimage.spline_filter(f, 3, mode="mirror")), frames)
        if stage == "interpolation":
            return Operation(arrays, _per_frame(lambda c: ndimage.zoom(
                c, u, order=3, mode="mirror", grid_mode=True, prefilter=False, output=np.uint8)),
                zoom_coefficients(case, floating=True))
        return Operation(arrays, _per_frame(lambda f: ndimage.zoom(f, u, order=3, mode="mirror", grid_mode=True)),
                         frames)
    if stage == "prefilter":
        return Operation(backend, portcv.transform.spline_filter, frames)
    if stage == "interpolation":
        # check=False: the kernels alone (the coefficients come from spline_filter, in range).
        return Operation(backend, functools.partial(portcv.transform.zoom, factor=u, prefilter=False, check=False),
                         zoom_coefficients(case))
    return Operation(backend, functools.partial(portcv.transform.zoom, factor=u), frames)


class _ZoomStage(Benchmark):
    params = [BACKENDS + [SCIPY, CUPYX], ZOOM_CASE_NAMES]
    param_names = ["backend", "case"]
    timeout = 600
    stage = "zoom"

    def setup(self, backend, case):
        self.op = zoom_op(backend, case, self.stage)
        self.frames = ZOOM_CASES[case][0]

    def _us_per_frame(self) -> float:
        return round(1e6 * self.op.median_s(min_calls=5, budget_s=1.0) / self.frames, 1)


class Zoom(_ZoomStage):
    """``zoom(frames, u)`` (cubic B-spline: prefilter + interpolation) over backend x case."""

    params = [BACKENDS + [SCIPY, CUPYX, OPENCV], ZOOM_CASE_NAMES]

    def time_zoom(self, backend, case):
        self.op()

    def track_zoom_us_per_frame(self, backend, case):
        return self._us_per_frame()

    track_zoom_us_per_frame.unit = "us"


class ZoomPrefilter(_ZoomStage):
    """``spline_filter(frames)``: Table 4's IIR column (scipy: its recursive filters, float64)."""

    stage = "prefilter"

    def time_prefilter(self, backend, case):
        self.op()

    def track_prefilter_us_per_frame(self, backend, case):
        return self._us_per_frame()

    track_prefilter_us_per_frame.unit = "us"


class ZoomInterpolation(_ZoomStage):
    """``zoom(coefficients, u, prefilter=False)``: Table 4's FIR column, the 4x4 B-spline taps."""

    stage = "interpolation"

    def time_interpolation(self, backend, case):
        self.op()

    def track_interpolation_us_per_frame(self, backend, case):
        return self._us_per_frame()

    track_interpolation_us_per_frame.unit = "us"
