"""Clusters for portcv: one worker per GPU or per core, each set to a backend by a plugin.

Nothing here imports CUDA in the calling process: a CUDA context made before the workers start
would put every worker on GPU 0. Each GPU worker is pinned by ``CUDA_VISIBLE_DEVICES`` (rotated,
as dask-cuda does), so inside the worker its GPU is device 0.
"""

from __future__ import annotations

import contextlib
import importlib.util
import numbers
import os
import re
import shutil
import subprocess
from typing import Any, Iterator

from .. import _validate, backends

#: glibc malloc settings distributed's nanny puts in every worker's environment
#: (``MALLOC_TRIM_THRESHOLD_=65536``). Setting any of them turns off glibc's dynamic mmap
#: threshold, so every large temporary of the NumPy kernels is mmapped, faulted in and unmapped
#: again, several times slower than with none set (docs/benchmarks.md). portcv's workers run
#: with glibc's defaults (the trade-off: freed memory returns to the OS later).
MALLOC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

#: A ``CUDA_VISIBLE_DEVICES`` entry: an index, or a GPU / MIG UUID as ``nvidia-smi -L`` lists them.
_DEVICE = re.compile(r"\d+|(GPU|MIG)-[0-9A-Za-z/-]+")


def backend_name(backend: Any, name: str = "backend", *, optional: bool = False) -> str | None:
    """A registered backend's name (``None`` passes when ``optional``), checked here without loading it.

    Loading would import the framework (and may create a CUDA context) in the calling process;
    the workers load it. An unknown name fails here, not as a per-task error or a worker that
    never starts.
    """
    from ..backends import registered_backends

    if backend is None and optional:
        return None
    if not isinstance(backend, str):
        raise TypeError(f"{name} must be a backend name (str), got {type(backend).__name__}")
    if backend not in registered_backends():
        raise ValueError(f"{name}: unknown backend {backend!r}; registered backends are {registered_backends()}")
    return backend


class _PortcvWorkerMethods:
    """The body of :class:`PortcvWorker`; the class itself derives from distributed's
    ``WorkerPlugin``, so it is made on first access (importing this module imports no dask)."""

    name = "portcv"

    def __init__(self, backend: str = "numpy", *, warmup: bool = True) -> None:
        if not isinstance(warmup, bool):
            raise TypeError(f"warmup must be a bool, got {type(warmup).__name__}")
        self.backend = backend_name(backend)
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
        ``'numpy'``, ``'cupy'``, ``'jax'`` or a registered backend name (an unknown name is a
        ``ValueError`` here, not a worker that fails to start).
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


def _device_list(devices: Any) -> list[str]:
    """``devices`` (``"0,1"``, ``[0, 1]``, GPU UUIDs) as ``CUDA_VISIBLE_DEVICES`` entries, checked."""
    if isinstance(devices, str):
        items = [d.strip() for d in devices.split(",")]
    elif isinstance(devices, (list, tuple)):
        items = []
        for d in devices:
            if isinstance(d, bool) or not isinstance(d, (numbers.Integral, str)):
                raise TypeError(f"devices must hold GPU indices or UUIDs, got {type(d).__name__} in {devices!r}")
            items.append(str(int(d)) if isinstance(d, numbers.Integral) else d.strip())
    else:
        raise TypeError(f"devices must be a string like '0,1' or a list of GPU indices, got {type(devices).__name__}")
    if not items or not all(_DEVICE.fullmatch(d) for d in items):
        raise ValueError(f"devices must be GPU indices (e.g. '0,1') or GPU/MIG UUIDs, got {devices!r}")
    return items


def _visible_gpus(devices: Any) -> list[str]:
    if devices is not None:
        return _device_list(devices)
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


