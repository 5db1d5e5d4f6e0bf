from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import portcv
from portcv import backends
from portcv._kernel import Kernel, kernel
from portcv.backends import jax as jax_backend
from portcv.backends.numpy import NumpyBackend


def test_import_portcv_imports_neither_cupy_nor_jax():
    code = "import sys, portcv; print('cupy' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_numpy_is_the_default_and_always_available():
    assert portcv.backend().name == "numpy"
    assert "numpy" in portcv.available_backends()


def test_use_sets_the_process_default(backend):
    try:
        assert portcv.use(backend).name == backend
        assert portcv.backend().name == backend
    finally:
        portcv.use("numpy")


def test_using_is_scoped_and_nests(backend):
    with portcv.using(backend) as b:
        assert b.name == backend == portcv.backend().name
        with portcv.using("numpy"):
            assert portcv.backend().name == "numpy"
        assert portcv.backend().name == backend
    assert portcv.backend().name == "numpy"


def test_using_is_per_thread():
    seen = {}
    barrier = threading.Barrier(2)

    def worker(name):
        with portcv.using(name):
            barrier.wait()  # both threads inside their own `using` at once
            seen[name] = portcv.backend().name

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("numpy", "numpy:readonly")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert seen == {"numpy": "numpy", "numpy:readonly": "numpy:readonly"}


def test_using_is_per_asyncio_task():
    async def task(name, results):
        with portcv.using(name):
            await asyncio.sleep(0.01)  # the other task switches meanwhile
            results[name] = portcv.backend().name

    async def main():
        results = {}
        await asyncio.gather(task("numpy", results), task("numpy:readonly", results))
        return results

    assert asyncio.run(main()) == {"numpy": "numpy", "numpy:readonly": "numpy:readonly"}


def test_unknown_backend_names_the_registered_ones():
    with pytest.raises(ValueError, match=r"unknown backend 'torch'.*'numpy'"):
        portcv.use("torch")
    with pytest.raises(TypeError, match="backend name must be a str"):
        portcv.use(3)


class _MissingBackend(NumpyBackend):
    name = "test-missing"
    install_hint = "pip install imaginary-gpu-lib"

    def _load(self):
        raise ImportError("No module named 'imaginary_gpu_lib'")


def test_missing_backend_says_what_to_install():
    backends.register(_MissingBackend(), replace=True)
    with pytest.raises(portcv.BackendUnavailableError, match="pip install imaginary-gpu-lib"):
        portcv.use("test-missing")
    assert "test-missing" not in portcv.available_backends()
    assert portcv.backend().name == "numpy"  # a failed use() leaves the default alone


def test_unregistered_backend_objects_are_refused():
    with pytest.raises(ValueError, match="not registered"):
        portcv.use(type("Unlisted", (NumpyBackend,), {"name": "unlisted"})())


def test_register_refuses_duplicates_and_non_backends():
    with pytest.raises(ValueError, match="already registered"):
        backends.register(NumpyBackend())
    with pytest.raises(TypeError, match="must be a portcv.backends.Backend"):
        backends.register(object())


def test_arrays_move_between_backends(backend):
    host = np.arange(12, dtype=np.uint8).reshape(3, 4)
    with portcv.using(backend):
        moved = portcv.asarray(host)
        assert portcv.backend().owns(moved)
        back = portcv.to_numpy(moved)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(portcv.asarray(moved), host)  # back onto numpy, the default


def test_cached_constant_copies_once_per_key_and_backend(backend):
    built, token = [], object()  # keys no other test run has used

    def build(value):
        built.append(value)
        return np.full(3, value, np.int32)

    with portcv.using(backend):
        first = backends.cached_constant((token, 1), lambda: build(1))
        assert portcv.backend().owns(first)
        assert backends.cached_constant((token, 1), lambda: build(1)) is first  # no second copy
        other = backends.cached_constant((token, 2), lambda: build(2))
        np.testing.assert_array_equal(portcv.to_numpy(first), [1, 1, 1])
        np.testing.assert_array_equal(portcv.to_numpy(other), [2, 2, 2])
    assert built == [1, 2]
    if backends.get(backend).device_key() != backends.get("numpy").device_key():  # elsewhere: its own copy
        with portcv.using("numpy"):
            assert isinstance(backends.cached_constant((token, 1), lambda: build(1)), np.ndarray)
        assert built == [1, 2, 1]


