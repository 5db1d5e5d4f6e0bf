"""The JAX backend's GPU kernels of the joint bilateral filter and DCBF (Pallas), run by Pallas'
interpreter on the CPU: the portable version's bits for every tile overhang, guide and value
channels, accumulator width, border and hole rule. (On a GPU the backend tests of
``joint_bilateral`` and ``dcbf`` run them compiled.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
from portcv.filters import _bilateral, _bilateral_pallas

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