def _check_installed(backend: str, gpu: bool) -> None:
    """A CPU backend's package must be importable here (its workers run on this host); found, not imported."""
    from ..backends import BackendUnavailableError

    registered = backends.registered(backend)
    module = registered.module_name
    if not gpu and module and importlib.util.find_spec(module) is None:
        raise BackendUnavailableError(f"backend {backend!r} needs the {module} package, which is not installed "
                                      f"here; {registered.install_hint}")


#: More workers (or threads a worker) than one machine can start: refused before anything starts.
MAX_LOCAL_WORKERS = 4096


def local_cluster(backend: str = "numpy", *, devices: Any = None, n_workers: int | None = None,
                  threads_per_worker: int | None = None, processes: bool = True, **kwargs: Any) -> Any:
    """A local ``dask.distributed`` cluster whose workers run portcv on ``backend``.

    GPU backends (``'cupy'``, or any backend with ``devices`` given) get one worker process per
    device, pinned by ``CUDA_VISIBLE_DEVICES``: dask-cuda's ``LocalCUDACluster`` when it is
    installed, otherwise a ``SpecCluster`` of nannies doing the same. CPU backends get one worker
    per core with one thread each, and the NumPy backend's thread pool of each gets
    ``cores // n_workers`` threads (``PORTCV_NUMPY_THREADS``; ``env=`` overrides). Workers start
    with glibc's own malloc settings, not the ``MALLOC_TRIM_THRESHOLD_`` distributed sets (it makes the NumPy kernels several times slower; see
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
        computes). Each at most 4,096.
    processes : bool
        Worker processes (default) or threads in this process (CPU backends only). Threads share
        this process: the plugin sets *this process's* default backend (``portcv.use``), and
        ``env=`` (per-process variables) is refused.
    **kwargs
        Passed to the cluster class (``memory_limit``, ``dashboard_address``, ...).

    Returns
    -------
    distributed.LocalCluster or distributed.SpecCluster
        Use it with ``distributed.Client(cluster)``.

    Raises
    ------
    ValueError
        An unknown ``backend``, ``n_workers`` or ``threads_per_worker`` below 1, ``devices``
        that are not GPU indices or UUIDs, ``processes=False`` with a GPU backend or with ``env=``.
    portcv.BackendUnavailableError
        A CPU backend whose package is not installed (the workers could not start).
    RuntimeError
        A GPU backend and no visible GPU.
    """
    backend_name(backend)
    if n_workers is not None:
        n_workers = _validate.integer(n_workers, "n_workers", low=1, high=MAX_LOCAL_WORKERS)
    if threads_per_worker is not None:
        threads_per_worker = _validate.integer(threads_per_worker, "threads_per_worker", low=1,
                                               high=MAX_LOCAL_WORKERS)
    if not isinstance(processes, bool):
        raise TypeError(f"processes must be a bool, got {type(processes).__name__}")
    if devices is not None:
        devices = _device_list(devices)
    gpu = backends.registered(backend).needs_gpu or devices is not None
    if gpu and not processes:
        raise ValueError(f"processes=False (threads in this process) is for CPU backends; backend {backend!r} "
                         "runs one worker process per GPU")
    if not processes and "env" in kwargs:
        raise ValueError("env= sets worker processes' environment; with processes=False the workers are threads "
                         "of this process (set os.environ instead)")
    _check_installed(backend, gpu)
    from distributed import LocalCluster

    plugin = __getattr__("PortcvWorker")(backend)
    if not gpu:
        cores = os.cpu_count() or 1
        workers = n_workers or cores
        options: dict[str, Any] = {}
        if processes:
            # The NumPy overrides spread bands over a thread pool of every core (PORTCV_NUMPY_THREADS):
            # n workers on one host share the cores instead of each taking all of them.
            options["env"] = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                              "PORTCV_NUMPY_THREADS": str(max(1, cores // workers)), **kwargs.pop("env", {})}
        with _glibc_malloc_defaults():
            return LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker or 1,
                                processes=processes, plugins={plugin}, **options, **kwargs)
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