def test_cached_constant_made_inside_a_users_jit_outlives_the_trace():
    """The first use of a table inside a caller's ``jax.jit`` used to cache the trace's tracer:
    the next transformation (``vmap``) then raised ``UnexpectedTracerError``."""
    jax = pytest.importorskip("jax")
    try:
        backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    key = ("tracer test", object())
    with portcv.using("jax"):
        inside = jax.jit(lambda x: x + backends.cached_constant(key, lambda: np.arange(3)))(np.ones(3, np.int64))
        kept = backends.cached_constant(key, lambda: np.zeros(3))
        assert not isinstance(kept, jax.core.Tracer)
        outside = jax.vmap(lambda x: x + backends.cached_constant(key, lambda: np.zeros(3)))(np.ones((2, 3), np.int64))
    np.testing.assert_array_equal(np.asarray(inside), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(outside), [[1, 2, 3], [1, 2, 3]])


def test_cached_constant_keeps_a_bounded_number():
    for i in range(backends._registry._CONSTANTS_KEPT + 10):
        backends.cached_constant(("bounded test", i), lambda: np.zeros(1))
    assert len(backends._registry._CONSTANTS) == backends._registry._CONSTANTS_KEPT
    built = []
    backends.cached_constant(("bounded test", 0), lambda: built.append(0) or np.zeros(1))  # evicted: built again
    assert built == [0]


def test_take_gathers_as_numpy_on_every_backend(backend):
    """``xp.take`` of the portable code (JAX's skips jnp's bounds masks): NumPy's elements,
    negative indices wrapping, along an axis and flat, also under jit."""
    host = np.arange(24, dtype=np.int64).reshape(4, 6) * 7
    idx = np.array([0, 5, -1, -6, 3], np.int32)
    with portcv.using(backend) as b:
        xp = b.xp
        a, i = portcv.asarray(host), portcv.asarray(idx)
        np.testing.assert_array_equal(portcv.to_numpy(xp.take(a, i, axis=1)), np.take(host, idx, axis=1))
        rows = np.array([3, -4, 0, -1], np.int32)
        np.testing.assert_array_equal(portcv.to_numpy(xp.take(a, portcv.asarray(rows), axis=0)),
                                      np.take(host, rows, axis=0))
        flat = b.jit(lambda v, k: xp.take(xp.reshape(v, (-1,)), k))
        np.testing.assert_array_equal(portcv.to_numpy(flat(a, i)), np.take(host.reshape(-1), idx))


def test_to_numpy_accepts_lists():
    np.testing.assert_array_equal(portcv.to_numpy([1, 2]), [1, 2])


def test_kernel_uses_override_and_falls_back_on_notimplemented():
    calls = []

    @kernel("test_double")
    def double(xp, x, *, factor):
        calls.append("portable")
        return x * factor

    @double.override("numpy:readonly")
    def _double_override(x, *, factor):
        calls.append("override")
        return NotImplemented if factor > 2 else x * factor

    assert isinstance(double, Kernel)
    with portcv.using("numpy:readonly"):
        assert int(double(np.int32(3), factor=2)) == 6
        assert int(double(np.int32(3), factor=5)) == 15
    assert calls == ["override", "override", "portable"]
    with pytest.raises(ValueError, match="declared twice"):
        kernel("test_double")(lambda xp, x: x)


def test_portcv_calls_inside_a_users_jax_jit_equal_the_direct_calls():
    """portcv compiles its JAX programs with compiler options, which JAX allows only on a
    top-level jit: called inside a user's own jitted pipeline, the kernels must inline instead."""
    jax = pytest.importorskip("jax")
    from portcv import color, filters

    try:
        backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    rgb = portcv.data.synthetic_rgb(23, 37, seed=1)
    with portcv.using("jax"):
        pipeline = jax.jit(lambda im: filters.median_filter(color.rgb_to_gray(im), 5))
        inside = pipeline(portcv.asarray(rgb))
        direct = filters.median_filter(color.rgb_to_gray(rgb), 5)
        # A call inside the trace whose arguments are all constants (no tracer among them).
        constant = jax.jit(lambda im: im + filters.median_filter(rgb[..., 0], 3))(portcv.asarray(rgb[..., 1]))
        constant_direct = filters.median_filter(rgb[..., 0], 3) + rgb[..., 1]
    np.testing.assert_array_equal(portcv.to_numpy(inside), portcv.to_numpy(direct))
    np.testing.assert_array_equal(portcv.to_numpy(constant), portcv.to_numpy(constant_direct))
    # A traced keyword argument.
    from portcv.backends.jax import jit

    double = jit(lambda *, x: 2 * x)
    assert int(jax.jit(lambda v: double(x=v))(3)) == 6
    # Inside a trace with only a NumPy constant: JAX refuses the options as nested.
    assert int(jax.jit(lambda v: double(x=np.int32(3)) + v)(1)) == 7


