"""JAX under ``jit``, on whatever device JAX picks (GPU when jax[cuda] is installed).

The portable array-API code is traced as it is; parameters that shape the computation are
static arguments, so each (shape, parameters) pair compiles once.

Loading this backend turns on ``jax_enable_x64``: exact integer results need int64 (squared
integral images, large histograms, packed indices), and without it JAX silently truncates
64-bit integers to 32 bits. Code of your own that relies on JAX's 32-bit defaults should pass
explicit dtypes.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from ._registry import Backend, BackendUnavailableError

#: XLA options of every program portcv compiles (``jax.jit``'s ``compiler_options``).
#: ``xla_gpu_graph_min_graph_size=1``: XLA:GPU runs a program of fewer than 5 kernels (its default
#: threshold) as separate launches and larger ones as one CUDA graph; each separate launch costs
#: tens of microseconds of host time, so every program is a graph (small programs' synchronized
#: latency drops by a third to a half: docs/benchmarks.md, "Figures behind the kernels' choices"). Scheduling
#: only: the kernels and their bits are the same.
COMPILER_OPTIONS = {"xla_gpu_graph_min_graph_size": 1}


def jit(fn: Callable, static_argnames: tuple[str, ...] = ()) -> Callable:
    """``jax.jit`` with :data:`COMPILER_OPTIONS`: how every portcv program is compiled for JAX.

    JAX accepts compiler options only on a top-level program, and portcv's kernels are also
    called inside jitted programs (a user's, portcv's cascade scan and motion chain), where they
    are inlined: a call with a traced argument goes to a plain ``jax.jit`` of ``fn``, and so does
    one that JAX refuses as nested (a call inside a trace with only constant arguments). JAX
    releases before ``compiler_options`` (0.4.35) get the plain ``jax.jit``. The returned
    function is a wrapper: it has none of the jitted function's methods (``lower``, ...).
    """
    import jax

    nested = jax.jit(fn, static_argnames=static_argnames)
    try:
        top = jax.jit(fn, static_argnames=static_argnames, compiler_options=COMPILER_OPTIONS)
    except TypeError:  # no compiler_options in this JAX
        return nested
    tracer, leaves = jax.core.Tracer, jax.tree_util.tree_leaves

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        # Arrays come positionally (keyword arguments are static tuples and scalars, not
        # flattened here: that cost a few microseconds a call); a tracer elsewhere still ends
        # in the nested jit through JAX's refusal below.
        if any(isinstance(leaf, tracer) for leaf in leaves(args)) or any(
            isinstance(value, tracer) for value in kwargs.values()
        ):
            return nested(*args, **kwargs)
        try:
            return top(*args, **kwargs)
        except ValueError as exc:
            if "top-level" not in str(exc):
                raise
            return nested(*args, **kwargs)

    return call


class _Namespace:
    """``jax.numpy`` as the portable code's ``xp``, with one change: ``take`` gathers without
    jnp's bounds masks.

    ``jnp.take`` defaults to ``mode='fill'``: every gathered element is compared with the axis
    bounds and selected against a fill value, which in the cascade's stage evaluation cost
    about a fifth of the GPU time. Portable code never gathers out of bounds (NumPy, the
    reference, would raise), so the masks decide nothing: negative indices still wrap as in
    NumPy, then XLA's plain gather (``mode='clip'``) reads the same elements.
    """

    def __init__(self, jnp: Any) -> None:
        self._jnp = jnp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jnp, name)

    def take(self, x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
        jnp = self._jnp
        indices = jnp.asarray(indices)
        if jnp.issubdtype(indices.dtype, jnp.signedinteger):
            n = x.size if axis is None else x.shape[axis]
            indices = jnp.where(indices < 0, indices + n, indices)
        return jnp.take(x, indices, axis=axis, mode="clip")


class JaxBackend(Backend):
    name = "jax"
    install_hint = "install JAX (pip install 'portcv[jax]', or jax[cuda13] for the GPU)"
    module_name = "jax"
    static_shapes = True
    compiles_programs = True
    first_call_compiles = True

    def _load(self) -> Any:
        try:
            import jax
            import jax.numpy as jnp
        except ImportError as exc:
            raise BackendUnavailableError(f"backend 'jax' needs the jax package ({exc}); {self.install_hint}") from exc
        jax.config.update("jax_enable_x64", True)
        jax.devices()  # fails early, with JAX's own message, if no platform initializes
        return _Namespace(jnp)

    @property
    def runs_on_host(self) -> bool:  # type: ignore[override]
        """Whether JAX's default device is the CPU."""
        import jax

        return jax.devices()[0].platform == "cpu"

    @property
    def pallas_usable(self) -> bool:  # type: ignore[override]
        """On a GPU whose JAX still lowers Pallas Triton kernels (:func:`pallas_triton_usable`)."""
        return not self.runs_on_host and pallas_triton_usable()

    def device_count(self) -> int:
        import jax

        return len(jax.devices())

    def device_scope(self, device: int | None) -> Any:
        import jax

        if device is None:
            return contextlib.nullcontext()
        devs = jax.devices()
        if int(device) >= len(devs):
            raise ValueError(f"devices: JAX has {len(devs)} device(s), got {device!r}")
        return jax.default_device(devs[int(device)])

    @property
    def numpy_runs_faster(self) -> bool:  # type: ignore[override]
        """On the CPU: JAX's arrays are host memory, and NumPy's scans beat XLA:CPU's there."""
        return self.runs_on_host

    def owns(self, array: Any) -> bool:
        jax = sys.modules.get("jax")
        return jax is not None and isinstance(array, jax.Array)

    def from_numpy(self, array: np.ndarray) -> Any:
        import jax

        return jax.device_put(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def constant(self, array: np.ndarray) -> Any:
        """A device copy made outside any trace: inside a caller's ``jax.jit`` a plain
        ``device_put`` would give a tracer, which must not outlive that trace in a cache."""
        import jax

        with jax.ensure_compile_time_eval():
            return jax.device_put(array)

    def jit(self, fn: Callable, static_argnames: tuple[str, ...] = ()) -> Callable:
        return jit(fn, static_argnames)

    def device_key(self) -> Any:
        """The name and ``jax.default_device`` now (``None``: the first device), so that device
        copies made inside ``with jax.default_device(d)`` are cached per device."""
        import jax

        return self.name, str(jax.config.jax_default_device)

    def synchronize(self) -> None:
        """JAX waits per array, not per queue: time with :meth:`block` on the result."""

    def block(self, result: Any) -> Any:
        import jax

        return jax.block_until_ready(result)

    def join_padded(self, x: Any, axis: int, left: Any, right: Any, border: str, value: int) -> Any:
        """Integer and boolean pads as an OR of ``lax.pad``-ed pieces (they do not overlap), a
        constant border as one ``lax.pad``: XLA fuses pads, reverses and slices into the consumer
        but emits a ``concatenate`` as a slow kernel of its own (this more than halves a 4K Gaussian's
        GPU time: docs/benchmarks.md, "Figures behind the kernels' choices")."""
        if np.dtype(x.dtype).kind not in "iub":
            return None
        import jax.numpy as jnp
        from jax import lax

        before = 0 if left is None else left.shape[axis]
        after = 0 if right is None else right.shape[axis]
        total = before + x.shape[axis] + after

        def placed(piece: Any, start: int, fill: Any = 0) -> Any:
            config = [(0, 0, 0)] * x.ndim
            config[axis] = (start, total - start - piece.shape[axis], 0)
            return lax.pad(piece, jnp.asarray(fill, dtype=x.dtype), config)

        if border == "constant":
            return placed(x, before, value)
        out = placed(x, before)
        if left is not None:
            out = out | placed(left, 0)
        if right is not None:
            out = out | placed(right, total - after)
        return out

    @property
    def device(self) -> str:
        import jax

        d = jax.devices()[0]
        return f"{d.platform}:{d.id} ({d.device_kind})"


#: The start of JAX's warning (0.11) that Pallas' Triton backend, which portcv's GPU kernels in
#: Pallas use, is deprecated.
PALLAS_TRITON_DEPRECATED = "The Pallas Triton backend is deprecated"


@contextlib.contextmanager
def quiet_pallas_triton() -> Iterator[None]:
    """Hide JAX's deprecation warning of Pallas' Triton backend, and only it: it is addressed to
    whoever writes Pallas kernels (portcv), not to portcv's users, who cannot act on it. JAX
    lowers a kernel when the program that holds it is first called, so this wraps that call;
    inside a user's own ``jax.jit`` the lowering happens at the user's call, where it still shows."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PALLAS_TRITON_DEPRECATED, category=DeprecationWarning)
        yield


@functools.cache
def pallas_triton_usable() -> bool:
    """Whether this JAX still compiles and runs a Pallas Triton kernel on its default device.
    portcv's Pallas kernels (convolve3d's direct method, the joint bilateral filter and DCBF,
    the zoom's interpolation, histograms) ask first: the backend is deprecated, and once JAX removes it (or makes the deprecation an
    error) they give way to their XLA versions, the same bits. Probed once, with a one-tile copy."""
    import jax
    import jax.numpy as jnp

    try:
        import jax.experimental.pallas as pl
        import jax.experimental.pallas.triton as plgpu
    except ImportError:
        return False

    def add_one(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = x_ref[...] + 1

    probe = pl.pallas_call(add_one, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.int32),
                           compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1))
    # Eagerly, even when called while a program is traced (a tracer could not be read back).
    with quiet_pallas_triton(), jax.ensure_compile_time_eval():
        try:
            return bool((np.asarray(jax.jit(probe)(jnp.zeros((16, 128), jnp.int32))) == 1).all())
        except Exception:  # noqa: BLE001 (no Triton lowering here, for whatever reason: use XLA)
            return False


def host_call(kernel: Any, *arrays: Any, same_shape_as: str | None = None, **params: Any) -> Any:
    """``kernel`` run by its NumPy version through ``jax.pure_callback``, inside ``jit`` too: for
    JAX on the CPU, whose arrays already live in host memory, where XLA:CPU's form of an
    operation is much slower than NumPy's. The bits are the same by the NumPy version's own
    tests (its override against the portable code).

    The result's shape and dtype come from a trace of the portable version, or, with
    ``same_shape_as=dtype``, are the first array's shape in that dtype (for portable versions
    that cannot be traced). Under ``vmap`` the callback gets the batch as a leading axis
    (``vmap_method="expand_dims"``), which portcv's kernels treat as frames of their own."""
    return _host_program(kernel, same_shape_as, tuple(sorted(params.items())))(*arrays)


@functools.lru_cache(maxsize=None)
def _host_program(kernel: Any, same_shape_as: str | None, items: tuple) -> Callable:
    import jax

    from ._registry import get, using

    params = dict(items)

    def on_host(*arrays: Any) -> Any:
        with using("numpy"):  # the kernel's NumPy override, or its portable version on NumPy
            return kernel(*(np.asarray(a) for a in arrays), **params)

    def run(*arrays: Any) -> Any:
        if same_shape_as is None:
            portable = kernel.portable_for(get("jax"))
            shape = jax.eval_shape(lambda *a: portable(*a, **params), *arrays)
        else:
            shape = jax.ShapeDtypeStruct(arrays[0].shape, np.dtype(same_shape_as))
        return jax.pure_callback(on_host, shape, *arrays, vmap_method="expand_dims")

    return jit(run)
