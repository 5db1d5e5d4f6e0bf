"""Depth propagation by an order-independent z-buffer: Lin et al.'s depth-video example, step (a)
of Nguyen, Do and Patel's 3D-propagation rendering.

Every pixel of a depth camera with a known depth is projected into another camera's view; where
several land on one target pixel the closest wins. The article does this with atomic operations
on the GPU; here the projection is integer arithmetic with a host-quantized matrix and the
z-buffer is a scatter-min of one packed 64-bit key per source pixel,
``key = (depth << 32) | source_index``: the minimum of a set does not depend on the order its
elements arrive in, and two sources at the same depth are told apart by their index (the
smaller wins), so every backend, thread schedule and source order gives the same bits.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend, cached_constant, require_dtype

#: Fractional bits of the quantized projection matrix (M_q = round(M 2**20)).
PROJECTION_BITS = 20
#: A z-buffer slot no source reached (larger than every key: depth < 2**16, index < 2**32).
EMPTY = 2**62
#: Depth map types of the propagation functions.
DEPTH_DTYPES = (np.uint8, np.uint16)
#: Largest |a|, |b|, |c| the host allows, so that ``2a + c`` stays inside int64.
_PROJECTION_BOUND = 2**61


# --------------------------------------------------------------------------------------------
# The z-buffer
# --------------------------------------------------------------------------------------------
@kernel("zbuffer_min")
def zbuffer_kernel(xp: Any, dest: Any, key: Any, *, slots: int) -> Any:
    """Per slot ``0 .. slots-1`` the smallest ``key`` scattered to it (``EMPTY`` if none);
    ``dest == slots`` is a dump slot for sources that land nowhere. Keys must be distinct.

    Portable version (every array library has a stable sort): sort the sources by key, then
    stably by slot; the first source of each slot's run is its minimum; scatter those (one write
    per slot, the rest go to a second dump slot). The result depends only on the set of
    ``(dest, key)`` pairs, never on their order.
    """
    import array_api_extra as xpx

    if dest.shape[0] == 0:
        return xp.full((slots,), EMPTY, dtype=xp.int64)
    by_key = xp.argsort(key, stable=True)
    d1, k1 = xp.take(dest, by_key), xp.take(key, by_key)
    by_slot = xp.argsort(d1, stable=True)
    d2, k2 = xp.take(d1, by_slot), xp.take(k1, by_slot)
    first = xp.concat([xp.ones((1,), dtype=xp.bool), d2[1:] != d2[:-1]])
    target = xp.where(first, d2, xp.full_like(d2, slots + 1))
    out = xpx.at(xp.full((slots + 2,), EMPTY, dtype=xp.int64), target).set(k2)
    return out[:slots]


@zbuffer_kernel.override("numpy", supports="every input (np.minimum.at)")
def _zbuffer_numpy(dest: Any, key: Any, *, slots: int) -> Any:
    out = np.full(slots + 1, EMPTY, dtype=np.int64)
    np.minimum.at(out, dest, key)  # unbuffered: every duplicate slot takes its true minimum
    return out[:slots]


@zbuffer_kernel.override("jax", supports="every input (.at[].min, XLA's scatter-min)")
def _zbuffer_jax(dest: Any, key: Any, *, slots: int) -> Any:
    return _zbuffer_jax_compiled(slots)(dest, key)


_JAX_ZBUFFERS: dict[int, Any] = {}


def _zbuffer_jax_compiled(slots: int) -> Any:
    fn = _JAX_ZBUFFERS.get(slots)
    if fn is None:
        import jax.numpy as jnp

        from ..backends.jax import jit

        def scatter_min(dest: Any, key: Any) -> Any:
            return jnp.full((slots + 1,), EMPTY, dtype=jnp.int64).at[dest].min(key)[:slots]

        fn = _JAX_ZBUFFERS[slots] = jit(scatter_min)
    return fn


# --------------------------------------------------------------------------------------------
# Projection kernels: one (dest, key) per source pixel
# --------------------------------------------------------------------------------------------
@kernel("depth_project")
def project_kernel(xp: Any, depth: Any, matrix: Any, *, dst_shape: tuple[int, int], unknown: int,
                   max_depth: int) -> tuple[Any, Any]:
    """Per source pixel ``(u, v)`` with depth ``Z != unknown``: ``[a, b, c] = M_q [uZ, vZ, Z, 1]``
    (int64), target ``u' = (2a + c) // (2c)``, ``v' = (2b + c) // (2c)`` (round half up; ``c > 0``),
    depth ``z' = (c + 2**19) >> 20``; a source behind the camera, outside the target, or whose
    ``z'`` is not in ``1 .. max_depth`` or is ``unknown`` goes to the dump slot. ``M_q`` (int64,
    3 x 4) is an array, not a static parameter: a moving camera compiles nothing new under JAX."""
    height, width = depth.shape
    dh, dw = dst_shape
    z = xp.reshape(xp.astype(depth, xp.int64), (-1,))
    index = xp.arange(height * width, dtype=xp.int64)
    u, v = index % width, index // width
    uz, vz = u * z, v * z
    rows = []
    for r in range(3):
        m0, m1, m2, m3 = (matrix[r, k] for k in range(4))
        rows.append(uz * m0 + vz * m1 + z * m2 + m3)
    a, b, c = rows
    in_front = c > 0
    two_c = xp.where(in_front, 2 * c, xp.ones_like(c))
    tu = (2 * a + c) // two_c
    tv = (2 * b + c) // two_c
    tz = (c + (1 << (PROJECTION_BITS - 1))) >> PROJECTION_BITS
    valid = ((z != unknown) & in_front & (tu >= 0) & (tu < dw) & (tv >= 0) & (tv < dh)
             & (tz >= 1) & (tz <= max_depth) & (tz != unknown))
    dest = xp.where(valid, tv * dw + tu, xp.full_like(tu, dh * dw))
    key = (xp.where(valid, tz, xp.zeros_like(tz)) << 32) | index
    return dest, key


@kernel("disparity_project")
def disparity_project_kernel(xp: Any, disparity: Any, *, direction: int, frac_bits: int, unknown: int,
                             max_value: int) -> tuple[Any, Any]:
    """Rectified views: ``x' = (2**f x + direction D + 2**(f-1)) >> f`` (round half up; ``D`` in
    Q``f``), the same row; nearer = larger disparity, so the key's depth part is ``max - D``."""
    height, width = disparity.shape
    d = xp.reshape(xp.astype(disparity, xp.int64), (-1,))
    index = xp.arange(height * width, dtype=xp.int64)
    u, v = index % width, index // width
    tu = ((u << frac_bits) + direction * d + ((1 << frac_bits) >> 1)) >> frac_bits
    valid = (d != unknown) & (tu >= 0) & (tu < width)
    dest = xp.where(valid, v * width + tu, xp.full_like(tu, height * width))
    key = ((max_value - d) << 32) | index
    return dest, key


