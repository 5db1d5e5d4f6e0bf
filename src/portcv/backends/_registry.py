"""The registry of backends, the :class:`Backend` base class and the active-backend switch.

The backends' own modules (``numpy.py``, ``cupy.py``, ``jax.py``) subclass :class:`Backend`
from here; the package ``__init__`` registers them (imports run one way: no backend module
imports the package)."""

from __future__ import annotations

import collections
import contextlib
import contextvars
import sys
import threading
from typing import Any, Callable, Iterator

import numpy as np

__all__ = [
    "require_dtype",
    "Backend",
    "BackendUnavailableError",
    "register",
    "registered_backends",
    "registered",
    "get",
    "use",
    "using",
    "backend",
    "available_backends",
    "asarray",
    "to_numpy",
    "REFERENCE",
]

#: The backend every other one must match bit-for-bit (tables compare against it).
REFERENCE = "numpy"


class BackendUnavailableError(ImportError):
    """A known backend cannot run here: its package or its device is missing."""


class Backend:
    """Base class of a portcv backend.

    Subclasses set :attr:`name` and :attr:`install_hint` and implement :meth:`_load` (import the
    framework, check the device, return the array-API namespace) and :meth:`owns`.
    Everything else has a sensible default for a host-memory, eager framework.
    """

    name: str = ""
    #: What to tell a user whose machine lacks this backend.
    install_hint: str = ""
    #: Top-level module whose presence in ``sys.modules`` means arrays of it can exist.
    module_name: str = ""
    #: Kernel overrides are registered per family (``"numpy"``, ``"cupy"``, ``"jax"``), not per
    #: name: a backend that is JAX on another device subclasses :class:`~portcv.backends.jax.JaxBackend`
    #: and runs JAX's overrides and policies. Empty means the backend's own name.
    family: str = ""

    # -- policy: what portcv's algorithms ask of a backend instead of its name ----------------
    #: Programs are traced with static shapes (JAX): variable-length results use fixed
    #: capacities learned from earlier frames, and every capacity is a compilation.
    static_shapes: bool = False
    #: ``jit`` compiles whole programs (JAX): a chain of kernels is worth compiling as one.
    compiles_programs: bool = False
    #: The first call of a kernel compiles it (NVRTC on CuPy, XLA on JAX): timings say so.
    first_call_compiles: bool = False
    #: Host -> device uploads can run on a copy stream beside the compute (CuPy): video
    #: detection overlaps the next frame's upload with this frame's work.
    overlaps_uploads: bool = False
    #: Arrays live in the host's memory (NumPy, JAX on the CPU): reading a count back costs
    #: nothing, and every temporary competes with the rest of the process for RAM.
    runs_on_host: bool = False
    #: NumPy is faster on this backend's arrays (JAX on the CPU: host memory, and XLA:CPU's
    #: gathers are slower than NumPy's): whole host-bound scans (the MCT detector's) run there.
    numpy_runs_faster: bool = False
    #: A fixed chain of launches can be recorded once and replayed with one launch (CuPy: a CUDA
    #: graph, :meth:`record`): per-frame scans whose cost is the host's launches use it.
    records_launches: bool = False
    #: Its arrays live only on CUDA GPUs (CuPy): a cluster runs one worker process per visible
    #: GPU, pinned by ``CUDA_VISIBLE_DEVICES``. (JAX picks its device when it loads: False.)
    needs_gpu: bool = False

    def __init__(self) -> None:
        if not self.family:
            self.family = self.name
        self._xp: Any = None
        self._error: BackendUnavailableError | None = None
        self._lock = threading.Lock()

    # -- loading ----------------------------------------------------------------------------
    def _load(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def load(self) -> "Backend":
        """Import the framework and check the device; raise :class:`BackendUnavailableError`."""
        if self._xp is None:
            with self._lock:
                if self._xp is None and self._error is None:
                    try:
                        self._xp = self._load()
                    except BackendUnavailableError as exc:
                        self._error = exc
                    except Exception as exc:  # an import that fails for any reason
                        self._error = BackendUnavailableError(
                            f"backend {self.name!r} failed to load ({type(exc).__name__}: {exc}); "
                            f"{self.install_hint}"
                        )
        if self._error is not None:
            raise self._error
        return self

    def record(self, fn: Callable[[], Any], *inputs: Any) -> Any:
        """``fn``'s launches recorded for replay (where :attr:`records_launches`): an object with
        ``replay(*values)`` (copies ``values`` into ``inputs``, the arrays ``fn`` reads, then runs
        the recording), ``outputs`` (``fn``'s result, rewritten by each replay) and ``lock``."""
        raise NotImplementedError(f"backend {self.name!r} does not record launches")

    def is_available(self) -> bool:
        try:
            self.load()
        except BackendUnavailableError:
            return False
        return True

    @property
    def xp(self) -> Any:
        """The array-API namespace of this backend."""
        return self.load()._xp

    # -- arrays -----------------------------------------------------------------------------
    def owns(self, array: Any) -> bool:
        """Whether ``array`` is a native array of this backend (must not import anything)."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray) -> Any:
        return self.xp.asarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def asarray(self, array: Any) -> Any:
        """Return ``array`` as an array of this backend, moving it from another backend."""
        self.load()
        if self.owns(array):
            return array
        return self.from_numpy(to_numpy(array))

    def constant(self, array: np.ndarray) -> Any:
        """``array`` (host) as a concrete array of this backend that may be kept across calls
        (:func:`cached_constant`); backends that trace programs make it outside the trace."""
        return self.asarray(array)

    # -- execution --------------------------------------------------------------------------
    def jit(self, fn: Callable, static_argnames: tuple[str, ...] = ()) -> Callable:
        """Compile ``fn`` for this backend; identity for eager frameworks."""
        return fn

    def synchronize(self) -> None:
        """Wait until queued device work is finished (for timing)."""

    def block(self, result: Any) -> Any:
        """Wait until ``result`` is computed, then return it (for timing)."""
        self.synchronize()
        return result

    def device_key(self) -> Any:
        """Hashable key of where this backend's arrays live now: device copies are cached per key
        (CuPy adds the current device; the others have one)."""
        return self.name

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
        """A host array in page-locked memory for fast device -> host copies, or ``None`` where
        the backend has no such memory (then :meth:`to_numpy` is the way back)."""
        return None

    def copy_to_host(self, array: Any, out: np.ndarray) -> None:
        """Copy ``array`` into the host array ``out`` (a slice of :meth:`empty_pinned`)."""
        out[...] = self.to_numpy(array)

    def join_padded(self, x: Any, axis: int, left: Any, right: Any, border: str, value: int) -> Any:
        """``concat([left, x, right])`` along ``axis`` done the backend's fastest way, or ``None``
        for the plain concatenation (``_border.pad_axis``; ``left``/``right`` may be ``None``)."""
        return None

    @property
    def pallas_usable(self) -> bool:
        """Whether JAX Pallas kernels (Triton lowering) compile and run on this backend's device:
        portcv's Pallas overrides ask this first and give way to their XLA versions otherwise."""
        return False

    def device_count(self) -> int:
        """How many devices this backend can put arrays on (``device_scope`` takes 0 to count - 1)."""
        return 1

    def device_scope(self, device: int | None) -> Any:
        """A context in which this backend's new arrays and launches go to device ``device``
        (``None``: the current one)."""
        if device is not None and int(device) != 0:
            raise ValueError(f"devices: backend {self.name!r} has one device (0), got {device!r}")
        return contextlib.nullcontext()

    @property
    def device(self) -> str:
        return "cpu"

    def __repr__(self) -> str:
        return f"<portcv backend {self.name!r}>"


_REGISTRY: dict[str, Backend] = {}
_REGISTRY_LOCK = threading.Lock()
_default_name = "numpy"
_active: contextvars.ContextVar[str | None] = contextvars.ContextVar("portcv_backend", default=None)


def register(backend_obj: Backend, *, replace: bool = False) -> Backend:
    """Add a backend to the registry under ``backend_obj.name``.

    Third parties subclass :class:`Backend` and register it; ``portcv.use(name)`` then selects it.
    """
    if not isinstance(backend_obj, Backend):
        raise TypeError(f"backend must be a portcv.backends.Backend, got {type(backend_obj).__name__}")
    if not backend_obj.name or not isinstance(backend_obj.name, str):
        raise ValueError("backend.name must be a non-empty string")
    with _REGISTRY_LOCK:
        if backend_obj.name in _REGISTRY and not replace:
            raise ValueError(f"a backend named {backend_obj.name!r} is already registered; pass replace=True")
        _REGISTRY[backend_obj.name] = backend_obj
    return backend_obj


def registered_backends() -> list[str]:
    """Names of every registered backend, available here or not."""
    return list(_REGISTRY)


def registered(name: str) -> Backend:
    """The backend registered as ``name``, not loaded (its framework is not imported): for what a
    backend declares (``needs_gpu``, ``module_name``, ``install_hint``) before it runs anywhere."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; registered backends are {registered_backends()}") from None


def get(name: str | Backend) -> Backend:
    """The backend called ``name``, loaded; clear errors for unknown or unavailable ones."""
    if isinstance(name, Backend):
        if _REGISTRY.get(name.name) is not name:
            raise ValueError(f"backend {name.name!r} is not registered; call portcv.backends.register() first")
        return name.load()
    if not isinstance(name, str):
        raise TypeError(f"backend name must be a str, got {type(name).__name__}")
    try:
        b = _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown backend {name!r}; registered backends are {registered_backends()}"
        ) from None
    return b.load()


def use(name: str) -> Backend:
    """Set the process-wide default backend (what threads without a ``using`` block see)."""
    global _default_name
    b = get(name)
    _default_name = b.name
    return b


@contextlib.contextmanager
def using(name: str) -> Iterator[Backend]:
    """Switch the backend inside a ``with`` block (per thread and per asyncio task)."""
    b = get(name)
    token = _active.set(b.name)
    try:
        yield b
    finally:
        _active.reset(token)


def backend() -> Backend:
    """The active backend."""
    name = _active.get()
    return get(name if name is not None else _default_name)


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this machine (imports them)."""
    return [name for name, b in list(_REGISTRY.items()) if b.is_available()]


def owner_of(array: Any) -> Backend | None:
    """The registered backend whose native array type ``array`` is, without importing any."""
    if isinstance(array, np.ndarray):
        return _REGISTRY.get("numpy")
    for b in list(_REGISTRY.values()):
        if b.module_name and b.module_name not in sys.modules:
            continue
        try:
            if b.owns(array):
                return b
        except Exception:  # a broken third-party backend must not break conversion
            continue
    return None


def to_numpy(array: Any) -> np.ndarray:
    """Copy (or view) any backend's array as a NumPy array on the host."""
    b = owner_of(array)
    if b is None:
        refuse_lazy(array)
        try:
            out = np.asarray(array)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"cannot make an array of a ragged {type(array).__name__} ({exc})") from None
        if out.dtype.kind in "OUSVM":  # None, strings, arbitrary objects, dates
            raise TypeError(f"expected an array (NumPy, CuPy, JAX) or numbers, got {type(array).__name__}"
                            + (f" of dtype {out.dtype}" if isinstance(array, (list, tuple)) else ""))
        return out
    return b.to_numpy(array)


