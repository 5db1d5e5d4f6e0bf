"""portcv: computer vision written once, bit-exact on NumPy, CuPy and JAX.

>>> import portcv
>>> portcv.use("numpy")                       # doctest: +ELLIPSIS
<portcv backend 'numpy'>
>>> with portcv.using("numpy"):
...     pass

Importing portcv imports neither CuPy nor JAX; a backend's framework is imported when that
backend is first used. Each domain (``portcv.filters``, ``portcv.detect``, ...) is a package
imported on first access, so ``import portcv`` stays light. :func:`portcv.verify` reruns the
shipped golden cases on this machine's backends and certifies that they give the shipped bits.
"""

from __future__ import annotations

import importlib
from typing import Any

from .backends import (
    Backend,
    BackendUnavailableError,
    asarray,
    available_backends,
    backend,
    register,
    to_numpy,
    use,
    using,
)

__version__ = "0.1.0"

#: The domain packages, imported on first attribute access (PEP 562).
DOMAINS = ("codec", "color", "data", "depth", "detect", "distance", "distributed", "draw", "edges", "filters", "motion", "recognize", "stream", "transform", "video", "volume")

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "asarray",
    "available_backends",
    "backend",
    "register",
    "to_numpy",
    "use",
    "using",
    "verify",
    *DOMAINS,
]


def __getattr__(name: str) -> Any:
    if name in DOMAINS:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name == "verify":  # the golden cases import every domain: only when asked for
        verify = importlib.import_module("._verify", __name__).verify
        globals()[name] = verify
        return verify
    raise AttributeError(f"module 'portcv' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(DOMAINS) | {"verify"})
