"""The JAX backend's kernels of the joint bilateral filter and DCBF: the GPU's Pallas kernels, run
by Pallas' interpreter on the CPU, and the XLA loop over the window's offsets that runs elsewhere
(compiled on whatever device JAX has): the portable version's bits for every tile overhang, guide
and value channels, accumulator width, border and hole rule. (On a GPU the backend tests of
``joint_bilateral`` and ``dcbf`` run the Pallas kernels compiled.) The traced program of the
JAX path does not grow with the window."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
from portcv import _bilateral, _bilateral_pallas

from ..helpers import assert_same_bits


@st.composite
def bilateral_cases(draw):
    """Arrays and the kernel's parameters, as ``run_bilateral`` would pass them."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lead = (draw(st.integers(1, 2)),) if draw(st.booleans()) else ()
    plane = lead + (draw(st.integers(1, 19)), draw(st.integers(1, 70)))
    guide_channels, value_channels = draw(st.booleans()), draw(st.booleans())
    dtype = np.dtype(draw(st.sampled_from(["uint8", "uint16"])))
    hole = None if value_channels else draw(st.sampled_from([None, 0, int(np.iinfo(dtype).max)]))
    guide = rng.integers(0, 256, plane + ((3,) if guide_channels else ()), dtype=np.uint8)
    values = rng.integers(0, int(np.iinfo(dtype).max) + 1, plane + ((3,) if value_channels else ()), dtype=dtype)
    if hole is not None:
        values[rng.random(values.shape) < draw(st.sampled_from([0.0, 0.1, 0.6, 1.0]))] = hole
    ksize = draw(st.sampled_from([1, 3, 5, 7]))
    window = _bilateral.spatial_window(ksize // 2, draw(st.sampled_from([0.7, 2.0, 9.0])),
                                       draw(st.sampled_from(_bilateral.WINDOWS)))
    color_norm = draw(st.sampled_from(_bilateral.COLOR_NORMS))
    table = _bilateral.range_table(draw(st.sampled_from([3.0, 20.0])), 3 if guide_channels else 1, color_norm)
    spatial = np.array([w for _, _, w in window.taps], np.int32)
    params = dict(offsets=tuple((dy, dx) for dy, dx, _ in window.taps), radius=window.radius,
                  guide_channels=guide_channels, value_channels=value_channels,
                  border=draw(st.sampled_from(_bilateral.BILATERAL_BORDERS)), color_norm=color_norm, hole=hole,
                  keep_known=hole is not None and draw(st.booleans()),
                  wide=_bilateral.accumulator_is_wide(len(window.taps), int(np.iinfo(dtype).max)))
    return (guide, values, table, spatial), params


@given(case=bilateral_cases())
@settings(max_examples=10, deadline=None)
def test_pallas_bilateral_kernels_equal_the_portable_code_in_interpret_mode(case):
    """Whole tiles (joint bilateral, ``update="all"``) and the hole fill (``update="holes"``):
    each equals the portable version's bits."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    arrays, params = case
    guide, values = arrays[:2]
    build = _bilateral_pallas.pallas_bilateral_holes if params["keep_known"] else _bilateral_pallas.pallas_bilateral
    run = build(guide.shape, values.shape, values.dtype.name, **params, interpret=True)
    assert run is not None
    with portcv.using("jax") as b:
        got = run(*(b.xp.asarray(a) for a in arrays))
    assert_same_bits(_bilateral.bilateral_kernel.portable(np, *arrays, **params), got)


def test_hole_fill_with_fewer_holes_than_a_program_in_interpret_mode():
    """Two holes, one of them the first pixel: the program's other slots repeat its first hole
    (and store the same value again), which must leave both holes right."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    rng = np.random.default_rng(3)
    guide = rng.integers(0, 256, (3, 4), dtype=np.uint8)
    values = rng.integers(1, 256, (3, 4), dtype=np.uint8)
    values[0, 0] = values[2, 3] = 0
    window = _bilateral.spatial_window(1, 2.0, "square")
    arrays = (guide, values, _bilateral.range_table(20.0, 1, "l1"), np.array([w for *_, w in window.taps], np.int32))
    params = dict(offsets=tuple((dy, dx) for dy, dx, _ in window.taps), radius=1, guide_channels=False,
                  value_channels=False, border="reflect101", color_norm="l1", hole=0, keep_known=True, wide=False)
    run = _bilateral_pallas.pallas_bilateral_holes(guide.shape, values.shape, "uint8", **params, interpret=True)
    with portcv.using("jax") as b:
        got = run(*(b.xp.asarray(a) for a in arrays))
    want = _bilateral.bilateral_kernel.portable(np, *arrays, **params)
    assert_same_bits(want, got)
    assert want[0, 0] != 0 and want[2, 3] != 0


