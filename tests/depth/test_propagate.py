"""portcv.depth.propagate / propagate_color / warp_disparity: every backend equals NumPy, NumPy
equals the sequential raster-order z-buffer, the result does not depend on the order of the
sources, and the coverage on the real motorcycle pair."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv.depth import propagate, propagate_color, warp_disparity
from portcv.depth._propagate import EMPTY, zbuffer_kernel

from ..helpers import assert_same_bits, matches_numpy, on_backend, runs_its_overrides
from . import oracle_depth as oracle

#: The downscaled Middlebury 2014 motorcycle calibration scikit-image documents (pixels, mm).
FOCAL, CX_LEFT, CY, DOFFS, BASELINE = 994.978, 311.193, 254.877, 31.086, 193.001


def rotation(ax, ay, az):
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


@st.composite
def scenes(draw, *, max_h=14, max_w=16, fixed=False):
    """A small depth map with holes and a pair of cameras that makes many collisions (the target
    camera zooms out, moves and turns), ties in depth included (depth drawn from few values).
    ``fixed``: one source and one target shape (JAX compiles each shape)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    h, w = (7, 9) if fixed else (draw(st.integers(1, max_h)), draw(st.integers(1, max_w)))
    dtype = draw(st.sampled_from([np.uint8, np.uint16]))
    levels = draw(st.sampled_from([3, 50]))
    base = 40 if dtype == np.uint8 else 900
    depth = (base + rng.integers(0, levels, (h, w)) * (2 if dtype == np.uint8 else 40)).astype(dtype)
    depth[rng.random((h, w)) < draw(st.sampled_from([0.0, 0.2]))] = 0
    f = draw(st.sampled_from([8.0, 20.0]))
    K_src = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1]])
    zoom = draw(st.sampled_from([1.0, 0.5, 0.37]))
    dh, dw = (6, 10) if fixed else (draw(st.integers(1, max_h)), draw(st.integers(1, max_w)))
    K_dst = np.array([[f * zoom, 0, (dw - 1) / 2], [0, f * zoom, (dh - 1) / 2], [0, 0, 1]])
    R = rotation(*(draw(st.sampled_from([0.0, 0.05, -0.1])) for _ in range(3)))
    scale = 1.0 if dtype == np.uint8 else 20.0
    t = np.array([draw(st.sampled_from([0.0, 3.0, -5.0])), draw(st.sampled_from([0.0, 2.0])),
                  draw(st.sampled_from([0.0, 10.0]))]) * scale
    return depth, K_src, K_dst, R, t, (dh, dw)


def matches_numpy_all(backend, fn, *args, **kwargs):
    """:func:`matches_numpy` for functions returning an array or a tuple of arrays."""
    expected = on_backend("numpy", fn, *args, **kwargs)
    actual = on_backend(backend, fn, *args, **kwargs)
    pairs = zip(expected, actual) if isinstance(expected, tuple) else [(expected, actual)]
    for e, a in pairs:
        assert_same_bits(e, a)
    return tuple(map(portcv.to_numpy, expected)) if isinstance(expected, tuple) else portcv.to_numpy(expected)


@functools.lru_cache(maxsize=1)
def motorcycle():
    """Left and right images, the left disparity in Q4 (uint16) and the left depth in mm (uint16),
    0 where the ground truth has none; scikit-image documents the calibration of these
    downscaled images (focal 994.978 px, principal points 311.193 and 342.279 px, baseline
    193.001 mm), so Z = f B / (d + doffs)."""
    data = pytest.importorskip("skimage.data")
    left, right, disp = data.stereo_motorcycle()
    known = np.isfinite(disp)
    d = np.where(known, disp, 0)
    q4 = np.where(known, np.rint(d * 16), 0).astype(np.uint16)
    z = np.where(known, np.rint(FOCAL * BASELINE / (d + DOFFS)), 0).astype(np.uint16)
    return left, right, q4, z


def motorcycle_cameras():
    K_left = np.array([[FOCAL, 0, CX_LEFT], [0, FOCAL, CY], [0, 0, 1]])
    K_right = np.array([[FOCAL, 0, CX_LEFT + DOFFS], [0, FOCAL, CY], [0, 0, 1]])
    return K_left, K_right, np.eye(3), np.array([-BASELINE, 0, 0])


