"""Tiles equal one call, bit for bit: ``halo``, ``filter_image`` and ``filter_store`` without a cluster.

Every case runs dask's synchronous scheduler in this process. Shapes are small (up to 48 pixels a
side) and chunks random, smaller and larger than the halo, with uneven last chunks, so the seams
land everywhere; a halo one pixel short must make some case differ (the check can fail).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv

da = pytest.importorskip("dask.array", reason="dask not installed (pip install 'portcv[distributed]')")
import dask  # noqa: E402

import portcv.distributed as pdist  # noqa: E402
from portcv.distributed import _ops, _tiles  # noqa: E402

#: Examples per op: 30 keeps this file near a minute on 2 cores; the GPU run raises it
#: (PORTCV_TILING_EXAMPLES=200).
EXAMPLES = int(os.environ.get("PORTCV_TILING_EXAMPLES", "30"))
BORDERS = st.sampled_from(["reflect101", "replicate", "constant"])


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore", pdist.RechunkWarning)
        yield


# --------------------------------------------------------------------------------------------
# Random inputs and parameters per op
# --------------------------------------------------------------------------------------------
@st.composite
def _noise(draw, shape, dtype=np.uint8, low=0, high=255, chan=False):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):  # smooth waves plus noise: edges the detector accepts
        h, w = shape[-3:-1] if chan else shape[-2:]
        yy, xx = np.mgrid[:h, :w]
        base = 128 + 100 * np.sin(yy / rng.uniform(1.5, 6)) * np.cos(xx / rng.uniform(1.5, 6))
        base = base[..., None] if chan else base
        scale = (high - low) / 255
        out = np.clip((base + rng.integers(-20, 21, size=shape)) * scale + low * (scale != 1), low, high)
        return out.astype(dtype)
    return rng.integers(low, high + 1, size=shape).astype(dtype)


@st.composite
def _layout(draw, channels_ok=True, gray_only=False):
    """``(shape, channel_axis param)``: gray, a batch of gray frames, or RGB."""
    h, w = draw(st.integers(1, 48)), draw(st.integers(1, 48))
    kind = draw(st.sampled_from(["gray", "batch"] + (["rgb"] if channels_ok and not gray_only else [])))
    if kind == "gray":
        return (h, w), "auto"
    if kind == "batch":
        # channel_axis=None: leading axes are a batch even when W <= 4 (resolved once, globally)
        return (2, h, w), None
    return (h, w, 3), "auto"


@st.composite
def _case(draw, name):
    """``(arrays, params)`` for op ``name``."""
    if name in ("filters.sep_filter", "filters.gaussian_blur", "filters.box_blur", "filters.mean_filter",
                "filters.convolve2d", "filters.sobel", "filters.gradients", "filters.median_filter",
                "edges.gradient", "color.binarize", "color.gray_to_rgb"):
        shape, ca = draw(_layout(channels_ok=name not in ("color.gray_to_rgb", "edges.gradient")))
        img = draw(_noise(shape, chan=len(shape) == 3 and ca == "auto"))
        p: dict = {"channel_axis": ca}
        if name == "filters.sep_filter":
            taps = st.lists(st.integers(-2, 4), min_size=1, max_size=7)
            p.update(kx=draw(taps), ky=draw(taps), shift=draw(st.integers(0, 5)), border=draw(BORDERS))
        elif name == "filters.gaussian_blur":
            if draw(st.booleans()):
                p.update(ksize=draw(st.sampled_from([1, 3, 5, 7, 9])), sigma=0)
            else:
                p.update(ksize=0, sigma=draw(st.floats(0.3, 2.0)), sigma_y=draw(st.sampled_from([None, 0.6, 1.4])))
            p["border"] = draw(BORDERS)
        elif name in ("filters.box_blur",):
            k = draw(st.integers(1, 8))
            p.update(ksize=draw(st.sampled_from([k, (k, draw(st.integers(1, 6)))])), border=draw(BORDERS))
        elif name == "filters.mean_filter":
            p.update(ksize=draw(st.sampled_from([1, 3, 5, 7])), rounding=draw(st.sampled_from(["truncate", "opencv"])),
                     border=draw(BORDERS))
        elif name == "filters.convolve2d":
            kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
            kernel = draw(st.lists(st.lists(st.integers(-2, 3), min_size=kw, max_size=kw), min_size=kh, max_size=kh))
            p.update(kernel=kernel, shift=draw(st.integers(0, 4)), border=draw(BORDERS))
        elif name == "filters.sobel":
            dx, dy, k = draw(st.sampled_from([(1, 0, -1), (0, 1, -1), (1, 0, 1), (0, 1, 3), (1, 1, 3), (2, 0, 5)]))
            p.update(dx=dx, dy=dy, ksize=k, border=draw(st.sampled_from(["reflect101", "replicate"])))
        elif name in ("filters.gradients", "edges.gradient"):
            p.update(ksize=draw(st.sampled_from([3, 5])), border=draw(st.sampled_from(["reflect101", "replicate"])))
        elif name == "filters.median_filter":
            p.update(ksize=draw(st.sampled_from([3, 5, 7])), border=draw(BORDERS))
        elif name == "color.binarize":
            p.update(threshold=draw(st.integers(0, 255)))
        return [img], p
    if name == "edges.detect":
        shape, ca = draw(_layout(gray_only=True))
        p = {"t_low": draw(st.integers(10, 200)), "t_high": draw(st.integers(10, 300)), "alpha": draw(st.integers(0, 3)),
             "variant": draw(st.sampled_from(["pseudocode", "listing"])), "channel_axis": ca}
        if draw(st.booleans()):
            p["ksize"] = draw(st.sampled_from([1, 3, 5]))
        else:
            p.update(ksize=0, sigma=draw(st.sampled_from([0.8, 1.5])))
        return [draw(_noise(shape))], p
    if name in ("edges.magnitude", "edges.direction_sector"):
        shape, ca = draw(_layout(channels_ok=False))
        gx, gy = draw(_noise(shape, np.int16, -1020, 1020)), draw(_noise(shape, np.int16, -1020, 1020))
        key, values = ("kind", ["l2", "l1"]) if name == "edges.magnitude" else ("variant", ["pseudocode", "listing"])
        return [gx, gy], {key: draw(st.sampled_from(values)), **_planes_axis(name, ca)}
    if name == "motion.difference":
        shape, ca = draw(_layout(channels_ok=False))
        e1 = (draw(_noise(shape)) > 200).astype(np.uint8) * 255
        e2 = (draw(_noise(shape)) > 200).astype(np.uint8) * 255
        return [e1, e2], {"beta": draw(st.integers(0, 9)), "variant": draw(st.sampled_from(["pseudocode", "listing"])),
                          **_planes_axis(name, ca)}
    if name in ("color.rgb_to_gray", "color.rgb_to_bgr", "color.bgr_to_rgb"):
        h, w = draw(st.integers(1, 48)), draw(st.integers(1, 48))
        img = draw(_noise((h, w, 3), chan=True))
        return [img], ({"method": draw(st.sampled_from(["weighted", "average"]))} if name == "color.rgb_to_gray" else {})
    raise AssertionError(f"no strategy for {name}")


def _planes_axis(name, channel_axis):
    """A plane op's ``channel_axis`` (None declares a batch of narrow planes), if it takes one."""
    return {"channel_axis": channel_axis} if _tiles.takes_channel_axis(_ops.resolve_stage(name, {}).fn) else {}


