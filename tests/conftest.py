"""Test harness: a session-scoped ``backend`` fixture over the backends under test.

``--backends numpy,cupy,jax`` picks them; by default every registered backend plus the test-only
``numpy:readonly`` (NumPy arrays that refuse writes: catches in-place updates that would break
under JAX, as array-api-extra's test suite does). A backend that cannot run here is a visible
skip with the reason, never a pass.
"""

from __future__ import annotations

import importlib.util
import os
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The video module's examples write and read real files through PyAV (the `io` extra).
    if importlib.util.find_spec("av") is None:
        skip = pytest.mark.skip(reason="PyAV not installed (pip install 'portcv[io]')")
        for item in items:
            if type(item).__name__ == "DoctestItem" and item.name.startswith("portcv.video."):
                item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for name in _requested(config):
        try:
            lines.append(f"portcv backend {name}: {portcv.backends.get(name).device}")
        except Exception as exc:  # noqa: BLE001 - report, the fixture skips
            lines.append(f"portcv backend {name}: unavailable ({exc})")
    return lines