@kernel("zbuffer_gather")
def gather_kernel(xp: Any, best: Any, color: Any, *, depth_of_key: tuple[int, int], unknown: int, fill: int,
                  dtype: str, dst_shape: tuple[int, int], with_color: bool) -> tuple[Any, Any]:
    """The winners' depths (``offset + sign (key >> 32)``; ``unknown`` where no source landed)
    and, ``with_color``, their colours from the flattened source image (``fill`` elsewhere)."""
    offset, sign = depth_of_key
    hit = best != EMPTY
    depth = xp.where(hit, offset + sign * (best >> 32), xp.full_like(best, unknown))
    depth = xp.reshape(xp.astype(depth, getattr(xp, dtype)), dst_shape)
    if not with_color:
        return depth, None
    winner = xp.where(hit, best & 0xFFFFFFFF, xp.zeros_like(best))
    flat = xp.reshape(color, (color.shape[0] * color.shape[1],) + tuple(color.shape[2:]))
    picked = xp.take(flat, winner, axis=0)
    mask = hit[:, None] if picked.ndim == 2 else hit
    picked = xp.where(mask, picked, xp.full_like(picked, fill))
    return depth, xp.reshape(picked, dst_shape + tuple(color.shape[2:]))


# --------------------------------------------------------------------------------------------
# Host-side checks and the matrix
# --------------------------------------------------------------------------------------------
#: ``R`` must be orthonormal within this (the largest entry of ``|R^T R - I|``): rotations built
#: in float32 pass (errors near 1e-7); scalings, shears and singular matrices do not.
ROTATION_TOLERANCE = 1e-6