# --------------------------------------------------------------------------------------------
# every backend equals NumPy; NumPy equals the sequential oracle
# --------------------------------------------------------------------------------------------
@given(data=st.data(), seed=st.integers(0, 99))
def test_propagate_same_bits_on_every_backend(backend, data, seed):
    depth, K_src, K_dst, R, t, dst_shape = data.draw(scenes(fixed=backend == "jax"))
    color = np.random.default_rng(seed).integers(0, 256, depth.shape + (3,), dtype=np.uint8)
    with runs_its_overrides("depth_project", "zbuffer_min", "zbuffer_gather"):
        matches_numpy(backend, propagate, depth, K_src, K_dst, R, t, dst_shape)
        d_np, c_np = on_backend("numpy", propagate_color, depth, color, K_src, K_dst, R, t, dst_shape, fill=7)
        d_b, c_b = on_backend(backend, propagate_color, depth, color, K_src, K_dst, R, t, dst_shape, fill=7)
    assert_same_bits(d_np, d_b)
    assert_same_bits(c_np, c_b)


@given(scene=scenes())
def test_propagate_equals_the_raster_order_oracle(scene):
    depth, K_src, K_dst, R, t, dst_shape = scene
    expected = oracle.propagate_raster(depth, K_src, K_dst, R, t, dst_shape)
    np.testing.assert_array_equal(portcv.to_numpy(propagate(depth, K_src, K_dst, R, t, dst_shape)), expected)
    color = np.arange(depth.size, dtype=np.int64).reshape(depth.shape).astype(np.uint8)
    ed, ec = oracle.propagate_raster(depth, K_src, K_dst, R, t, dst_shape, color=color, fill=3)
    d, c = propagate_color(depth, color, K_src, K_dst, R, t, dst_shape, fill=3)
    np.testing.assert_array_equal(portcv.to_numpy(d), ed)
    np.testing.assert_array_equal(portcv.to_numpy(c), ec)


@given(data=st.data(), direction=st.sampled_from([-1, 1]), frac_bits=st.sampled_from([0, 2, 4]))
def test_warp_disparity_equals_the_oracle_on_every_backend(backend, data, direction, frac_bits):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    h, w = (5, 12) if backend == "jax" else (data.draw(st.integers(1, 9)), data.draw(st.integers(1, 17)))
    dtype = data.draw(st.sampled_from([np.uint8, np.uint16]))
    disp = rng.integers(0, (4 << frac_bits) + 1, (h, w)).astype(dtype)  # up to 4 pixels: many collisions
    color = rng.integers(0, 256, (h, w), dtype=np.uint8)
    with runs_its_overrides("disparity_project", "zbuffer_min", "zbuffer_gather"):
        out, col = matches_numpy_all(backend, warp_disparity, disp, direction=direction, frac_bits=frac_bits,
                                     color=color)
    ed, ec = oracle.warp_disparity_raster(disp, direction, frac_bits, color=color)
    np.testing.assert_array_equal(out, ed)
    np.testing.assert_array_equal(col, ec)
    assert_same_bits(on_backend(backend, warp_disparity, disp, direction=direction, frac_bits=frac_bits), ed)


# --------------------------------------------------------------------------------------------
# order independence
# --------------------------------------------------------------------------------------------
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_zbuffer_is_invariant_to_source_order(backend, data, seed):
    """Permuting the sources (the order a GPU's threads would reach the z-buffer in) changes
    nothing: the scatter-min of distinct packed keys is a function of the set."""
    if backend == "jax":  # a compilation per shape
        n, slots = data.draw(st.sampled_from([37, 300])), data.draw(st.sampled_from([7, 40]))
    else:
        n, slots = data.draw(st.integers(1, 300)), data.draw(st.integers(1, 40))
    rng = np.random.default_rng(seed)
    dest = rng.integers(0, slots + 1, n).astype(np.int64)  # slots: the dump slot
    z = rng.integers(1, 4, n).astype(np.int64)  # few depths: many ties, decided by the index
    key = (z << 32) | np.arange(n, dtype=np.int64)
    with portcv.using(backend):
        base = portcv.to_numpy(zbuffer_kernel(portcv.asarray(dest), portcv.asarray(key), slots=slots))
        for _ in range(3):
            p = rng.permutation(n)
            shuffled = zbuffer_kernel(portcv.asarray(dest[p]), portcv.asarray(key[p]), slots=slots)
            np.testing.assert_array_equal(portcv.to_numpy(shuffled), base)
    expected = np.full(slots, EMPTY, np.int64)
    for d, k in zip(dest, key):
        if d < slots:
            expected[d] = min(expected[d], k)
    np.testing.assert_array_equal(base, expected)


