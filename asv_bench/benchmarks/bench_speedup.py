"""Speedups: portcv's backends against NumPy, OpenCV, cupyx and each other, per operation.

``Speedup.track_speedup(op, pair, mode)`` times two implementations of one operation in the same
process, on the same 1920 x 1080 frame, and returns how many times faster the first is than the
second (asv unit ``x``: above 1, the first is faster). The operations (``domain.call``) are the
public ones with a peer that computes the same result; their calls (and the peers' arguments)
are the other modules' ``*_fn`` factories, so a speedup and the plain timings measure the same
call. ``portcv bench --html`` turns the latest results of each machine into a landing page.

``pair`` is ``"A vs B"``. A and B are portcv backends (``numpy``, ``jax``, ``cupy``) or peers:
``opencv 1 thread`` and ``opencv all threads`` (``cv2`` on the host, ``cv2.setNumThreads(1)``
or OpenCV's default of every core; the machine's core count is in asv's machine file) and
``cupyx`` (``cupyx.scipy.ndimage`` on CuPy arrays, where it has the operation). ``numpy`` runs
the NumPy overrides as installed (their loops compiled with numba where the ``cpu`` extra is
there); ``numpy vectorized`` runs them with ``PORTCV_NUMBA=0``, the path without numba.

``mode`` says how the GPU sides (``cupy``, ``jax``, ``cupyx``) are timed:

- ``16-frame batch`` (the headline): per-frame time of one call on a stack of 16 frames (portcv
  backends take batches), or of 16 calls in a row (``cupyx``), measured between CUDA events
  (CuPy) or to ``block_until_ready`` (JAX). On the H100 machine a single synchronized call
  carries 20-40 us (CuPy) or 80-140 us (JAX) of host dispatch that a batch amortizes.
- ``single call``: one synchronized call on one frame, dispatch included (what an interactive
  call waits for).

The host sides (``numpy``, OpenCV) are timed one frame per call in both modes: a batch does not
change their per-frame time. A pair that cannot run on this machine (no GPU, no cupyx, an
operation cupyx lacks) raises ``NotImplementedError`` in ``setup``, which asv shows as n/a.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable

import numpy as np

import portcv

from ._common import CUPYX, OPENCV, Benchmark, array_backend, gray_image, peer_module, require, rgb_image
from .bench_color import binarize_auto_fn, histogram_fn, rgb_to_gray_fn
from .bench_edges import canny_fn
from .bench_filters import box_blur_fn, gaussian_blur_fn, median_filter_fn, sobel_fn
from .bench_transform import integral_fn, resize_fn

SIZE = "1920x1080"
BATCH = 16
MODES = ["16-frame batch", "single call"]
OPENCV_1 = "opencv 1 thread"
OPENCV_ALL = "opencv all threads"
NUMPY_VECTORIZED = "numpy vectorized"
GPU_SIDES = {"cupy", "jax", CUPYX}

#: op ("domain.call") -> (input kind, factory(backend) -> fn(frame), peers it has besides OpenCV)
OPS: dict[str, tuple[str, Callable[[str], Callable], tuple[str, ...]]] = {
    "color.rgb_to_gray": ("rgb", lambda b: rgb_to_gray_fn(b, "weighted"), ()),
    "color.histogram": ("gray", histogram_fn, ()),
    "color.binarize_auto otsu": ("gray", lambda b: binarize_auto_fn(b, "otsu"), ()),
    "filters.gaussian_blur k5": ("gray", lambda b: gaussian_blur_fn(b, 5), (CUPYX,)),
    "filters.box_blur k5": ("gray", lambda b: box_blur_fn(b, 5), (CUPYX,)),
    "filters.median_filter k5": ("gray", lambda b: median_filter_fn(b, 5), (CUPYX,)),
    "filters.sobel dx": ("gray", lambda b: sobel_fn(b, 1, 0, 3), (CUPYX,)),
    "edges.canny 50/150": ("gray", canny_fn, ()),
    "transform.integral": ("gray", lambda b: integral_fn(b, False), ()),
    "transform.resize 1/2 bilinear": ("gray", lambda b: resize_fn(b, scale=0.5), ()),
}

#: The pairs, first against second.
PAIRS = [
    "cupy vs numpy", "jax vs numpy", "cupy vs cupyx", "jax vs cupy",
    f"cupy vs {OPENCV_ALL}", f"jax vs {OPENCV_ALL}", f"numpy vs {OPENCV_ALL}",
    f"cupy vs {OPENCV_1}", f"jax vs {OPENCV_1}", f"numpy vs {OPENCV_1}",
    f"numpy vs {NUMPY_VECTORIZED}", f"{NUMPY_VECTORIZED} vs {OPENCV_ALL}",
]


def sides(pair: str) -> tuple[str, str]:
    first, second = pair.split(" vs ")
    return first, second


def _factory_name(side: str) -> str:
    """The name the ``*_fn`` factories and :func:`require` know a side by."""
    if side == NUMPY_VECTORIZED:
        return "numpy"
    return OPENCV if side.startswith("opencv") else side


def _frame(kind: str) -> np.ndarray:
    return rgb_image(SIZE) if kind == "rgb" else gray_image(SIZE)


def _wait(side: str) -> Callable[[Any], Any]:
    """A function that waits until its argument (the call's result) is computed."""
    if side == "jax":
        import jax

        return jax.block_until_ready
    return lambda out: out  # NumPy and OpenCV return finished arrays; CuPy is timed by events


class Side:
    """One side of a pair, bound to its input and warmed up: :meth:`per_frame_s` times it."""

    def __init__(self, op: str, side: str, mode: str) -> None:
        kind, factory, peers = OPS[op]
        name = _factory_name(side)
        if name == CUPYX and CUPYX not in peers:
            raise NotImplementedError(f"cupyx.scipy.ndimage has no {op}")
        b = require(name)  # NotImplementedError (n/a) without the backend or peer
        self.side, self.array_backend = side, array_backend(name)
        self.threads = 1 if side == OPENCV_1 else None
        self.numba = "0" if side == NUMPY_VECTORIZED else None  # PORTCV_NUMBA during its calls
        fn = factory(name)
        frame = _frame(kind)
        batched = mode == MODES[0] and side in GPU_SIDES
        self.frames = BATCH if batched else 1
        with portcv.using(b.name):
            if batched and side != CUPYX:  # portcv takes the stack as a batch
                x = portcv.asarray(np.stack([frame] * BATCH))
                self.call = lambda: fn(x)
            elif batched:  # cupyx filters one frame per call
                x = portcv.asarray(frame)
                self.call = lambda: [fn(x) for _ in range(BATCH)]
            else:
                x = portcv.asarray(frame)
                self.call = lambda: fn(x)
        self.wait = _wait(side)
        self.run_once()  # warm-up: compilation and first allocations are not timed

    def run_once(self) -> float:
        """Seconds of one synchronized call (CUDA events on CuPy, wall time elsewhere)."""
        cv2 = peer_module(OPENCV) if self.threads else None
        before = cv2.getNumThreads() if cv2 else None
        if cv2:
            cv2.setNumThreads(self.threads)
        numba_before = os.environ.get("PORTCV_NUMBA")
        if self.numba is not None:
            os.environ["PORTCV_NUMBA"] = self.numba
        try:
            with portcv.using(self.array_backend):
                if self.array_backend == "cupy":
                    import cupy

                    start, end = cupy.cuda.Event(), cupy.cuda.Event()
                    start.record()
                    self.call()
                    end.record()
                    end.synchronize()
                    return cupy.cuda.get_elapsed_time(start, end) / 1e3
                t0 = time.perf_counter()
                self.wait(self.call())
                return time.perf_counter() - t0
        finally:
            if cv2:
                cv2.setNumThreads(before)
            if self.numba is not None:
                if numba_before is None:
                    os.environ.pop("PORTCV_NUMBA", None)
                else:
                    os.environ["PORTCV_NUMBA"] = numba_before

    def per_frame_s(self, *, min_calls: int = 3, max_calls: int = 30, budget_s: float = 0.5) -> float:
        """Median seconds per frame over at least ``min_calls`` calls (more within ``budget_s``)."""
        times: list[float] = []
        while len(times) < min_calls or (len(times) < max_calls and sum(times) < budget_s):
            times.append(self.run_once())
        return statistics.median(times) / self.frames


class Speedup(Benchmark):
    """How many times faster the first of ``pair`` is than the second (module docstring)."""

    params = [list(OPS), PAIRS, MODES]
    param_names = ["op", "pair", "mode"]
    timeout = 600

    def setup(self, op, pair, mode):
        first, second = sides(pair)
        if mode == MODES[1] and not {first, second} & GPU_SIDES:
            # host against host: the modes are the same measurement; recorded once
            raise NotImplementedError("host pairs are timed once, under the batch mode")
        self.sides = (Side(op, first, mode), Side(op, second, mode))

    def track_speedup(self, op, pair, mode):
        first, second = (s.per_frame_s() for s in self.sides)
        return round(second / first, 4)

    track_speedup.unit = "x"