def _chunks(draw, shape):
    return tuple(draw(st.integers(1, max(1, n + 3))) for n in shape)


def _whole(name_or_chain, arrays, params=None):
    with portcv.using("numpy"):
        if isinstance(name_or_chain, list):
            stages = _ops.resolve_chain(name_or_chain)
            chan = _tiles._first_stage_layout(stages[0], arrays[0], None)
            out, _ = _tiles.run_chain(stages, arrays, chan)
        else:
            out = _ops.resolve_stage(name_or_chain, {}).fn(*arrays, **params)
    outs = out if isinstance(out, tuple) else (out,)
    return [portcv.to_numpy(o) for o in outs]


def _tiled(op, arrays, chunks, backend=None, **params):
    lazy = [da.from_array(a, chunks=chunks) for a in arrays]
    out = pdist.filter_image(tuple(lazy) if len(lazy) > 1 else lazy[0], op, backend=backend, **params)
    outs = out if isinstance(out, tuple) else (out,)
    return [o.compute() for o in outs]


def _assert_same(expected, actual):
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert np.array_equal(a, e), f"{int((a != e).sum())} pixels differ"


# --------------------------------------------------------------------------------------------
# Every tileable op, every chain: tiles equal one call
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(_ops.TILEABLE))
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_tiled_equals_one_call(name, data):
    arrays, params = data.draw(_case(name))
    chunks = _chunks(data.draw, arrays[0].shape)
    expected = _whole(name, arrays, params)
    _assert_same(expected, _tiled(name, arrays, chunks, **params))


