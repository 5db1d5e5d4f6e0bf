"""Shared machinery of the portcv asv suite: parameter values, inputs, synchronized timing.

Every class has a ``backend`` parameter. Its values are the portcv backends (:data:`BACKENDS`)
and, where the operation has one, a peer implementation: :data:`OPENCV` (``cv2`` on NumPy
arrays, on the host) and :data:`CUPYX` (``cupyx.scipy.ndimage`` on CuPy arrays). The parameter
lists are the same on every machine, so results from a laptop and from a GPU box line up; a
value that cannot run here raises ``NotImplementedError`` in ``setup``, which asv records as
skipped.

Inputs are made once per ``asv run`` by the shared :meth:`Benchmark.setup_cache` (asv keys a
setup cache by where the function is defined, so every subclass shares this one) and saved as
``.npy`` files in the working directory asv gives the benchmarks; each ``setup`` loads only the
size it needs, so ``peakmem_`` figures do not carry the other sizes.

asv_runner (0.3) re-runs ``setup`` before every timed call (asv#966), so each sample is one call
right after a setup. The frames a setup loads and the device copies it makes are therefore kept
for the life of the benchmark process (read-only, keyed by the frame): a repeated setup costs one
warm-up call, and the timed call sees the steady state a pipeline sees, not a fresh transfer and
allocation before every call.
"""

from __future__ import annotations

import functools
import importlib
import os
import statistics
from typing import Any, Callable

import numpy as np

import portcv
import portcv.backends