@pytest.mark.parametrize("op", ["integral", "integral squared", "median 3", "median 5", "histogram", "canny"])
def test_jax_device_formulations_equal_numpy_on_the_cpu(monkeypatch, op):
    """JAX on the CPU hands these kernels to their NumPy versions through host callbacks
    (``backends.jax.host_call``), so the every-backend tests compare NumPy with NumPy there;
    with ``runs_on_host`` off, the CPU runs the XLA formulations a GPU runs, and they must
    give the same bits."""
    pytest.importorskip("jax")
    from portcv import color, edges, filters, transform
    from portcv.backends.jax import JaxBackend

    try:
        backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    monkeypatch.setattr(JaxBackend, "runs_on_host", property(lambda self: False))

    def no_host_call(*args, **kwargs):
        raise AssertionError("a host callback ran with runs_on_host off")

    monkeypatch.setattr(portcv.backends.jax, "host_call", no_host_call)
    calls = {
        "integral": lambda x: transform.integral(x),
        "integral squared": lambda x: transform.integral(x, squared=True),
        "median 3": lambda x: filters.median_filter(x, 3),
        "median 5": lambda x: filters.median_filter(x, 5),
        "histogram": lambda x: color.histogram(x),
        "canny": lambda x: edges.canny(x, 40, 90),
    }
    frames = portcv.data.synthetic_rgb(2 * 29, 37, seed=3)[..., 1].reshape(2, 29, 37)
    expected = calls[op](frames)
    with portcv.using("jax"):
        actual = calls[op](portcv.asarray(frames))
    for e, a in zip(*(r if isinstance(r, tuple) else (r,) for r in (expected, actual)), strict=True):
        e, a = portcv.to_numpy(e), portcv.to_numpy(a)
        assert e.dtype == a.dtype
        np.testing.assert_array_equal(a, e)


def _launchers() -> dict[str, set[str]]:
    """``{module: kernel names}`` of every ``cuda_function(__name__, "portcv_...")`` call."""
    import re
    from pathlib import Path

    root = Path(portcv.__file__).parent
    launched: dict[str, set[str]] = {}
    for src in root.rglob("*.py"):
        names = set(re.findall(r'cuda_function\(\s*__name__,\s*f?"(portcv_\w+)', src.read_text()))
        if names:
            module = ".".join(("portcv",) + src.relative_to(root).with_suffix("").parts)
            launched[module] = names
    return launched


def test_every_cuda_source_ships_beside_its_launcher():
    from importlib import resources
    from pathlib import Path

    assert resources.files("portcv.backends").joinpath("common.cuh").is_file()
    root = Path(portcv.__file__).parent
    sources = {p for p in root.rglob("*.cu")}
    launched = _launchers()
    assert len(launched) >= 12, sorted(launched)
    for module in launched:  # every launcher's source is its twin, shipped as package data
        package, _, stem = module.rpartition(".")
        assert resources.files(package).joinpath(f"{stem}.cu").is_file(), module
    # and every source has its launcher beside it (no orphan kernels)
    twins = {root.joinpath(*m.split(".")[1:]).with_suffix(".cu") for m in launched}
    assert sources == twins, sorted(str(p) for p in sources ^ twins)
    for src in sources:
        assert "portcv_" in src.read_text()  # kernel names carry the portcv_ prefix


def test_kernel_names_in_sources_match_their_launchers():
    import re
    from importlib import resources

    for module, names in _launchers().items():
        package, _, stem = module.rpartition(".")
        text = resources.files(package).joinpath(f"{stem}.cu").read_text()
        for name in names:
            assert re.search(rf"__global__ void.{{0,80}}?\b{name}\(", text, re.DOTALL), (module, name)