@given(scene=scenes(max_h=8, max_w=9), seed=st.integers(0, 2**32 - 1))
def test_the_oracle_in_any_order_gives_the_raster_result(scene, seed):
    depth, K_src, K_dst, R, t, dst_shape = scene
    order = np.random.default_rng(seed).permutation(depth.size)
    np.testing.assert_array_equal(oracle.propagate_raster(depth, K_src, K_dst, R, t, dst_shape, order=order),
                                  portcv.to_numpy(propagate(depth, K_src, K_dst, R, t, dst_shape)))


# --------------------------------------------------------------------------------------------
# the real motorcycle pair
# --------------------------------------------------------------------------------------------
def test_motorcycle_coverage_and_oracle():
    left, right, q4, z = motorcycle()
    out, col = warp_disparity(q4, color=left)
    out, col = portcv.to_numpy(out), portcv.to_numpy(col)
    hit = out != 0
    coverage = float(hit.mean())
    psnr = 10 * np.log10(255.0**2 / np.mean((col[hit].astype(float) - right[hit]) ** 2))
    zd = portcv.to_numpy(propagate(z, *motorcycle_cameras(), z.shape))
    coverage_3d = float((zd != 0).mean())
    print(f"motorcycle left -> right: warp_disparity coverage {100 * coverage:.2f} %, colour PSNR {psnr:.1f} dB "
          f"on covered pixels; propagate (depth in mm, calibrated cameras) coverage {100 * coverage_3d:.2f} %")
    assert 0.82 <= coverage <= 0.84 and psnr > 25 and abs(coverage_3d - coverage) < 0.01
    np.testing.assert_array_equal(out, oracle.warp_disparity_raster(q4))
    np.testing.assert_array_equal(zd, oracle.propagate_raster(z, *motorcycle_cameras(), z.shape))


def test_motorcycle_same_bits_on_every_backend(backend):
    left, _, q4, z = motorcycle()
    matches_numpy_all(backend, warp_disparity, q4, color=left)
    matches_numpy(backend, propagate, z, *motorcycle_cameras(), z.shape)


# --------------------------------------------------------------------------------------------
# bad input, inputs left alone
# --------------------------------------------------------------------------------------------
def test_bad_input_raises_naming_the_argument():
    K, depth = np.eye(3) * 10 + np.diag([0, 0, -9]), np.full((4, 5), 50, np.uint16)
    with pytest.raises(ValueError, match="K_src"):
        propagate(depth, np.zeros((3, 3)), K, np.eye(3), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="K_dst"):
        propagate(depth, K, np.eye(2), np.eye(3), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="R"):
        propagate(depth, K, K, np.full((3, 3), np.nan), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="t"):
        propagate(depth, K, K, np.eye(3), [0, 0], (4, 5))
    with pytest.raises(ValueError, match="dst_shape"):
        propagate(depth, K, K, np.eye(3), [0, 0, 0], (4,))
    with pytest.raises(TypeError, match="depth"):
        propagate(depth.astype(np.float32), K, K, np.eye(3), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="depth"):
        propagate(depth[None], K, K, np.eye(3), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="depth"):
        propagate(depth, K, K, np.eye(3), [3e11, 0, 0], (4, 5))  # |a| beyond 2**61
    with pytest.raises(ValueError, match="color"):
        propagate_color(depth, np.zeros((4, 6), np.uint8), K, K, np.eye(3), [0, 0, 0], (4, 5))
    with pytest.raises(ValueError, match="direction"):
        warp_disparity(depth, direction=0)
    with pytest.raises(ValueError, match="frac_bits"):
        warp_disparity(depth, frac_bits=9)
    with pytest.raises(ValueError, match="unknown"):
        warp_disparity(depth.astype(np.uint8), unknown=300)


_K = np.array([[10.0, 0.5, 2.0], [0, 11.0, 1.5], [0, 0, 1]])
_SHEAR = np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]])