def test_pallas_bilateral_declines_what_it_does_not_handle():
    """Holes with several value channels (the portable version has no such case either) and the
    hole fill without holes to keep: ``None``, so the override runs the portable version."""
    pytest.importorskip("jax.experimental.pallas.triton")
    params = dict(offsets=((0, 0),), radius=0, guide_channels=False, border="reflect101", color_norm="l1",
                  wide=False)
    assert _bilateral_pallas.pallas_bilateral((4, 5), (4, 5, 3), "uint8", value_channels=True, hole=0,
                                              keep_known=False, **params) is None
    assert _bilateral_pallas.pallas_bilateral_holes((4, 5), (4, 5), "uint8", value_channels=False, hole=None,
                                                    keep_known=False, **params) is None
    assert _bilateral_pallas.pallas_bilateral((0, 5), (0, 5), "uint8", value_channels=False, hole=None,
                                              keep_known=False, **params) is None
    assert _bilateral_pallas.pallas_bilateral((4, 5), (4, 5), "uint8", value_channels=False, hole=None,
                                              keep_known=False, **params) is not None


def kernel_case(guide_shape, values_shape, dtype, ksize, window, *, border="reflect101", color_norm="l1", hole=None,
                keep_known=False, seed=0):
    """Random arrays and the kernel's parameters for a ``ksize x ksize`` window, as ``run_bilateral`` passes them."""
    rng = np.random.default_rng(seed)
    guide = rng.integers(0, 256, guide_shape, dtype=np.uint8)
    top = int(np.iinfo(dtype).max)
    values = rng.integers(0, top + 1, values_shape).astype(dtype)
    if hole is not None:
        values[rng.random(values_shape) < 0.3] = hole
    spatial = _bilateral.spatial_window(ksize // 2, 4.0, window)
    guide_channels, value_channels = guide_shape[-1] == 3, values_shape[-1] == 3
    table = _bilateral.range_table(20.0, 3 if guide_channels else 1, color_norm)
    params = dict(offsets=tuple((dy, dx) for dy, dx, _ in spatial.taps), radius=spatial.radius,
                  guide_channels=guide_channels, value_channels=value_channels, border=border,
                  color_norm=color_norm, hole=hole, keep_known=keep_known,
                  wide=_bilateral.accumulator_is_wide(len(spatial.taps), top))
    return (guide, values, table, np.array([w for *_, w in spatial.taps], np.int32)), params


# Each case compiles one program: grey and RGB guides and values, holes kept or not, both
# accumulator widths, every border, batches, a window wider than the image (reflect101 reflects twice).
LOOP_CASES = {
    "rgb on rgb 5x5 replicate l2": ((6, 7, 3), (6, 7, 3), np.uint8, 5, "square", dict(border="replicate",
                                                                                        color_norm="l2")),
    "uint16 holes kept 7x7 disk constant": ((2, 6, 7, 3), (2, 6, 7), np.uint16, 7, "disk",
                                            dict(border="constant", hole=0, keep_known=True)),
    "31x31 int64 sums on 9x11, holes 255": ((9, 11), (9, 11), np.uint8, 31, "square", dict(hole=255)),
}


@pytest.mark.parametrize("case", LOOP_CASES.values(), ids=LOOP_CASES.keys())
def test_xla_loop_over_the_offsets_equals_the_portable_code(case):
    """The JAX path off the GPU's Pallas kernels (``looped_bilateral``), on whatever device JAX has."""
    pytest.importorskip("jax")
    *shapes, kwargs = case
    arrays, params = kernel_case(*shapes, **kwargs)
    with portcv.using("jax") as b:
        got = _bilateral_pallas.looped_bilateral()(*(b.xp.asarray(a) for a in arrays), **params)
    assert_same_bits(_bilateral.bilateral_kernel.portable(np, *arrays, **params), got)


def count_equations(jaxpr) -> int:
    """Equations of a jaxpr, those of the jaxprs inside its equations (jit, loops, Pallas) included."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr holds its Jaxpr
                if hasattr(inner, "eqns"):
                    total += count_equations(inner)
    return total


# Window sides traced at one accumulator width (int32 sums up to 256 offsets, int64 beyond: a
# width adds its own conversions): a 3 x 3 and a 15 x 15 disk (177 offsets), a 17 x 17 (289
# offsets) and a 31 x 31 square, and DCBF of uint16 depth (int64 at every size) from 5 x 5 to 31 x 31.
PROGRAM_CASES = {"uint8, int32 sums": (np.uint8, "disk", None, (3, 15)),
                 "uint8, int64 sums": (np.uint8, "square", None, (17, 31)),
                 "uint16 depth, holes kept": (np.uint16, "square", 0, (5, 31))}


@pytest.mark.parametrize("case", PROGRAM_CASES.values(), ids=PROGRAM_CASES.keys())
def test_jax_program_does_not_grow_with_the_window(case):
    """The JAX path this device takes traces to the same number of equations for a small window
    and a 31 x 31 one (961 offsets): the offsets are read from a table, not unrolled into the
    program (whose compile time grew with them: a 31 x 31 window did not compile in minutes on a
    CPU)."""
    jax = pytest.importorskip("jax")
    dtype, window, hole, ksizes = case
    sizes = {}
    for ksize in ksizes:
        arrays, params = kernel_case((20, 22, 3), (20, 22), dtype, ksize, window, hole=hole,
                                     keep_known=hole is not None)
        with portcv.using("jax"):
            jaxpr = jax.make_jaxpr(lambda *a: _bilateral.bilateral_kernel(*a, **params))(*arrays)
        sizes[ksize] = count_equations(jaxpr.jaxpr)
    assert len(set(sizes.values())) == 1, f"equations of the traced program by window side: {sizes}"