@pytest.mark.parametrize("name", sorted(_ops.TILEABLE))
@settings(max_examples=max(EXAMPLES // 3, 5), deadline=None)
@given(data=st.data())
def test_tiled_on_the_gpu_equals_numpy(backend, name, data):
    """Every op's CuPy tiles (CuPy chunks in, CuPy chunks out) equal NumPy's one call."""
    if backend != "cupy":
        pytest.skip("CuPy tiles only: NumPy is covered by test_tiled_equals_one_call, JAX (a compile per tile "
                    "shape on the CPU) by test_tiles_on_each_backend_equal_numpy")
    import cupy

    arrays, params = data.draw(_case(name))
    chunks = _chunks(data.draw, arrays[0].shape)
    expected = _whole(name, arrays, params)
    lazy = [da.from_array(a, chunks=chunks).map_blocks(cupy.asarray) for a in arrays]
    out = pdist.filter_image(tuple(lazy) if len(lazy) > 1 else lazy[0], name, backend=backend, **params)
    outs = out if isinstance(out, tuple) else (out,)
    got = [o.compute() for o in outs]
    assert all(isinstance(g, cupy.ndarray) for g in got)
    _assert_same(expected, [cupy.asnumpy(g) for g in got])


CHAINS = [
    lambda d: [("filters.gaussian_blur", {"ksize": d.draw(st.sampled_from([3, 5])), "sigma": 0}),
               ("edges.detect", {"t_low": d.draw(st.integers(20, 120)), "t_high": d.draw(st.integers(40, 200)),
                                 "alpha": d.draw(st.integers(0, 3))})],
    lambda d: [("edges.gradient", {}), ("edges.magnitude", {"kind": d.draw(st.sampled_from(["l1", "l2"]))})],
    lambda d: [("filters.gradients", {"ksize": 3}), ("edges.direction_sector", {})],
    lambda d: [("filters.box_blur", {"ksize": (d.draw(st.integers(1, 6)), d.draw(st.integers(1, 6)))}),
               ("filters.median_filter", {"ksize": 3}), ("color.binarize", {"threshold": d.draw(st.integers(0, 255))})],
    lambda d: [("filters.median_filter", {"ksize": 5}),
               ("edges.detect", {"t_low": 60, "t_high": 90, "variant": "listing", "alpha": d.draw(st.integers(0, 2))})],
]


@pytest.mark.parametrize("make", range(len(CHAINS)))
@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(data=st.data())
def test_tiled_chain_equals_one_call(make, data):
    chain = CHAINS[make](data)
    h, w = data.draw(st.integers(1, 48)), data.draw(st.integers(1, 48))
    img = data.draw(_noise((h, w)))
    chunks = _chunks(data.draw, img.shape)
    _assert_same(_whole(chain, [img]), _tiled(chain, [img], chunks))


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_rgb_chain_changes_the_channel_layout(data):
    chain = [("color.rgb_to_gray", {}), ("filters.gaussian_blur", {"ksize": 5, "sigma": 1.1}),
             ("color.gray_to_rgb", {})]
    img = data.draw(_noise((data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40)), 3), chan=True))
    _assert_same(_whole(chain, [img]), _tiled(chain, [img], _chunks(data.draw, img.shape)))


def test_chunks_smaller_than_the_halo_are_joined_with_a_warning_or_refused():
    img = np.random.default_rng(0).integers(0, 256, (40, 30), dtype=np.uint8)
    x = da.from_array(img, chunks=(3, 4))
    with pytest.warns(pdist.RechunkWarning):
        out = pdist.filter_image(x, "gaussian_blur", ksize=11, sigma=0)
    assert min(out.chunks[0]) >= 5 and min(out.chunks[1]) >= 5
    _assert_same(_whole("filters.gaussian_blur", [img], {"ksize": 11, "sigma": 0}), [out.compute()])
    with pytest.raises(ValueError, match="smaller than the halo"):
        pdist.filter_image(x, "gaussian_blur", ksize=11, sigma=0, allow_rechunk=False)
    kept = pdist.filter_image(da.from_array(img, chunks=(10, 10)), "gaussian_blur", ksize=11, sigma=0)
    assert kept.chunks == ((10,) * 4, (10, 10, 10))