def _matrix(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A finite float64 array of ``shape`` read on the host (it is a parameter, not image data)."""
    # complex, bool, objects, ragged lists and (before any copy) huge arrays refused
    arr = _validate.real_array(value, name, max_size=math.prod(shape))
    if arr.shape != shape:
        if arr.size == math.prod(shape) and len(shape) == 1:
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def projection_matrix(K_src: Any, K_dst: Any, R: Any, t: Any) -> tuple[tuple[int, ...], ...]:
    """``M_q = round(2**20 K_dst [R | t] diag(K_src**-1, 1))`` (3 x 4 Python ints, half to even)."""
    arrays = (_matrix(K_src, "K_src", (3, 3)), _matrix(K_dst, "K_dst", (3, 3)), _matrix(R, "R", (3, 3)),
              _matrix(t, "t", (3,)))
    return _fixed_point_projection(*(tuple(a.ravel().tolist()) for a in arrays))


def _check_camera(k: np.ndarray, name: str) -> None:
    """An intrinsic matrix ``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]`` with ``fx, fy > 0``."""
    if k[1, 0] != 0 or k[2, 0] != 0 or k[2, 1] != 0:
        raise ValueError(f"{name} must be upper-triangular, [[fx, s, cx], [0, fy, cy], [0, 0, 1]], got {k.tolist()}")
    if not (k[0, 0] > 0 and k[1, 1] > 0):
        raise ValueError(f"{name} must have positive focal lengths fx = {name}[0, 0] and fy = {name}[1, 1], "
                         f"got {k[0, 0]} and {k[1, 1]}")
    if k[2, 2] != 1:
        raise ValueError(f"{name}[2, 2] must be 1 (the matrix of a pinhole camera), got {k[2, 2]}")


def _check_rotation(r: np.ndarray) -> None:
    """A proper rotation: orthonormal within :data:`ROTATION_TOLERANCE`, determinant +1."""
    off = float(np.abs(r.T @ r - np.eye(3)).max())
    if off > ROTATION_TOLERANCE:
        raise ValueError(f"R must be a rotation (orthonormal: R^T R = I within {ROTATION_TOLERANCE}); R^T R is "
                         f"off by {off:.3g}: a scaling, shear or singular matrix, got {r.tolist()}")
    if np.linalg.det(r) < 0:
        raise ValueError(f"R must be a proper rotation (determinant +1), got a reflection (determinant "
                         f"{np.linalg.det(r):.6g}): {r.tolist()}")


@functools.lru_cache(maxsize=64)
def _fixed_point_projection(ks: tuple, kd: tuple, rot: tuple, tr: tuple) -> tuple[tuple[int, ...], ...]:
    """:func:`projection_matrix` of the flattened float64 values (cached: a video's cameras repeat)."""
    ks, kd, rot = (np.array(v).reshape(3, 3) for v in (ks, kd, rot))
    tr = np.array(tr)
    _check_camera(ks, "K_src")
    _check_camera(kd, "K_dst")
    _check_rotation(rot)
    if abs(np.linalg.det(ks)) < 1e-12 or np.linalg.cond(ks) > 1e12:
        raise ValueError(f"K_src must be an invertible camera matrix, got {ks.tolist()}")
    m = kd @ np.concatenate([rot @ np.linalg.inv(ks), tr[:, None]], axis=1)
    if np.abs(m).max() * 2.0**PROJECTION_BITS >= 2.0**62:
        raise ValueError("K_dst, R, t: the projection matrix is too large for 64-bit fixed point")
    return tuple(tuple(int(x) for x in np.rint(row * 2.0**PROJECTION_BITS)) for row in m)


def _check_bound(matrix: tuple, shape: tuple[int, int], max_depth: int) -> None:
    """Every ``a, b, c`` of the projection below 2**61 in magnitude (so ``2a + c`` fits int64)."""
    h, w = shape
    for row in matrix:
        bound = (abs(row[0]) * (w - 1) + abs(row[1]) * (h - 1) + abs(row[2])) * max_depth + abs(row[3])
        if bound >= _PROJECTION_BOUND:
            raise ValueError(f"depth: a {h}x{w} map of depths up to {max_depth} with these cameras needs more than "
                             "64-bit integers in the projection; use smaller depth units")


def _depth_map(depth: Any, name: str) -> Any:
    dtype = getattr(depth, "dtype", None)
    want = np.dtype(dtype) if dtype is not None and np.dtype(dtype) in tuple(map(np.dtype, DEPTH_DTYPES)) else None
    if dtype is not None and want is None:
        raise TypeError(f"{name} must have dtype uint8 or uint16, got {np.dtype(dtype)}")
    arr = _validate.image(depth, name, dtype=want or np.uint16, max_ndim=2, gray=True)
    if arr.size >= 2**31:
        raise ValueError(f"{name} has too many pixels for 32-bit source indices")
    return arr


def _shape(value: Any) -> tuple[int, int]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"dst_shape must be an (H, W) pair, got {value!r}")
    h = _validate.integer(value[0], "dst_shape", low=1, high=2**20)
    w = _validate.integer(value[1], "dst_shape", low=1, high=2**20)
    if h * w > _validate.MAX_ELEMENTS:
        raise ValueError(f"dst_shape {value!r} has too many pixels")
    return h, w


