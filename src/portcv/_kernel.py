"""``@kernel``: a named hot loop = one portable array-API version + optional backend overrides.

The portable version takes the array-API namespace first (``fn(xp, *arrays, **params)``). It is
the NumPy reference and, under ``jax.jit`` with the declared static parameters, the JAX path. A
backend *family* (``"cupy"``, ``"jax"``, ...; ``Backend.family``) may register an override (the
CuPy raw CUDA kernel, say); an override must return the same bits as the portable version, which
the test suite checks on every backend.

Each override declares what it supports (``supports=``, the way SciPy's ``xp_capabilities``
declares per-backend support); that one record feeds the support table of ``docs/backends.md``
(:func:`support_table`). An override may return ``NotImplemented`` for parameters it does not
handle; the portable version then runs, and that is never silent: it is counted
(:func:`fallback_counts`) and warned about once per kernel and backend with a
:class:`PortableFallbackWarning`, which users can silence with the :mod:`warnings` filters.

All parameters are keyword-only and static (Python scalars and tuples, hashable), so each
combination compiles once under ``jit``. The resolved implementation is cached per
(kernel, backend), as SciPy caches its delegated functions.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import textwrap
import threading
import warnings
from typing import Any, Callable, NamedTuple

from .backends import Backend, backend

__all__ = ["Kernel", "kernel", "KERNELS", "PortableFallbackWarning", "fallback_counts", "support_table"]

#: Every kernel by name, for introspection (docs support tables, tests).
KERNELS: dict[str, "Kernel"] = {}

_FALLBACKS: collections.Counter[tuple[str, str]] = collections.Counter()
_FALLBACKS_LOCK = threading.Lock()


class PortableFallbackWarning(RuntimeWarning):
    """A backend's override declined these parameters; the portable version ran instead."""


class Override(NamedTuple):
    fn: Callable
    #: What the override handles, in words (docs); outside it, it returns ``NotImplemented``.
    supports: str


class Kernel:
    def __init__(self, portable: Callable, name: str) -> None:
        self.portable = portable
        self.name = name
        self.overrides: dict[str, Override] = {}
        self._compiled: dict[str, Callable] = {}
        functools.update_wrapper(self, portable)

    def override(self, family: str, *, supports: str = "every input") -> Callable[[Callable], Callable]:
        """Decorator: register ``fn(*arrays, **params)`` as this kernel on the backend family
        ``family``; ``supports`` says on which parameters (elsewhere ``fn`` returns ``NotImplemented``)."""

        def register(fn: Callable) -> Callable:
            self.overrides[family] = Override(fn, supports)
            return fn

        return register

    def has_override(self, b: Backend) -> bool:
        """Whether backend ``b``'s family overrides this kernel."""
        return b.family in self.overrides

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
        override = self.overrides.get(b.family)
        if override is not None:
            result = override.fn(*arrays, **params)
            if result is not NotImplemented:
                return result
            _declined(self.name, b.name, override.supports, params)
        return self.portable_for(b)(*arrays, **params)

    def __repr__(self) -> str:
        return f"<portcv kernel {self.name!r} overrides={sorted(self.overrides)}>"


def _declined(kernel_name: str, backend_name: str, supports: str, params: dict) -> None:
    key = (kernel_name, backend_name)
    with _FALLBACKS_LOCK:
        _FALLBACKS[key] += 1
        first = _FALLBACKS[key] == 1
    if first:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()) if not isinstance(v, tuple) or len(v) < 8)
        warnings.warn(
            f"portcv kernel {kernel_name!r}: the {backend_name} override does not handle this call "
            f"({shown}; it supports {supports}); the portable version ran. Warned once per kernel and "
            "backend; portcv._kernel.fallback_counts() counts every time.",
            PortableFallbackWarning,
            stacklevel=3,
        )


def fallback_counts() -> dict[tuple[str, str], int]:
    """``{(kernel, backend): calls}`` whose override declined and the portable version ran."""
    with _FALLBACKS_LOCK:
        return dict(_FALLBACKS)


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


def kernels_of(fn: Callable | list[Callable], depth: int = 4) -> list[Kernel]:
    """The kernels a public function (or a class's methods, a list) calls: names in its code
    that are :class:`Kernel` objects, followed through portcv's helpers up to ``depth`` calls deep."""
    found: dict[str, Kernel] = {}
    seen: dict[Callable, int] = {}  # function -> shallowest level visited (order-independent)

    def visit(f: Callable, level: int) -> None:
        f = inspect.unwrap(f)
        if seen.get(f, depth + 1) <= level or level > depth or not inspect.isfunction(f):
            return
        seen[f] = level
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        except (OSError, TypeError, SyntaxError):
            return
        refs = []  # names and module attributes the code uses (not its docstrings)
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                refs.append(f.__globals__.get(n.id))
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                owner = f.__globals__.get(n.value.id)
                if inspect.ismodule(owner) or inspect.isclass(owner):
                    refs.append(getattr(owner, n.attr, None))
        for obj in refs:
            if callable(obj) and hasattr(obj, "__wrapped__") and not isinstance(obj, Kernel):
                obj = inspect.unwrap(obj)  # lru_cache-d helpers
            if isinstance(obj, Kernel):
                found[obj.name] = obj
            elif inspect.isfunction(obj) and obj.__module__.startswith("portcv.") and obj is not f:
                visit(obj, level + 1)

    for f in fn if isinstance(fn, list) else [fn]:
        visit(f, 0)
    return sorted(found.values(), key=lambda k: k.name)


def support_table(functions: list[tuple[str, Callable | list[Callable]]], families: tuple[str, ...] | None = None) -> str:
    """A Markdown table: for each public function, the kernels it runs and, per backend family
    (default: the families of the registered backends, in registration order), whether an
    override runs them and on which parameters (the portable version otherwise)."""
    if families is None:
        from .backends import registered, registered_backends

        families = tuple(dict.fromkeys(registered(name).family for name in registered_backends()))
    lines = [
        "| function | kernel | " + " | ".join(families) + " |",
        "|---|---|" + "---|" * len(families),
    ]
    for qualname, fn in functions:
        for k in kernels_of(fn):
            cells = []
            for family in families:
                o = k.overrides.get(family)
                cells.append("portable" if o is None else ("override" if o.supports == "every input" else f"override: {o.supports}"))
            lines.append(f"| `{qualname}` | `{k.name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