@pytest.mark.parametrize("value, kind", [(None, "NoneType"), ("abc", "str"), (object(), "object")])
@pytest.mark.parametrize("convert", ["to_numpy", "asarray"])
def test_conversions_refuse_non_arrays(value, kind, convert):
    """portcv.to_numpy(None) used to return an object array (a JAX dtype error ten frames deep on JAX)."""
    with pytest.raises(TypeError, match=f"got {kind}"):
        getattr(portcv, convert)(value)


def test_conversions_name_ragged_lists_and_list_dtypes():
    with pytest.raises(ValueError, match="ragged list"):
        portcv.to_numpy([[1, 2, 3], [4]])
    with pytest.raises(ValueError, match="image must be a rectangular array; got a ragged nested list"):
        portcv.filters.box_blur([[1, 2, 3], [4]], 3)
    with pytest.raises(TypeError, match=r"pass np.asarray\(image, np.uint8\)"):
        portcv.filters.box_blur([[1, 2], [3, 4]], 3)
    np.testing.assert_array_equal(portcv.to_numpy([[1, 2], [3, 4]]), [[1, 2], [3, 4]])  # numbers stay fine


# ---------------------------------------------------------------- JAX: Pallas' Triton backend
def test_without_pallas_triton_the_probe_says_so(monkeypatch):
    """Once JAX drops Pallas' Triton backend, the probe says so (portcv's Pallas kernels give way to
    their XLA versions) and nothing fails to import."""
    pytest.importorskip("jax")
    jax_backend.pallas_triton_usable.cache_clear()
    monkeypatch.setitem(sys.modules, "jax.experimental.pallas.triton", None)  # the import fails
    try:
        assert jax_backend.pallas_triton_usable() is False
    finally:
        jax_backend.pallas_triton_usable.cache_clear()


def test_the_pallas_probe_answers_the_same_inside_a_trace():
    """The probe runs where a Pallas kernel's caller is traced (convolve3d's direct method): there
    it must still run its kernel (on a GPU: True), not fail to read a tracer back and quietly
    answer False."""
    jax = pytest.importorskip("jax")
    jax_backend.pallas_triton_usable.cache_clear()
    outside = jax_backend.pallas_triton_usable()
    jax_backend.pallas_triton_usable.cache_clear()
    inside = []
    jax.jit(lambda x: (inside.append(jax_backend.pallas_triton_usable()), x)[1])(1)
    assert inside == [outside]
    if jax.default_backend() == "gpu" and importlib.util.find_spec("jax.experimental.pallas.triton"):
        assert outside, "Pallas' Triton backend is there but its probe kernel did not run"


def test_only_jax_s_pallas_triton_deprecation_is_hidden():
    """The deprecation warning is addressed to portcv, not its users; any other warning shows."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jax_backend.quiet_pallas_triton():
            warnings.warn("The Pallas Triton backend is deprecated and will be removed", DeprecationWarning)
            with pytest.raises(DeprecationWarning, match="something else"):
                warnings.warn("something else is deprecated", DeprecationWarning)


def test_backend_questions_are_answered_by_the_backend():
    """What algorithms ask instead of a backend's name: a GPU-only backend (a cluster's one worker
    per GPU), whether Pallas kernels run, how many devices and how to make one current; and the
    unloaded registry entry a cluster reads before any worker loads it."""
    from portcv import backends

    assert backends.registered("cupy").needs_gpu and not backends.registered("numpy").needs_gpu
    assert not backends.registered("jax").needs_gpu  # JAX picks its device when it loads
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        backends.registered("nope")
    host = backends.get("numpy")
    assert host.pallas_usable is False and host.device_count() == 1
    with host.device_scope(None), host.device_scope(0):
        pass
    with pytest.raises(ValueError, match="has one device"):
        host.device_scope(1)


def test_jax_on_the_host_runs_no_pallas_and_scopes_its_devices():
    pytest.importorskip("jax")
    from portcv import backends

    b = backends.get("jax")
    if b.runs_on_host:
        assert b.pallas_usable is False
    assert b.device_count() >= 1
    with b.device_scope(0):
        pass
    with pytest.raises(ValueError, match="device"):
        b.device_scope(b.device_count())
