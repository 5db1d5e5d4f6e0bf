"""CuPy on an NVIDIA GPU; hot loops run hand-written CUDA kernels, each ``.cu`` beside its launcher.

Kernels are compiled once per process and device with ``--fmad=false`` (CUDA would otherwise
contract ``a*b+c`` into FMA and change float results; DESIGN.md §4) and C++17, and memoized by
(source file, template instantiation), as ``cupyx.scipy.ndimage`` memoizes its generated kernels.
"""

from __future__ import annotations

import functools
import sys
from importlib import resources
from typing import Any

import numpy as np

from . import Backend, BackendUnavailableError

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

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        import cupyx

        return cupyx.empty_pinned(shape, dtype=dtype)

    def copy_to_host(self, array: Any, out: np.ndarray) -> None:
        array.get(out=out)

    @property
    def device(self) -> str:
        import cupy

        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        return f"cuda:{dev.id} ({name.decode() if isinstance(name, bytes) else name})"


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
    """A small read-only device array (filter taps, tables), uploaded once and reused."""
    return _constant_cache(values, dtype, current_device_id())


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