# --------------------------------------------------------------------------------------------
# The halo is tight: one pixel short, some case differs
# --------------------------------------------------------------------------------------------
TIGHT = [
    ("filters.gaussian_blur", {"ksize": 7, "sigma": 0}),
    ("filters.box_blur", {"ksize": (4, 6)}),
    ("filters.median_filter", {"ksize": 5}),
    ("filters.sobel", {"dx": 1, "dy": 1, "ksize": 5}),
    ("edges.detect", {"t_low": 40, "t_high": 60, "alpha": 3}),
    ("edges.detect", {"t_low": 40, "t_high": 60, "alpha": 1, "variant": "listing"}),
    ("motion.difference", {"beta": 4}),
    ([("filters.gaussian_blur", {"ksize": 5, "sigma": 0}), ("edges.detect", {"t_low": 40, "t_high": 60})], None),
]


@pytest.mark.parametrize("op,params", TIGHT, ids=lambda v: str(v)[:40])
def test_a_halo_one_short_gives_wrong_pixels(op, params):
    stages = _ops.resolve_chain(op, params)
    depth = _ops.chain_halo(stages)
    short = tuple((max(b - 1, 0), max(a - 1, 0)) for b, a in depth)
    assert short != depth
    rng = np.random.default_rng(7)
    wrong = 0
    for trial in range(6):
        shape = (44 + trial, 41 + trial)
        if stages[0].spec.inputs == 2:
            # sparse edges: a match across a seam exactly beta away decides a pixel
            arrays = [(rng.random(shape) > 0.96).astype(np.uint8) * 255 for _ in range(2)]
        else:
            yy, xx = np.mgrid[:shape[0], :shape[1]]
            smooth = 128 + 90 * np.sin(yy / 2.7 + trial) * np.cos(xx / 3.1)
            arrays = [np.clip(smooth + rng.integers(-25, 26, shape), 0, 255).astype(np.uint8)]
        lazy = [da.from_array(a, chunks=(11, 10)) for a in arrays]
        expected = _whole(op, arrays, params) if params is not None else _whole(op, arrays)
        for depth_used, must_equal in ((depth, True), (short, False)):
            out = _tiles._filter_arrays(lazy, stages, False, depth_used, None, True).compute()
            same = np.array_equal(out, expected[0])
            if must_equal:
                assert same
            else:
                wrong += int((out != expected[0]).sum())
    assert wrong > 0, "a halo one pixel short went unnoticed: the tiling test cannot see a short halo"


# --------------------------------------------------------------------------------------------
# Backends: tiles on every backend equal NumPy's single call, chunk type kept
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,params", [
    ("filters.gaussian_blur", {"ksize": 5, "sigma": 1.3}),
    ("edges.detect", {"t_low": 50, "t_high": 90, "alpha": 2}),
    ([("filters.median_filter", {"ksize": 3}), ("filters.sobel", {"dx": 1, "dy": 0})], None),
], ids=["gaussian", "detect", "median-sobel"])
def test_tiles_on_each_backend_equal_numpy(backend, op, params):
    img = np.clip(np.random.default_rng(3).normal(128, 50, (50, 64)), 0, 255).astype(np.uint8)
    expected = _whole(op, [img], params) if params is not None else _whole(op, [img])
    out = _tiled(op, [img], (20, 32), backend=backend, **(params or {}))
    _assert_same(expected, out)
    assert all(type(o) is np.ndarray for o in out)


def test_tiles_alternating_backends_give_one_image():
    pytest.importorskip("jax")
    img = np.random.default_rng(4).integers(0, 256, (36, 40), dtype=np.uint8)
    lazy = da.from_array(img, chunks=(12, 20))
    a = pdist.filter_image(lazy, "median_filter", ksize=5, backend="numpy")
    b = pdist.filter_image(lazy, "median_filter", ksize=5, backend="jax")
    mixed = da.concatenate([a[:12], b[12:24], a[24:]], axis=0).compute()
    _assert_same(_whole("filters.median_filter", [img], {"ksize": 5}), [mixed])