def refuse_lazy(array: Any) -> None:
    """A dask array (or dask-backed xarray) is no backend's array: computing it here whole would defeat it."""
    top = type(array).__module__.split(".")[0]
    lazy = top == "dask" or (top == "xarray" and getattr(array, "chunks", None) is not None)
    if lazy:
        raise TypeError(
            f"portcv ops take in-memory arrays (NumPy, CuPy, JAX), got a lazy {type(array).__name__}; "
            "run the op tile by tile with portcv.distributed.filter_image(array, op, **params), "
            "or call .compute() first if the image fits in memory"
        )


def asarray(array: Any) -> Any:
    """Move ``array`` (any backend, or anything NumPy accepts) to the active backend."""
    return backend().asarray(array)


def require_dtype(array: Any, dtype: Any, what: str) -> Any:
    """``array`` if its dtype is ``dtype``; else a ``RuntimeError`` (at trace time under JAX).

    Kernels whose exactness needs an intermediate of a given width (int64 or float64 sums, the
    FFT convolution) call this on it. NumPy and CuPy always honour 64-bit dtypes; JAX does only
    with ``jax_enable_x64``, which the JAX backend turns on when it loads. If a user turns it off
    again, JAX silently computes in 32 bits and returns wrong pixels: this raises instead.
    """
    if np.dtype(array.dtype) != np.dtype(dtype):
        raise RuntimeError(
            f"{what} needs a {np.dtype(dtype)} intermediate but got {np.dtype(array.dtype)}: JAX computes in "
            "32 bits unless jax_enable_x64 is on (portcv turns it on when the jax backend loads; do not turn "
            "it off while using portcv)"
        )
    return array


_CONSTANTS: "collections.OrderedDict[Any, Any]" = collections.OrderedDict()
_CONSTANTS_LOCK = threading.Lock()
_CONSTANTS_KEPT = 256


def cached_constant(key: Any, build: Callable[[], np.ndarray]) -> Any:
    """``build()`` (a host array: a weight table, a projection matrix) as an array of the active
    backend, built and copied once per hashable ``key`` and device (the last 256 are kept).

    Kernels that take the same small table on every call read it from here instead of copying it
    from the host on every call (host time and a transfer queued per call). The copy is queued
    on the stream current at the first call: a caller on another stream must not use it before
    that stream has run it (portcv's own multi-stream paths do not use these tables)."""
    b = backend()
    full_key = (b.device_key(), key)
    with _CONSTANTS_LOCK:
        if full_key in _CONSTANTS:
            _CONSTANTS.move_to_end(full_key)
            return _CONSTANTS[full_key]
    value = b.constant(build())
    with _CONSTANTS_LOCK:
        _CONSTANTS[full_key] = value
        while len(_CONSTANTS) > _CONSTANTS_KEPT:
            _CONSTANTS.popitem(last=False)
    return value