def _color_of(color: Any, depth: Any, name: str = "color") -> Any:
    arr = _validate.image(color, name)
    if tuple(arr.shape[:2]) != tuple(depth.shape) or arr.ndim > 3:
        raise ValueError(f"{name} must be (H, W) or (H, W, C) with the depth map's (H, W) = {tuple(depth.shape)}, "
                         f"got shape {tuple(arr.shape)}")
    return arr


def _run(depth: Any, dest_key: tuple[Any, Any], color: Any, *, slots: int, depth_of_key: tuple[int, int],
         unknown: int, fill: int, dst_shape: tuple[int, int]) -> tuple[Any, Any]:
    dest, key = dest_key
    best = zbuffer_kernel(dest, key, slots=slots)
    with_color = color is not None
    if not with_color:
        color = backend().xp.empty((1, 1), dtype=backend().xp.uint8)  # unread
    return gather_kernel(best, color, depth_of_key=depth_of_key, unknown=unknown, fill=fill,
                         dtype=np.dtype(depth.dtype).name, dst_shape=dst_shape, with_color=with_color)


def _propagate(depth: Any, color: Any, K_src: Any, K_dst: Any, R: Any, t: Any, dst_shape: Any, unknown: Any,
               fill: int) -> tuple[Any, Any]:
    depth = _depth_map(depth, "depth")
    if color is not None:
        color = _color_of(color, depth)
    dst_shape = _shape(dst_shape)
    max_depth = int(np.iinfo(np.dtype(depth.dtype)).max)
    unknown = _validate.integer(unknown, "unknown", low=0, high=max_depth)
    matrix = projection_matrix(K_src, K_dst, R, t)
    _check_bound(matrix, tuple(depth.shape), max_depth)
    require_dtype(backend().xp.empty((0,), dtype=backend().xp.int64), "int64", "depth propagation")
    device_matrix = cached_constant(("projection matrix", matrix), lambda: np.array(matrix, dtype=np.int64))
    dest_key = project_kernel(depth, device_matrix, dst_shape=dst_shape,
                              unknown=unknown, max_depth=max_depth)
    return _run(depth, dest_key, color, slots=dst_shape[0] * dst_shape[1], depth_of_key=(0, 1), unknown=unknown,
                fill=fill, dst_shape=dst_shape)


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
def propagate(depth: Any, K_src: Any, K_dst: Any, R: Any, t: Any, dst_shape: Any, *, unknown: int = 0) -> Any:
    """Propagate a depth map to another camera's view, keeping the closest depth per pixel.

    Every source pixel ``(u, v)`` with a known depth ``Z`` is lifted to 3-D,
    ``X = Z K_src**-1 [u, v, 1]``, moved into the target camera's frame, ``X' = R X + t``, and
    projected, ``[u', v'] = round(K_dst X' / z')``; the target pixel keeps the smallest
    ``z' = X'_z`` that lands on it (a z-buffer). Lin et al.'s depth-propagation step (Table 5:
    800 x 600), exact and independent of the order the sources are processed in.

    Parameters
    ----------
    depth : (H, W) uint8 or uint16 array
        Depth map of the source camera (units of your choice, e.g. mm; ``t`` in the same
        units); ``unknown`` marks pixels without a depth.
    K_src, K_dst : (3, 3) array_like of real numbers
        Intrinsic matrices of the source and target cameras (read on the host): pinhole
        cameras ``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]``, upper-triangular with focal lengths
        ``fx, fy > 0`` and ``K[2, 2] = 1`` (skew ``s`` and principal point ``(cx, cy)`` free).
    R : (3, 3) array_like of real numbers
        Rotation from the source camera's frame to the target's: a proper rotation, orthonormal
        within 1e-6 (``max |R^T R - I| <= 1e-6``) with determinant +1.
    t : (3,) array_like of real numbers
        Translation from the source camera's frame to the target's, in depth units (finite).
    dst_shape : (int, int)
        ``(H', W')`` of the target view.
    unknown : int
        The depth value of a missing pixel, in the input and in the output.

    Returns
    -------
    (H', W') array of ``depth``'s dtype
        The closest propagated depth per target pixel; ``unknown`` where no source landed
        (disocclusions and cracks, which :func:`dcbf` fills).

    Notes
    -----
    The host forms ``M = K_dst [R | t] diag(K_src**-1, 1)`` (3 x 4, float64) and quantizes it
    once: ``M_q = round(2**20 M)``. Per source pixel, in int64 (a bound the host checks:
    ``|a|, |b|, |c| < 2**61``)::

        [a, b, c] = M_q [u Z, v Z, Z, 1]
        u' = (2a + c) // (2c),  v' = (2b + c) // (2c)      (round half up; only c > 0: in front)
        z' = (c + 2**19) >> 20                             (round half up)

    Sources behind the camera, outside the target view, or whose ``z'`` is 0, above the dtype's
    maximum or equal to ``unknown`` are dropped. The z-buffer scatters one packed key
    ``(z' << 32) | (v W + u)`` per source and keeps the minimum per target pixel
    (NumPy ``np.minimum.at``, JAX ``.at[].min``, elsewhere a sort): the nearest source wins, a tie
    in depth goes to the source earlier in raster order, so the result is the sequential loop
    "for each source in raster order: write if nearer" for any processing order.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> K = np.array([[100.0, 0, 2], [0, 100.0, 1], [0, 0, 1]])
    >>> depth = np.full((3, 5), 100, np.uint16)                 # a wall 100 units away
    >>> out = portcv.depth.propagate(depth, K, K, np.eye(3), [-2.0, 0, 0], (3, 5))
    >>> portcv.to_numpy(out)                                      # seen 2 units to the right
    array([[100, 100, 100,   0,   0],
           [100, 100, 100,   0,   0],
           [100, 100, 100,   0,   0]], dtype=uint16)
    """
    return _propagate(depth, None, K_src, K_dst, R, t, dst_shape, unknown, 0)[0]