def _checkout_timer() -> Any:
    """This checkout's ``src/portcv/_timing.py``, loaded by file path: every commit asv measures
    is timed by the same code (the timer of the commit under test may not exist or may differ)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "src" / "portcv" / "_timing.py"
    spec = importlib.util.spec_from_file_location("portcv_benchmark_timing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The one timer (``portcv._timing`` of this checkout).
timing = _checkout_timer()

#: portcv backends; each runs portcv's own code.
BACKENDS = ["numpy", "jax", "cupy"]
#: Host peer: OpenCV on NumPy arrays (default OpenCV threading, as users get it).
OPENCV = "opencv"
#: GPU peer: cupyx.scipy.ndimage on CuPy arrays.
CUPYX = "cupyx"

#: Frame sizes by name ("WxH"); values are array shapes (H, W).
SIZES = {"640x480": (480, 640), "1920x1080": (1080, 1920), "3840x2160": (2160, 3840)}
SIZE_NAMES = list(SIZES)

# The portcv backend whose arrays a peer takes (and whose block() waits for it).
_ARRAYS_OF = {OPENCV: "numpy", CUPYX: "cupy"}
# The module a peer needs besides its array backend.
_PEER_MODULE = {OPENCV: "cv2", CUPYX: "cupyx.scipy.ndimage"}


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------
def array_backend(backend: str) -> str:
    """The portcv backend that holds the arrays of ``backend`` (a peer's, or its own)."""
    return _ARRAYS_OF.get(backend, backend)


def require(backend: str) -> portcv.Backend:
    """The loaded portcv backend behind ``backend``; ``NotImplementedError`` (asv: skip) if absent."""
    try:
        b = portcv.backends.get(array_backend(backend))
    except portcv.BackendUnavailableError as exc:
        raise NotImplementedError(f"backend {backend!r} unavailable: {exc}") from exc
    if backend in _PEER_MODULE:
        peer_module(backend)
    return b


def peer_module(backend: str) -> Any:
    """The module of peer ``backend`` (cv2, cupyx.scipy.ndimage); ``NotImplementedError`` if absent."""
    name = _PEER_MODULE[backend]
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise NotImplementedError(f"peer {backend!r} needs {name} ({exc})") from exc


# ids of the frames rgb_image and gray_image returned: lru-cached, they live as long as the
# process, so an id never names another array
_SHARED_FRAMES: set[int] = set()
# (backend, id of a shared frame) -> its device copy
_DEVICE_COPIES: dict[tuple[str, int], Any] = {}


def prepare(backend: str, array: np.ndarray) -> Any:
    """``array`` moved once to ``backend``'s device (skips the benchmark if it cannot run here).

    A frame returned by :func:`rgb_image` or :func:`gray_image` is moved once per process and
    its device copy reused by every later setup (benchmarks must not modify their inputs in
    place: the host frame is read-only, a CuPy copy cannot be); other arrays are moved each time.
    """
    b = require(backend)
    key = (b.name, id(array))
    if key in _DEVICE_COPIES:
        return _DEVICE_COPIES[key]
    with portcv.using(b.name):
        moved = portcv.asarray(array)
    if id(array) in _SHARED_FRAMES:
        _DEVICE_COPIES[key] = moved
    return moved


def run(backend: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under ``backend``, waited for (CuPy synchronize, JAX block_until_ready)."""
    with portcv.using(array_backend(backend)) as b:
        return b.block(fn(*args, **kwargs))


def nbytes(array: Any) -> int:
    if isinstance(array, (tuple, list)):  # several outputs (e.g. gradients' gx, gy)
        return sum(nbytes(a) for a in array)
    if not hasattr(array, "dtype"):  # a Python scalar (cv2.threshold's Otsu level)
        return np.asarray(array).nbytes
    return int(array.size) * np.dtype(array.dtype).itemsize


class Operation:
    """``fn`` bound to its inputs on one backend and warmed up; ``op()`` runs it to completion.

    The warm-up call in the constructor (that is, in ``setup``) keeps JIT compilation (JAX) and
    kernel compilation and loading (CuPy) out of the timed region.
    """

    def __init__(self, backend: str, fn: Callable, *arrays: np.ndarray) -> None:
        self.backend = backend
        self.fn = fn
        self.arrays = tuple(prepare(backend, a) for a in arrays)
        out = self()
        #: Compulsory memory traffic: every input byte read once, every output byte written once.
        self.traffic_bytes = sum(nbytes(a) for a in self.arrays) + nbytes(out)

    def __call__(self) -> Any:
        return run(self.backend, self.fn, *self.arrays)

    def median_s(self, *, min_calls: int = 3, max_calls: int = 100, budget_s: float = 0.5) -> float:
        """Median wall time (s) of one synchronized call: at least ``min_calls`` timed calls,
        more (up to ``max_calls``) while under ``budget_s`` (``portcv._timing.synced_s``)."""
        return statistics.median(timing.synced_s(self, min_calls=min_calls, max_calls=max_calls, budget_s=budget_s))

    def queued_s(self, *, calls: int, rounds: int = 5) -> float:
        """Seconds per call of ``calls`` back-to-back calls waited for once at the end, median of
        ``rounds`` (``portcv._timing.queued_s``): on a GPU the host queues the next call while the
        previous one's kernels run, so this is the larger of the host's dispatch and the GPU's work
        per call."""
        with portcv.using(array_backend(self.backend)) as b:
            return timing.queued_s(lambda: self.fn(*self.arrays), b.block, calls=calls, rounds=rounds)

    def bandwidth_gbs(self, *, min_calls: int = 3, max_calls: int = 100, budget_s: float = 0.5) -> float:
        """Achieved bandwidth: compulsory bytes / median wall time of one synchronized call, in GB/s."""
        seconds = self.median_s(min_calls=min_calls, max_calls=max_calls, budget_s=budget_s)
        return round(self.traffic_bytes / seconds / 1e9, 3)


def gpu_timing() -> Any:
    """``portcv._timing``, the package's one definition of how time is measured (GPU functions
    such as ``device_ms`` included). Kept as a function: the benchmarks that call it are
    versioned by their source."""
    return timing


def not_supported(backend: str, what: str) -> None:
    """Skip a parameter combination that ``backend`` has no implementation for."""
    raise NotImplementedError(f"{backend!r} has no {what}")


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
def _input_path(kind: str, size: str) -> str:
    return f"portcv_bench_{kind}_{size}.npy"


def _make_rgb(size: str) -> np.ndarray:
    h, w = SIZES[size]
    return portcv.data.synthetic_rgb(h, w, seed=0)


def _make_gray(rgb: np.ndarray) -> np.ndarray:
    with portcv.using("numpy"):
        return portcv.to_numpy(portcv.color.rgb_to_gray(rgb))


def make_inputs() -> None:
    """Save every size's RGB and gray input in the working directory (synthetic_rgb takes ~4 s at 4K)."""
    for size in SIZES:
        rgb = _make_rgb(size)
        np.save(_input_path("rgb", size), rgb)
        np.save(_input_path("gray", size), _make_gray(rgb))


def _shared(array: np.ndarray) -> np.ndarray:
    """``array`` made read-only and recorded as a frame whose device copies :func:`prepare` keeps."""
    array.flags.writeable = False
    _SHARED_FRAMES.add(id(array))
    return array


@functools.lru_cache(maxsize=None)
def rgb_image(size: str) -> np.ndarray:
    """``synthetic_rgb(h, w, seed=0)`` for ``size`` (H, W, 3 uint8 NumPy, read-only, loaded once
    per process): saved copy, or made now. ``.copy()`` it to modify it."""
    path = _input_path("rgb", size)
    return _shared(np.load(path) if os.path.exists(path) else _make_rgb(size))


@functools.lru_cache(maxsize=None)
def gray_image(size: str) -> np.ndarray:
    """The gray (weighted, NumPy) version of :func:`rgb_image` (H, W uint8 NumPy, read-only)."""
    path = _input_path("gray", size)
    return _shared(np.load(path) if os.path.exists(path) else _make_gray(_make_rgb(size)))


class Benchmark:
    """Base of every benchmark class: the shared input cache and a timeout that allows for JIT."""

    timeout = 180

    def setup_cache(self) -> None:
        make_inputs()

    setup_cache.timeout = 300
