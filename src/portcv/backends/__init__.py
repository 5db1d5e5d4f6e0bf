"""The array layer: a registry of backends and the active-backend switch.

A backend bundles an array-API namespace (``xp``) with the few things the array API does not
cover: moving arrays in and out, ``jit``, ``synchronize`` and device information. Frameworks are
imported on first use of their backend, never by ``import portcv`` (einops' rule: an array of a
framework can only exist if that framework was imported, so ``sys.modules`` tells us which
backends can own a given array without importing anything).

The active backend is a :class:`contextvars.ContextVar` over a process-wide default, so
``using()`` is safe across threads and asyncio tasks while ``use()`` changes what every new
thread sees.
"""

from __future__ import annotations

from ._registry import (
    asarray,
    available_backends,
    Backend,
    backend,
    BackendUnavailableError,
    cached_constant,
    get,
    owner_of,
    REFERENCE,
    refuse_lazy,
    register,
    registered,
    registered_backends,
    require_dtype,
    to_numpy,
    use,
    using,
)
from ._registry import _REGISTRY  # noqa: F401  (the registry itself, for tests that restore it)
from ._registry import __all__  # the public names are the registry's
from . import cupy, jax, numpy

for _builtin in (numpy.NumpyBackend, cupy.CupyBackend, jax.JaxBackend):
    register(_builtin())
del _builtin
