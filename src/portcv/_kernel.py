"""``@kernel``: a named hot loop = one portable array-API version + optional backend overrides.

The portable version takes the array-API namespace first (``fn(xp, *arrays, **params)``). It is
the NumPy reference and, under ``jax.jit`` with the declared static parameters, the JAX path. A
backend may register an override (the CuPy raw CUDA kernel, say); an override must return the
same bits as the portable version, which the test suite checks on every backend. An override
may return ``NotImplemented`` for parameters it does not handle; the portable version then runs.

All parameters are keyword-only and static (Python scalars and tuples, hashable), so each
combination compiles once under ``jit``. The resolved implementation is cached per
(kernel, backend), as SciPy caches its delegated functions.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .backends import Backend, backend

__all__ = ["Kernel", "kernel", "KERNELS"]

#: Every kernel by name, for introspection (docs support tables, tests).
KERNELS: dict[str, "Kernel"] = {}


class Kernel:
    def __init__(self, portable: Callable, name: str) -> None:
        self.portable = portable
        self.name = name
        self.overrides: dict[str, Callable] = {}
        self._compiled: dict[str, Callable] = {}
        functools.update_wrapper(self, portable)

    def override(self, backend_name: str) -> Callable[[Callable], Callable]:
        """Decorator: register ``fn(*arrays, **params)`` as this kernel on ``backend_name``."""

        def register(fn: Callable) -> Callable:
            self.overrides[backend_name] = fn
            self._compiled.pop(backend_name, None)
            return fn

        return register

    def portable_for(self, b: Backend) -> Callable:
        """The portable version bound to ``b``'s namespace and compiled with ``b.jit``."""
        compiled = self._compiled.get(b.name)
        if compiled is None:
            xp = b.xp
            portable = self.portable

            def bound(*arrays: Any, **params: Any) -> Any:
                return portable(xp, *arrays, **params)

            bound.__name__ = f"{self.name}_{b.name}"
            self._compiled[b.name] = compiled = _jit_with_static_kwargs(b, bound)
        return compiled

    def __call__(self, *arrays: Any, **params: Any) -> Any:
        b = backend()
        override = self.overrides.get(b.name)
        if override is not None:
            result = override(*arrays, **params)
            if result is not NotImplemented:
                return result
        return self.portable_for(b)(*arrays, **params)

    def __repr__(self) -> str:
        return f"<portcv kernel {self.name!r} overrides={sorted(self.overrides)}>"


def _jit_with_static_kwargs(b: Backend, fn: Callable) -> Callable:
    """``b.jit`` with every keyword argument static (kernels take arrays positionally)."""
    cache: dict[tuple, Callable] = {}

    def call(*arrays: Any, **params: Any) -> Any:
        key = tuple(sorted(params))
        jitted = cache.get(key)
        if jitted is None:
            jitted = cache[key] = b.jit(fn, static_argnames=key)
        return jitted(*arrays, **params)

    return call


def kernel(name: str) -> Callable[[Callable], Kernel]:
    """Declare the portable version of the hot loop called ``name``."""

    def wrap(fn: Callable) -> Kernel:
        if name in KERNELS:
            raise ValueError(f"kernel {name!r} is declared twice")
        k = Kernel(fn, name)
        KERNELS[name] = k
        return k

    return wrap
