"""Test harness: a session-scoped ``backend`` fixture over the backends under test.

``--backends numpy,cupy,jax`` picks them; by default every registered backend plus the test-only
``numpy:readonly`` (NumPy arrays that refuse writes: catches in-place updates that would break
under JAX, as array-api-extra's test suite does). A backend that cannot run here is a visible
skip with the reason, never a pass.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from typing import Any

# JAX would otherwise take 75% of GPU memory at start, starving CuPy in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import portcv
from portcv.backends import BackendUnavailableError, register
from portcv.backends.numpy import NumpyBackend

settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("gpu", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("PORTCV_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


class ReadonlyNumpyBackend(NumpyBackend):
    """NumPy whose inputs are read-only views: portable code must never write in place."""

    name = "numpy:readonly"
    # Its own family: NumPy's overrides (which may write into buffers of their own) do not run,
    # so the portable versions are what this backend tests.
    family = "numpy:readonly"

    def asarray(self, array: Any) -> Any:
        view = np.asarray(portcv.to_numpy(array)).view()
        view.flags.writeable = False
        return view


register(ReadonlyNumpyBackend(), replace=True)

try:
    import cv2
except ImportError:  # the peer tests skip themselves
    pass
else:
    # The tests compare with OpenCV's sequential results. OpenCV 4.13's 8-bit 5 x 5 Gaussian (the
    # 1-4-6-4-1 row pass) races between its threads on small images (opencv/opencv#28370): on
    # the 16- and 32-core GPU hosts its border rows changed from call to call, IPP on or off.
    cv2.setNumThreads(1)

DEFAULT_BACKENDS = ["numpy", "numpy:readonly", "jax", "cupy"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends",
        default=None,
        help="comma-separated backends to test (default: numpy,numpy:readonly,jax,cupy); "
        "unavailable ones are skipped with the reason",
    )


def _requested(config: pytest.Config) -> list[str]:
    opt = config.getoption("--backends")
    return [b.strip() for b in opt.split(",") if b.strip()] if opt else DEFAULT_BACKENDS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", _requested(metafunc.config), indirect=True, scope="session")


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    """The name of a backend that can run here (skips otherwise)."""
    name = request.param
    try:
        portcv.backends.get(name)
    except BackendUnavailableError as exc:
        pytest.skip(f"backend {name!r} unavailable: {exc}")
    return name


#: What ``-m "not slow"`` (the quick subset; README.md gives its time; CI runs everything) leaves
#: out: every JAX case, because JAX compiles each shape on the CPU (the ``jax`` backend, and tests
#: named for JAX or for Pallas' interpreter), marked here by that rule; the video modules'
#: examples (real files through PyAV); and the slowest other tests (2 s or more each on a 2-core
#: machine: real video files, command-line processes, soak runs), marked ``@pytest.mark.slow``
#: where they are defined.
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = getattr(item, "originalname", item.name)
        on_jax = (callspec is not None and callspec.params.get("backend") == "jax") or "jax" in name \
            or "interpret_mode" in name
        if on_jax or (
                type(item).__name__ == "DoctestItem" and item.name.startswith("portcv.video.")):
            item.add_marker(slow)
    # The video modules' examples write and read real files through PyAV (the `io` extra).
    if importlib.util.find_spec("av") is None:
        skip = pytest.mark.skip(reason="PyAV not installed (pip install 'portcv[io]')")
        for item in items:
            if type(item).__name__ == "DoctestItem" and item.name.startswith(
                    ("portcv.video.", "portcv.distributed._videos.")):
                item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs() -> Any:
    """After each test module, JAX's compiled programs are dropped: most serve one module, and a
    process that kept every one grew to 5.5 GB by the end of the suite (half that with this, for
    about a tenth more compile time: the programs modules share are compiled again)."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    gc.collect()
    _return_freed_memory()


def _return_freed_memory() -> None:
    """glibc keeps freed heap pages: a big array a test freed would otherwise stay resident."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core, at most 4 (each holds up to about 1.5 GB)."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for name in _requested(config):
        try:
            lines.append(f"portcv backend {name}: {portcv.backends.get(name).device}")
        except Exception as exc:  # noqa: BLE001 - report, the fixture skips
            lines.append(f"portcv backend {name}: unavailable ({exc})")
    return lines
