"""CuPy on an NVIDIA GPU; hot loops run hand-written CUDA kernels, each ``.cu`` beside its launcher.

Kernels are compiled once per process and device with ``--fmad=false`` (CUDA would otherwise
contract ``a*b+c`` into FMA, which rounds once where the written code rounds twice, and change
float results; docs/bit-exactness.md) and C++17, and memoized by
(source file, template instantiation), as ``cupyx.scipy.ndimage`` memoizes its generated kernels.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from importlib import resources
from typing import Any, Callable

import numpy as np

from ._registry import Backend, BackendUnavailableError

NVRTC_OPTIONS = ("--std=c++17", "--fmad=false")


class CupyBackend(Backend):
    name = "cupy"
    install_hint = (
        "install CuPy for your CUDA version (pip install 'portcv[cuda12]' or 'portcv[cuda13]') "
        "on a machine with an NVIDIA GPU"
    )
    module_name = "cupy"
    overlaps_uploads = True
    first_call_compiles = True
    records_launches = True
    needs_gpu = True

    def _load(self) -> Any:
        try:
            import cupy
        except ImportError as exc:
            raise BackendUnavailableError(f"backend 'cupy' needs the cupy package ({exc}); {self.install_hint}") from exc
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDA driver missing or broken
            raise BackendUnavailableError(
                f"backend 'cupy' found no usable CUDA driver ({exc}); {self.install_hint}"
            ) from exc
        if count < 1:
            raise BackendUnavailableError(f"backend 'cupy' found no CUDA device; {self.install_hint}")
        import array_api_compat.cupy as xp

        return xp

    def owns(self, array: Any) -> bool:
        cupy = sys.modules.get("cupy")
        return cupy is not None and isinstance(array, cupy.ndarray)

    def from_numpy(self, array: np.ndarray) -> Any:
        import cupy

        return cupy.asarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return array.get()

    def synchronize(self) -> None:
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def device_key(self) -> Any:
        return self.name, current_device_id()

    def device_count(self) -> int:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())

    def device_scope(self, device: int | None) -> Any:
        import cupy

        return contextlib.nullcontext() if device is None else cupy.cuda.Device(int(device))

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        import cupyx

        return cupyx.empty_pinned(shape, dtype=dtype)

    def copy_to_host(self, array: Any, out: np.ndarray) -> None:
        array.get(out=out)

    def record(self, fn: Callable[[], Any], *inputs: Any) -> "RecordedLaunches":
        return RecordedLaunches(fn, inputs)

    @property
    def device(self) -> str:
        import cupy

        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        return f"cuda:{dev.id} ({name.decode() if isinstance(name, bytes) else name})"


#: The recording in progress on this thread (``active``), for :func:`device_constant`.
_recording = threading.local()


class RecordedLaunches:
    """``fn``'s launches recorded once as a CUDA graph; :meth:`replay` runs them with one launch.

    ``fn`` must only queue work on the current stream (no read back, no synchronization), and
    should have run once before (its kernels compiled, its tables cached). Its temporaries come
    from a private memory pool kept as long as this object, so the addresses the graph holds
    stay reserved: a first run on the recording stream fills the pool, the recorded run then
    takes the same blocks in the same order. The cached tables it reads through
    :func:`device_constant` are kept in ``kept``, as the cache may let them go. ``outputs`` is the recorded run's result, rewritten by each
    replay; ``inputs`` are the arrays ``fn`` reads, which :meth:`replay` refills. Hold ``lock``
    from a replay until its outputs are read.
    """

    def __init__(self, fn: Callable[[], Any], inputs: tuple) -> None:
        import cupy

        self.inputs = inputs
        self.lock = threading.Lock()
        self.kept: list = []  # cached device tables the graph reads (device_constant)
        self.outer_allocator = cupy.cuda.memory.get_allocator()
        self.capturing = False
        self._pool = cupy.cuda.MemoryPool()
        self._stream = cupy.cuda.Stream(non_blocking=True)
        _recording.active = self
        try:
            with cupy.cuda.using_allocator(self._pool.malloc), self._stream:
                fn()
                self._stream.synchronize()
                self._stream.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
                self.capturing = True
                try:
                    outputs = fn()
                except BaseException:
                    with contextlib.suppress(Exception):  # the capture is void; keep fn's error
                        self._stream.end_capture()
                    raise
                finally:
                    self.capturing = False
                graph = self._stream.end_capture()
        finally:
            _recording.active = None
        self.outputs = outputs
        self._graph = graph

    def replay(self, *values: Any) -> Any:
        """Copy ``values`` into the inputs (host or device arrays of their shapes and dtypes), run
        the recording on the current stream, and return ``outputs``."""
        import cupy

        for dst, src in zip(self.inputs, values, strict=True):
            if isinstance(src, cupy.ndarray):
                cupy.copyto(dst, src)
            else:  # host memory (or another framework's array, through the host)
                dst.set(np.ascontiguousarray(np.asarray(src)))
        self._graph.launch(cupy.cuda.get_current_stream())
        return self.outputs


def _shared_headers() -> Any:
    """Folder of the CUDA headers every kernel may include (``common.cuh``)."""
    return resources.files("portcv.backends")


@functools.lru_cache(maxsize=None)
def _source(module: str) -> str:
    """The CUDA source beside the Python module ``module``: ``portcv/filters/_median.cu`` for
    ``portcv.filters._median`` (launcher and kernel sit side by side, as in cupyx.scipy.ndimage)."""
    package, _, stem = module.rpartition(".")
    return resources.files(package).joinpath(f"{stem}.cu").read_text()


def current_device_id() -> int:
    import cupy

    return cupy.cuda.runtime.getDevice()


@functools.lru_cache(maxsize=None)
def _function(module: str, name_expression: str, device_id: int) -> Any:
    import cupy

    with resources.as_file(_shared_headers()) as include_dir:  # for #include "common.cuh"
        options = NVRTC_OPTIONS + (f"-I{include_dir}",)
        module_obj = cupy.RawModule(code=_source(module), options=options, name_expressions=(name_expression,))
        module_obj.compile()
    return module_obj.get_function(name_expression)


def cuda_function(module: str, name_expression: str) -> Any:
    """The compiled kernel ``name_expression`` (e.g. ``"portcv_rgb_to_gray<0>"``) from the CUDA
    source beside the launcher ``module`` (pass ``__name__``), compiled once per process and
    device."""
    return _function(module, name_expression, current_device_id())


@functools.lru_cache(maxsize=256)
def _constant_cache(values: tuple, dtype: str, device_id: int) -> Any:
    import cupy

    return cupy.asarray(np.asarray(values, dtype=dtype))


def device_constant(values: tuple, dtype: str = "int32") -> Any:
    """A small read-only device array (filter taps, tables), uploaded once and reused.

    Inside a :class:`RecordedLaunches` recording the array is also kept by the recording (its
    graph holds the address, which the cache may evict), an upload goes through the allocator
    outside the recording (the cache outlives the recording's private pool), and a cache miss
    while the stream is being captured raises (the upload would be recorded, not done).
    """
    recording = getattr(_recording, "active", None)
    if recording is None:
        return _constant_cache(values, dtype, current_device_id())
    import cupy

    misses = _constant_cache.cache_info().misses
    with cupy.cuda.using_allocator(recording.outer_allocator):
        array = _constant_cache(values, dtype, current_device_id())
    if _constant_cache.cache_info().misses != misses and recording.capturing:
        raise RuntimeError("device_constant: a table was uploaded while its stream was being captured")
    recording.kept.append(array)
    return array


@functools.lru_cache(maxsize=None)
def _sm_count(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device (queried once per device)."""
    return _sm_count(current_device_id())


def launch_1d(n_threads: int, block: int = 256) -> tuple[tuple[int], tuple[int]]:
    """Grid and block for ``n_threads`` threads in a grid-stride kernel."""
    grid = max(1, min((n_threads + block - 1) // block, 65535 * 8))
    return (grid,), (block,)