def propagate_color(depth: Any, color: Any, K_src: Any, K_dst: Any, R: Any, t: Any, dst_shape: Any, *,
                    unknown: int = 0, fill: int = 0) -> tuple[Any, Any]:
    """:func:`propagate` that also carries each winning source pixel's colour to the target view.

    The colour rendering step of 3-D propagation: the target pixel takes the colour of the same
    source pixel whose depth won its z-buffer.

    Parameters
    ----------
    depth : (H, W) uint8 or uint16 array
        As in :func:`propagate`.
    color : (H, W) or (H, W, C) uint8 array
        The source view's image, registered with ``depth``.
    K_src, K_dst, R, t, dst_shape, unknown
        As in :func:`propagate`.
    fill : int
        Colour of target pixels no source reached (0 to 255).

    Returns
    -------
    depth : (H', W') array of ``depth``'s dtype
    color : (H', W') or (H', W', C) uint8 array

    Examples
    --------
    >>> import numpy as np, portcv
    >>> K = np.array([[100.0, 0, 2], [0, 100.0, 1], [0, 0, 1]])
    >>> depth = np.full((1, 5), 100, np.uint16)
    >>> color = np.array([[10, 20, 30, 40, 50]], np.uint8)
    >>> d, c = portcv.depth.propagate_color(depth, color, K, K, np.eye(3), [-2.0, 0, 0], (1, 5))
    >>> portcv.to_numpy(c)
    array([[30, 40, 50,  0,  0]], dtype=uint8)
    """
    fill = _validate.integer(fill, "fill", low=0, high=255)
    if color is None:
        raise TypeError("color must be an array (NumPy, CuPy or JAX), got NoneType")
    return _propagate(depth, color, K_src, K_dst, R, t, dst_shape, unknown, fill)