def test_cupy_chunks_stay_cupy():
    try:
        portcv.backends.get("cupy")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(f"CuPy/GPU unavailable: {exc}")
    import cupy

    img = np.random.default_rng(5).integers(0, 256, (64, 80), dtype=np.uint8)
    lazy = da.from_array(img, chunks=(32, 40)).map_blocks(cupy.asarray)
    out = pdist.filter_image(lazy, "gaussian_blur", ksize=5, sigma=1.0, backend="cupy")
    assert isinstance(out._meta, cupy.ndarray)
    got = out.compute()
    assert isinstance(got, cupy.ndarray)
    _assert_same(_whole("filters.gaussian_blur", [img], {"ksize": 5, "sigma": 1.0}), [cupy.asnumpy(got)])
    default = pdist.filter_image(lazy, "median_filter", ksize=5).compute()  # CuPy chunks run on CuPy
    assert isinstance(default, cupy.ndarray)
    _assert_same(_whole("filters.median_filter", [img], {"ksize": 5}), [cupy.asnumpy(default)])


def test_filter_store_on_cupy_writes_host_arrays(tmp_path):
    try:
        portcv.backends.get("cupy")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(f"CuPy/GPU unavailable: {exc}")
    zarr = pytest.importorskip("zarr")
    img = _scene(300, 260)
    src = zarr.create_array(str(tmp_path / "in.zarr"), shape=img.shape, chunks=(64, 64, 3), dtype="uint8")
    src[:] = img
    chain = [("color.rgb_to_gray", {}), ("filters.gaussian_blur", {"ksize": 5, "sigma": 0}),
             ("edges.detect", {"t_low": 40, "t_high": 80})]
    out = pdist.filter_store(src, str(tmp_path / "out.zarr"), chain, tile=128, backend="cupy")
    _assert_same(_whole(chain, [img]), [out[:]])


# --------------------------------------------------------------------------------------------
# Layouts, xarray, refusals
# --------------------------------------------------------------------------------------------
def test_channel_layout_is_resolved_from_the_whole_shape():
    # A (T, H, W) stack 40 wide in chunks 4 wide: per tile, "auto" would read 4 columns as channels.
    video = np.random.default_rng(6).integers(0, 256, (3, 20, 40), dtype=np.uint8)
    out = pdist.filter_image(da.from_array(video, chunks=(1, 10, 4)), "gaussian_blur", ksize=3, sigma=0)
    _assert_same(_whole("filters.gaussian_blur", [video], {"ksize": 3, "sigma": 0}), [out.compute()])


def test_xarray_keeps_dims_coords_and_attrs():
    xr = pytest.importorskip("xarray")
    img = np.random.default_rng(8).integers(0, 256, (30, 36, 3), dtype=np.uint8)
    arr = xr.DataArray(img, dims=("y", "x", "band"), coords={"y": np.arange(30) * 0.5, "x": np.arange(36) + 100,
                                                            "band": ["r", "g", "b"]}, attrs={"crs": "EPSG:4326"},
                       name="scene").chunk({"y": 10, "x": 12})
    out = pdist.filter_image(arr, "box_blur", ksize=3)
    assert out.dims == arr.dims and out.attrs == arr.attrs and out.name == "scene"
    assert all(np.array_equal(out.coords[c], arr.coords[c]) for c in arr.coords)
    _assert_same(_whole("filters.box_blur", [img], {"ksize": 3}), [out.values])
    gray = pdist.filter_image(arr, "rgb_to_gray")
    assert gray.dims == ("y", "x") and "band" not in gray.coords
    _assert_same(_whole("color.rgb_to_gray", [img], {}), [gray.values])
    # A gray stack: 'time' is a batch (depth 0), whatever the width.
    stack = xr.DataArray(img[..., 0][None].repeat(2, 0), dims=("time", "y", "x")).chunk({"time": 1, "y": 7})
    blurred = pdist.filter_image(stack, "median_filter", ksize=3)
    assert blurred.dims == ("time", "y", "x")
    _assert_same(_whole("filters.median_filter", [stack.values], {"ksize": 3, "channel_axis": None}),
                 [blurred.values])


@pytest.mark.parametrize("name", sorted(_ops.GLOBAL_OPS))
def test_global_ops_are_refused_with_the_reason(name):
    x = da.zeros((20, 20), dtype=np.uint8, chunks=10)
    with pytest.raises(ValueError, match="global"):
        pdist.filter_image(x, name)
    with pytest.raises(ValueError, match="global"):
        pdist.halo(name)


