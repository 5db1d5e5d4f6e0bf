"""Clusters for portcv: one worker per GPU or per core, each set to a backend by a plugin.

Nothing here imports CUDA in the calling process: a CUDA context made before the workers start
would put every worker on GPU 0. Each GPU worker is pinned by ``CUDA_VISIBLE_DEVICES`` (rotated,
as dask-cuda does), so inside the worker its GPU is device 0.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from typing import Any, Iterator

#: glibc malloc settings distributed's nanny puts in every worker's environment
#: (``MALLOC_TRIM_THRESHOLD_=65536``). Setting any of them turns off glibc's dynamic mmap
#: threshold, so every large temporary of the NumPy kernels is mmapped, faulted in and unmapped
#: again: measured on a 2-core machine, motion over a 30-frame 640x480 clip took 0.5-0.7 s with
#: none set, 2.3 s with a 64 MiB trim threshold and 5.0 s with 65536. portcv's workers run
#: with glibc's defaults (the trade-off: freed memory returns to the OS later).
MALLOC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

#: Backends that run on GPUs (one worker per device).
GPU_BACKENDS = ("cupy",)


class _PortcvWorkerMethods:
    """The body of :class:`PortcvWorker`; the class itself derives from distributed's
    ``WorkerPlugin``, so it is made on first access (importing this module imports no dask)."""

    name = "portcv"

    def __init__(self, backend: str = "numpy", *, warmup: bool = True) -> None:
        self.backend = backend
        self.warmup = warmup

    def setup(self, worker: Any = None) -> None:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import numpy as np

        import portcv

        portcv.use(self.backend)
        if self.warmup:
            image = np.zeros((32, 32), np.uint8)
            portcv.backend().block(portcv.filters.gaussian_blur(image, ksize=3, sigma=0))

    def __repr__(self) -> str:
        return f"PortcvWorker({self.backend!r})"


_PORTCV_WORKER_DOC = """A ``dask.distributed`` worker plugin: sets the worker's portcv backend and warms it up.

    Dask runs tasks in worker threads, which see only the process default backend (not a
    ``portcv.using`` block of the submitting code), so each worker calls ``portcv.use(backend)``.
    It also turns JAX's GPU memory preallocation off (several workers, or JAX beside CuPy, share a
    device), and runs one small filter so the first real task does not pay the import and
    compilation.

    Parameters
    ----------
    backend : str
        ``'numpy'``, ``'cupy'``, ``'jax'`` or a registered backend name.
    warmup : bool
        Run a small Gaussian blur at setup (default True).

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> plugin = pdist.PortcvWorker("numpy")
    >>> plugin.backend
    'numpy'

    With any client (several hosts, dask-jobqueue, dask-mpi)::

        client.register_plugin(pdist.PortcvWorker("cupy"))
    """

_CLASSES: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    if name == "PortcvWorker":
        if name not in _CLASSES:
            from distributed import WorkerPlugin

            cls = type("PortcvWorker", (_PortcvWorkerMethods, WorkerPlugin), {"__doc__": _PORTCV_WORKER_DOC,
                                                                             "__module__": __name__})
            _CLASSES[name] = cls
        return _CLASSES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def worker_backend() -> str:
    """The backend the current process runs portcv on (what a task on a worker sees)."""
    import portcv

    return portcv.backend().name


@contextlib.contextmanager
def _glibc_malloc_defaults() -> Iterator[None]:
    """Nannies made inside start their workers without distributed's malloc settings.

    A nanny reads ``distributed.nanny.pre-spawn-environ`` when it is made (a ``None`` value
    unsets a variable) and copies it into this process's environment before each spawn, so a
    value an earlier cluster left there (distributed's own 65536) is dropped as well.
    """
    import dask

    for name in MALLOC_VARIABLES:
        if os.environ.get(name) == str(dask.config.get(f"distributed.nanny.pre-spawn-environ.{name}", None)):
            os.environ.pop(name)
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": None for name in MALLOC_VARIABLES}):
        yield


def _visible_gpus(devices: Any) -> list[str]:
    if devices is not None:
        items = devices.split(",") if isinstance(devices, str) else [str(d) for d in devices]
        return [d.strip() for d in items if d.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [d.strip() for d in visible.split(",") if d.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:  # count GPUs without creating a CUDA context here
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(listing.splitlines()) if line.startswith("GPU ")]


def _rotated(devices: list[str], i: int) -> str:
    """Worker ``i``'s ``CUDA_VISIBLE_DEVICES``: its own device first, then the others (no repeats)."""
    order = devices[i:] + devices[:i]
    return ",".join(dict.fromkeys(order))


def local_cluster(backend: str = "numpy", *, devices: Any = None, n_workers: int | None = None,
                  threads_per_worker: int | None = None, processes: bool = True, **kwargs: Any) -> Any:
    """A local ``dask.distributed`` cluster whose workers run portcv on ``backend``.

    GPU backends (``'cupy'``, or any backend with ``devices`` given) get one worker process per
    device, pinned by ``CUDA_VISIBLE_DEVICES``: dask-cuda's ``LocalCUDACluster`` when it is
    installed, otherwise a ``SpecCluster`` of nannies doing the same. CPU backends get one worker
    per core with one thread each, and the NumPy backend's thread pool of each gets
    ``cores // n_workers`` threads (``PORTCV_NUMPY_THREADS``; ``env=`` overrides). Workers start
    with glibc's own malloc settings, not the ``MALLOC_TRIM_THRESHOLD_`` distributed sets (it makes the NumPy kernels 4-10x slower; see
    :data:`MALLOC_VARIABLES`). Every worker gets the :class:`PortcvWorker` plugin.

    Parameters
    ----------
    backend : str
        The backend of every worker.
    devices : str or list, optional
        GPUs to use, e.g. ``"0,1"`` (default: every visible GPU). ``"0,0"`` puts two workers on
        GPU 0: a plumbing test, never a scaling measurement.
    n_workers, threads_per_worker : int, optional
        Defaults: CPU: cores and 1; GPU: one per device and 2 (one file decodes while another
        computes).
    processes : bool
        Worker processes (default) or threads in this process (CPU only).
    **kwargs
        Passed to the cluster class (``memory_limit``, ``dashboard_address``, ...).

    Returns
    -------
    distributed.LocalCluster or distributed.SpecCluster
        Use it with ``distributed.Client(cluster)``.
    """
    from distributed import LocalCluster

    plugin = __getattr__("PortcvWorker")(backend)
    gpu = backend in GPU_BACKENDS or devices is not None
    if not gpu:
        cores = os.cpu_count() or 1
        workers = n_workers or cores
        # The NumPy overrides spread bands over a thread pool of every core (PORTCV_NUMPY_THREADS):
        # n workers on one host share the cores instead of each taking all of them.
        env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "PORTCV_NUMPY_THREADS": str(max(1, cores // workers)),
               **kwargs.pop("env", {})}
        with _glibc_malloc_defaults():
            return LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker or 1,
                                processes=processes, plugins={plugin}, env=env if processes else None, **kwargs)
    gpus = _visible_gpus(devices)
    if not gpus:
        raise RuntimeError(f"backend {backend!r} needs GPUs, but none is visible (no CUDA_VISIBLE_DEVICES, "
                           "no nvidia-smi); pass devices='0,1', or use backend='numpy'")
    count = n_workers or len(gpus)
    threads = threads_per_worker or 2
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
    if LocalCUDACluster is not None and len(set(gpus)) == len(gpus) and count == len(gpus):
        with _glibc_malloc_defaults():
            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(gpus), threads_per_worker=threads,
                                    plugins={plugin}, env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, **kwargs)
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {
        f"gpu-{i}": {"cls": Nanny, "options": {
            "nthreads": threads, "plugins": {plugin},
            "env": {"CUDA_VISIBLE_DEVICES": _rotated(gpus, i % len(gpus)), "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
            **{k: v for k, v in kwargs.items() if k in ("memory_limit", "death_timeout")}}}
        for i in range(count)
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": kwargs.get("dashboard_address", ":0")}}
    with _glibc_malloc_defaults():
        return SpecCluster(workers=workers, scheduler=scheduler, name="portcv-gpu")