def warp_disparity(disparity: Any, *, direction: int = -1, frac_bits: int = 4, unknown: int = 0,
                   color: Any = None, fill: int = 0) -> Any:
    """Warp a disparity map to the other view of a rectified stereo pair, nearest surface first.

    The rectified special case of :func:`propagate`: a pixel at column ``x`` with disparity
    ``D`` appears at column ``x + direction D`` of the same row in the other view and keeps its
    disparity there; where several land on one pixel the largest disparity (the nearest
    surface) wins, a tie going to the source earlier in raster order.

    Parameters
    ----------
    disparity : (H, W) uint8 or uint16 array
        Disparities in fixed point with ``frac_bits`` fractional bits (Q4 by default: 16 units
        per pixel); ``unknown`` marks pixels without one.
    direction : {-1, 1}
        -1: left view to right (``x' = x - D``, Middlebury's convention); 1: right to left.
    frac_bits : int
        Fractional bits of the disparities, 0 to 8.
    unknown : int
        The value of a missing disparity, in the input and in the output.
    color : (H, W) or (H, W, C) uint8 array, optional
        The source view's image: its winning pixels are carried along too.
    fill : int
        Colour of pixels no source reached.

    Returns
    -------
    (H, W) array of ``disparity``'s dtype, or ``(disparity, color)`` when ``color`` is given

    Notes
    -----
    ``x' = (2**f x + direction D + 2**(f-1)) >> f`` (round half up, integers only); the
    z-buffer key is ``((max - D) << 32) | (y W + x)`` with ``max`` the dtype's maximum, scattered
    with a minimum as in :func:`propagate`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> disp = np.array([[16, 16, 32, 32, 0]], np.uint8)          # Q4: 1, 1, 2, 2 pixels; 0 unknown
    >>> portcv.to_numpy(portcv.depth.warp_disparity(disp))
    array([[32, 32,  0,  0,  0]], dtype=uint8)
    """
    disparity = _depth_map(disparity, "disparity")
    if isinstance(direction, bool) or not isinstance(direction, numbers.Integral) or direction not in (-1, 1):
        raise ValueError(f"direction must be -1 (left to right) or 1 (right to left), got {direction!r}")
    frac_bits = _validate.integer(frac_bits, "frac_bits", low=0, high=8)
    max_value = int(np.iinfo(np.dtype(disparity.dtype)).max)
    unknown = _validate.integer(unknown, "unknown", low=0, high=max_value)
    fill = _validate.integer(fill, "fill", low=0, high=255)
    if color is not None:
        color = _color_of(color, disparity)
    require_dtype(backend().xp.empty((0,), dtype=backend().xp.int64), "int64", "warp_disparity")
    dest_key = disparity_project_kernel(disparity, direction=int(direction), frac_bits=frac_bits, unknown=unknown,
                                        max_value=max_value)
    shape = tuple(disparity.shape)
    out, col = _run(disparity, dest_key, color, slots=shape[0] * shape[1], depth_of_key=(max_value, -1),
                    unknown=unknown, fill=fill, dst_shape=shape)
    return out if color is None else (out, col)