def test_unknown_and_ambiguous_ops_and_bad_inputs():
    x = da.zeros((20, 20), dtype=np.uint8, chunks=10)
    with pytest.raises(ValueError, match="unknown op"):
        pdist.filter_image(x, "filters.sharpen")
    with pytest.raises(TypeError, match="dask"):
        pdist.filter_image(np.zeros((4, 4), np.uint8), "gaussian_blur", ksize=3)
    with pytest.raises(ValueError, match="takes 2 image"):
        pdist.filter_image(x, "edges.magnitude")
    with pytest.raises(ValueError, match="fixed integer threshold"):
        pdist.filter_image(x, "binarize", threshold=np.array([3]))
    with pytest.raises(TypeError, match="keyword parameters"):
        pdist.filter_image(x, ["gaussian_blur"], ksize=3)


def test_functions_are_accepted_as_ops():
    assert pdist.halo(portcv.filters.median_filter, ksize=7) == ((3, 3), (3, 3))
    assert pdist.halo(portcv.filters.box_blur, ksize=(4, 6)) == ((3, 2), (2, 1))
    assert pdist.halo("motion.difference", beta=3, variant="listing") == ((8, 7), (8, 7))
    with pytest.raises(ValueError, match="not a portcv operation"):
        pdist.halo(np.sum)


def test_every_image_op_is_classified():
    seen = set()
    for domain in ("filters", "edges", "color", "motion", "transform", "detect"):
        module = importlib.import_module(f"portcv.{domain}")
        for attr in module.__all__:
            if callable(getattr(module, attr)) and not attr.isupper():
                seen.add(f"{domain}.{attr}")
    known = set(_ops.TILEABLE) | set(_ops.GLOBAL_OPS) | _ops.NOT_IMAGE_OPS
    assert seen - known == set(), "classify these as TILEABLE (with a halo), GLOBAL_OPS or NOT_IMAGE_OPS"
    assert not set(_ops.TILEABLE) & set(_ops.GLOBAL_OPS)


@pytest.mark.parametrize("name", sorted(_ops.TILEABLE))
def test_plain_ops_refuse_dask_arrays_and_point_to_filter_image(name):
    fn = _ops.resolve_stage(name, {}).fn
    x = da.zeros((8, 8, 3) if "rgb" in name else (8, 8), dtype=np.uint8, chunks=4)
    args = [x] * _ops.TILEABLE[name].inputs
    extra = {"filters.sep_filter": dict(kx=[1], ky=[1], shift=0), "filters.box_blur": dict(ksize=3),
             "filters.mean_filter": dict(ksize=3), "filters.convolve2d": dict(kernel=[[1]], shift=0),
             "filters.sobel": dict(dx=1, dy=0), "filters.median_filter": dict(ksize=3),
             "edges.detect": dict(t_low=1, t_high=2), "color.binarize": dict(threshold=3)}.get(name, {})
    with pytest.raises(TypeError, match="filter_image"):
        fn(*args, **extra)