@pytest.mark.parametrize("K_src, K_dst, R, t, error, match", [
    (_K, np.zeros((3, 3)), np.eye(3), np.zeros(3), ValueError, r"K_dst must have positive focal lengths"),
    (_K * [[-1], [1], [1]], _K, np.eye(3), np.zeros(3), ValueError, r"K_src must have positive focal lengths"),
    (_K, _K + np.tri(3, k=-1), np.eye(3), np.zeros(3), ValueError, r"K_dst must be upper-triangular"),
    (_K, _K * [[1], [1], [2]], np.eye(3), np.zeros(3), ValueError, r"K_dst\[2, 2\] must be 1"),
    (_K, _K, 2 * np.eye(3), np.zeros(3), ValueError, r"R must be a rotation .* off by 3"),  # doubled every depth
    (_K, _K, np.diag([1.0, 1, -1]), np.zeros(3), ValueError, r"R must be a proper rotation .* reflection"),
    (_K, _K, _SHEAR, np.zeros(3), ValueError, r"R must be a rotation"),
    (_K, _K, np.zeros((3, 3)), np.zeros(3), ValueError, r"R must be a rotation"),  # singular
    (_K.astype(complex) + 1j, _K, np.eye(3), np.zeros(3), TypeError, r"K_src must hold real numbers, got dtype complex"),
    (_K, _K, np.eye(3) + 0j, np.zeros(3), TypeError, r"R must hold real numbers, got dtype complex"),
    (_K, _K, np.eye(3), np.zeros(3) + 1j, TypeError, r"t must hold real numbers, got dtype complex"),
    (_K, _K, np.eye(3, dtype=bool), np.zeros(3), TypeError, r"R must hold real numbers, got dtype bool"),
    (_K, _K, None, np.zeros(3), TypeError, r"R must hold real numbers, got dtype object"),
    (_K, _K, [[1, 0, 0], [0, 1], [0, 0, 1]], np.zeros(3), ValueError, r"R must be a rectangular array"),
    (_K, _K, np.eye(3), [0, np.inf, 0], ValueError, r"t must be finite"),
    (np.broadcast_to(1.0, (2**16, 2**16)), _K, np.eye(3), np.zeros(3), ValueError,
     r"K_src has 4294967296 values .* at most 9"),  # a 32 GiB float64 copy before the shape check
])
def test_degenerate_geometry_is_refused(K_src, K_dst, R, t, error, match):
    """Each of these returned a result before (all unknown, every depth doubled, a mirror image,
    the imaginary parts dropped)."""
    depth = np.full((4, 5), 50, np.uint16)
    with pytest.raises(error, match=match):
        propagate(depth, K_src, K_dst, R, t, (4, 5))
    with pytest.raises(error, match=match):
        propagate_color(depth, np.zeros((4, 5, 3), np.uint8), K_src, K_dst, R, t, (4, 5))


def test_rotations_built_in_float32_and_skewed_cameras_are_accepted():
    """The tolerance takes a rotation rounded to float32 (errors near 1e-7); skew and any
    principal point are a camera's."""
    a = 0.3
    R = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]], np.float32)
    out = propagate(np.full((4, 5), 50, np.uint16), _K, _K, R, [0.0, 0, 0], (4, 5))
    assert out.shape == (4, 5)


def test_points_behind_the_camera_are_dropped():
    K = np.array([[10.0, 0, 2], [0, 10.0, 2], [0, 0, 1]])
    depth = np.full((5, 5), 20, np.uint8)
    out = portcv.to_numpy(propagate(depth, K, K, np.eye(3), [0, 0, -30.0], (5, 5)))  # all now at z = -10
    assert (out == 0).all()


def test_inputs_are_not_modified_or_aliased():
    left, _, q4, z = motorcycle()
    q, c = q4[:40, :60].copy(), left[:40, :60].copy()
    q0, c0 = q.copy(), c.copy()
    out, col = on_backend("numpy", warp_disparity, q, color=c)
    assert_same_bits(q0, q)
    assert_same_bits(c0, c)
    assert not np.shares_memory(out, q) and not np.shares_memory(col, c)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_propagation_needs_64_bit_integers_on_jax():
    """The packed keys and the projection are int64: without jax_enable_x64 JAX would silently
    compute them in 32 bits, so the call refuses instead."""
    from ..helpers import jax_without_x64

    K = np.array([[10.0, 0, 2], [0, 10.0, 2], [0, 0, 1]])
    with jax_without_x64():
        with pytest.raises(RuntimeError, match="jax_enable_x64"):
            propagate(np.full((4, 5), 9, np.uint8), K, K, np.eye(3), [0, 0, 0], (4, 5))
        with pytest.raises(RuntimeError, match="jax_enable_x64"):
            warp_disparity(np.full((4, 5), 9, np.uint8))
