"""NumPy on the CPU: the reference backend every other backend must match bit-for-bit."""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import numpy as np

from ._registry import Backend


class NumpyBackend(Backend):
    name = "numpy"
    install_hint = "NumPy is a core dependency: reinstall portcv"
    module_name = "numpy"
    runs_on_host = True

    def _load(self) -> Any:
        import array_api_compat.numpy as xp

        return xp

    def owns(self, array: Any) -> bool:
        return isinstance(array, np.ndarray)

    def from_numpy(self, array: np.ndarray) -> Any:
        return array

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)


# -- host helpers of the NumPy overrides ----------------------------------------------------
#: The options of every loop the NumPy overrides compile with Numba (their ``_x_numba.py``
#: twins): compiled on first use per process and signature and cached on disk (``cache=True``),
#: the GIL released so that bands of rows run on :func:`run_bands`' threads (Numba's own
#: parallel layers are not safe to enter from several threads at once, which Dask's threads and
#: users' thread pools do), and no ``fastmath``: the portable code's arithmetic, bit for bit.
NUMBA_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "boundscheck": False, "error_model": "numpy"}


def compiled() -> bool:
    """Whether the NumPy overrides run their loops compiled with Numba: numba is installed (the
    ``cpu`` extra) and ``PORTCV_NUMBA`` is not ``0`` (``0`` runs the vectorized NumPy overrides,
    the path without numba). numba itself is imported by the first compiled loop that runs."""
    import os

    return os.environ.get("PORTCV_NUMBA", "1") != "0" and _numba_installed()


@functools.cache
def _numba_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


_POOL: Any = None
_POOL_LOCK = threading.Lock()


def host_threads() -> int:
    """Threads a NumPy override spreads its bands over: the cores this process may run on, or
    ``PORTCV_NUMPY_THREADS`` (1 runs every band on the calling thread)."""
    import os

    env = os.environ.get("PORTCV_NUMPY_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def host_pool() -> Any:
    """The NumPy overrides' one thread pool (:func:`host_threads` workers), made on first use."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                from concurrent.futures import ThreadPoolExecutor

                _POOL = ThreadPoolExecutor(max_workers=host_threads(), thread_name_prefix="portcv-numpy")
    return _POOL


def run_bands(fn: Any, items: list, *, threads: int | None = None) -> None:
    """Call ``fn(item)`` for every item, spread over ``threads`` (default :func:`host_threads`).

    NumPy (and SciPy's ndimage) release the GIL inside their loops, so bands of rows run in
    parallel. Each item must write only its own part of a buffer the override allocated; the
    results therefore do not depend on which thread ran what, or in which order.
    """
    threads = min(host_threads() if threads is None else threads, len(items))
    if threads <= 1:
        for item in items:
            fn(item)
        return
    pool = host_pool()

    def run(chunk: list) -> None:
        for item in chunk:
            fn(item)

    # Contiguous chunks, one per thread; the calling thread takes the first.
    chunks = [items[i * len(items) // threads:(i + 1) * len(items) // threads] for i in range(threads)]
    futures = [pool.submit(run, chunk) for chunk in chunks[1:]]
    run(chunks[0])
    for f in futures:
        f.result()


def row_bands(rows: int, row_elements: int, *, planes: int = 1, target: int = 1 << 18) -> list[tuple[int, int, int]]:
    """``(plane, start, stop)`` bands of about ``target`` elements (rows of ``row_elements``),
    so that a band's temporaries stay in the core's cache."""
    band = max(1, min(rows, target // max(1, row_elements)))
    return [(p, r, min(rows, r + band)) for p in range(planes) for r in range(0, rows, band)]


_SCRATCH = threading.local()


def scratch(name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A work buffer of the calling thread, reused from call to call (contents undefined).

    A band's temporaries (hundreds of KiB each) allocated afresh come, depending on malloc's
    state, from pages the kernel must map and zero on first touch: measured, that made a band's
    arithmetic 6x slower than the same operations into reused buffers. One buffer per name and
    thread, grown when too small (so at most the largest band's size is held); callers copy what
    they keep into their own output.
    """
    buffers = getattr(_SCRATCH, "buffers", None)
    if buffers is None:
        buffers = _SCRATCH.buffers = {}
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    buf = buffers.get(name)
    if buf is None or buf.size < size:
        buf = buffers[name] = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)