def test_import_portcv_imports_no_dask():
    code = ("import sys, portcv, portcv.distributed; import portcv.filters, portcv.video; "
            "bad = [m for m in ('dask', 'distributed', 'zarr', 'tifffile', 'xarray') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --------------------------------------------------------------------------------------------
# filter_store without a cluster (the cluster case is in test_cluster.py)
# --------------------------------------------------------------------------------------------
def _scene(h, w, seed=0):
    return portcv.data.synthetic_rgb(h, w, seed=seed)


def test_filter_store_zarr_to_zarr_equals_one_call(tmp_path):
    zarr = pytest.importorskip("zarr")
    img = _scene(150, 131)[..., 1]
    src = zarr.create_array(str(tmp_path / "in.zarr"), shape=img.shape, chunks=(32, 32), dtype="uint8")
    src[:] = img
    chain = [("filters.gaussian_blur", {"ksize": 5, "sigma": 0}), ("edges.detect", {"t_low": 30, "t_high": 60})]
    out = pdist.filter_store(str(tmp_path / "in.zarr"), tmp_path / "out.zarr", chain, tile=40)
    assert out.chunks == (64, 64)  # rounded up to the source's chunks
    _assert_same(_whole(chain, [img]), [out[:]])


def test_filter_store_tiff_rgb_equals_one_call(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    pytest.importorskip("zarr")
    img = _scene(100, 90)
    path = tmp_path / "scene.tif"
    tifffile.imwrite(path, img, tile=(32, 32), photometric="rgb")
    out = pdist.filter_store(path, str(tmp_path / "out.zarr"), "median_filter", ksize=5, tile=(32, 64))
    _assert_same(_whole("filters.median_filter", [img], {"ksize": 5}), [out[:]])
    gray = pdist.filter_store(str(path), str(tmp_path / "gray.zarr"), "rgb_to_gray", tile=32)
    assert gray.shape == img.shape[:2]
    _assert_same(_whole("color.rgb_to_gray", [img], {}), [gray[:]])


def test_filter_store_refuses_chains_with_several_outputs(tmp_path):
    zarr = pytest.importorskip("zarr")
    src = zarr.create_array(str(tmp_path / "in.zarr"), shape=(20, 20), chunks=(10, 10), dtype="uint8")
    with pytest.raises(ValueError, match="returns 2 arrays"):
        pdist.filter_store(src, str(tmp_path / "o.zarr"), "filters.gradients")


# --------------------------------------------------------------------------------------------
# Parameters: checked by the op's own validators, in halo, filter_image and filter_store alike
# --------------------------------------------------------------------------------------------
BAD_PARAMS = [
    ("filters.gaussian_blur", {"ksize": 4, "sigma": 0}, ValueError, "ksize must be odd"),
    ("filters.gaussian_blur", {"ksize": "3", "sigma": 0}, TypeError, "ksize"),
    ("filters.gaussian_blur", {"ksize": 1e12, "sigma": 0}, TypeError, "ksize"),
    ("filters.gaussian_blur", {"ksize": 10**12 + 1, "sigma": 0}, ValueError, "ksize"),
    ("filters.gaussian_blur", {"ksize": 3, "sigma": float("nan")}, ValueError, "sigma"),
    ("filters.gaussian_blur", {"ksize": 3, "sigma": -1}, ValueError, "sigma"),
    ("filters.gaussian_blur", {"ksize": 3, "sigma": None}, TypeError, "sigma"),
    ("filters.gaussian_blur", {"ksize": 3, "sigma": 0, "sigmaa": 1}, TypeError, "sigmaa"),
    ("filters.median_filter", {"ksize": 4}, ValueError, "ksize"),
    ("filters.median_filter", {}, TypeError, "ksize"),
    ("filters.box_blur", {"ksize": (3, 0)}, ValueError, "ksize"),
    ("filters.sobel", {"dx": 1, "dy": 0, "ksize": 4}, ValueError, "ksize"),
    ("filters.sep_filter", {"kx": [1.5], "ky": [1], "shift": 0}, TypeError, "kx"),
    ("filters.convolve2d", {"kernel": [[1, 2], [3]], "shift": 0}, ValueError, "kernel"),
    ("edges.detect", {"t_low": 1, "t_high": 2, "alpha": -1}, ValueError, "alpha"),
    ("edges.detect", {"t_low": 1, "t_high": 2, "ksize": 0, "sigma": float("nan")}, ValueError, "sigma"),
    ("edges.magnitude", {"kind": "l3"}, ValueError, "kind"),
    ("motion.difference", {"beta": -1}, ValueError, "beta"),
    ("motion.difference", {"beta": 2.5}, TypeError, "beta"),
    ("color.binarize", {"threshold": 300}, ValueError, "threshold"),
]


@pytest.mark.parametrize("op,params,exc,match", BAD_PARAMS, ids=lambda v: str(v)[:30])
def test_bad_parameters_are_refused_by_the_ops_own_validators(op, params, exc, match):
    with pytest.raises(exc, match=match):
        pdist.halo(op, **params)
    with pytest.raises(exc, match=match):  # the same check inside a chain
        pdist.halo([("filters.box_blur", {"ksize": 3}), (op, params)] if op.startswith("filters") else [(op, params)])
    x = da.zeros((8, 8), dtype=np.int16 if op == "edges.magnitude" else np.uint8, chunks=4)
    with pytest.raises(exc, match=match):
        pdist.filter_image((x, x) if _ops.TILEABLE[op].inputs == 2 else x, op, **params)


def test_filter_image_checks_backend_and_allow_rechunk_at_the_call():
    x = da.zeros((8, 8), dtype=np.uint8, chunks=4)
    with pytest.raises(ValueError, match="backend.*bogus"):
        pdist.filter_image(x, "median_filter", ksize=3, backend="bogus")
    with pytest.raises(TypeError, match="allow_rechunk"):
        pdist.filter_image(x, "median_filter", ksize=3, allow_rechunk="no")
