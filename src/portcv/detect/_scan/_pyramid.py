"""The multi-scale scan's host side both detectors share: the packed pyramid's maps, the window
-> image mapping and the plan capacities of static-shape backends."""

from __future__ import annotations

import numpy as np

#: Smallest plan capacity on backends that compile per shape (JAX); see next_capacity.
MIN_CAPACITY = 256


def next_capacity(count: int, limit: int) -> int:
    """The smallest capacity >= ``count`` of the form ``m * 2^k`` with 8 <= m < 16 (at least
    MIN_CAPACITY, at most ``limit``): 8 steps per octave waste at most 1/8 of a plan, and a
    frame geometry still meets only a few capacities (each a JAX compilation)."""
    cap = MIN_CAPACITY
    while cap < count:
        cap *= 2
    if cap > MIN_CAPACITY:
        step = cap // 16
        cap = -(-count // step) * step
    return max(1, min(cap, limit))


def level_rects(factors: np.ndarray, level: np.ndarray, x: np.ndarray, y: np.ndarray,
                window: tuple[int, int]) -> np.ndarray:
    """Image rects ``[x, y, w, h]`` int32 of windows at level coordinates ``(x, y)`` of levels
    ``level`` scaled by float32 ``factors``: ``rint(float32(x) * f)`` etc., OpenCV's mapping."""
    f = factors[level]  # float32
    rx = np.rint(x.astype(np.float32) * f)  # float32 products, as OpenCV
    ry = np.rint(y.astype(np.float32) * f)
    w = np.rint(np.float32(window[0]) * f)
    h = np.rint(np.float32(window[1]) * f)
    return np.stack([rx, ry, w, h], axis=1).astype(np.int32)


def _axis_entries(arith: str, axis: str, n_src: int, n_dst: int, inv_scale: float) -> np.ndarray:
    """``(n_dst, 4)`` int32 ``(i0, i1, w0, w1)`` of one level axis, Q8 weights summing to 256.

    ``resize(..., 'bilinear_exact')`` of a gray image is a copy (same size), an exact 2x
    reduction (``(a + b + c + d + 2) >> 2``) or the Q8 ``'exact'`` arithmetic; all three are the
    Q8 form ``(sum wy wx g + 2**15) >> 16`` with weights ``(256, 0)``, ``(128, 128)`` and the
    table's own (``16384 (a + b + c + d) + 2**15 >> 16 == (a + b + c + d + 2) >> 2``).
    """
    from ..._resize_plans import axis_table

    if arith == "copy":
        i = np.arange(n_dst, dtype=np.int32)
        return np.stack([i, i, np.full_like(i, 256), np.zeros_like(i)], axis=1)
    t = axis_table(arith, axis, n_src, n_dst, inv_scale)
    if arith == "exact":
        return np.stack([t.i0, t.i1, t.w0, t.w1], axis=1).astype(np.int32)
    if arith == "area2_up" and np.all(t.w1 == 1):
        # an exact 2x reduction of an axis: n_src == 2 * n_dst, so every pair is complete
        half = np.full_like(t.i0, 128)
        return np.stack([t.i0, t.i1, half, half], axis=1).astype(np.int32)
    raise RuntimeError(f"unexpected resize arithmetic {arith!r} for a {n_src} -> {n_dst} pyramid level")


def packed_pyramid_maps(width: int, height: int, sizes: list[tuple[int, int]]) -> tuple:
    """``(packed_shape, placements, maps)`` of a packed pyramid of ``sizes`` from a ``width x
    height`` image: ``transform.pack_pyramid``'s default width and shelves (gap 1), each level's
    ``(x, y, w, h)``, and ``_kernels.pyramid_kernel``'s read-only ``(xmap, ymap, xtab, ytab)``.
    Shared by the cascade and MCT detectors."""
    from ..._resize_plans import pack_layout
    from ..._resize_plans import plan as resize_plan

    wp = max((sizes[0][0] + 31 + 31) // 32 * 32, max(w for w, _ in sizes) + 1)
    corners, hp = pack_layout(sizes, wp, 1)
    placements = tuple((x, y, w, h) for (x, y), (w, h) in zip(corners, sizes))
    xtab = [np.zeros((1, 4), np.int32)]  # entry 0: the fill pixels (zero weights)
    ytab = [np.zeros((1, 4), np.int32)]
    xmap = np.zeros((hp, wp), np.int32)
    ymap = np.zeros((hp, wp), np.int32)
    nx = ny = 1
    for (w, h), (x, y) in zip(sizes, corners):
        arith, _, inv = resize_plan((width, height), (w, h), None, "bilinear_exact", 1)
        xe = _axis_entries(arith, "x", width, w, inv[0])
        ye = _axis_entries(arith, "y", height, h, inv[1])
        ye[:, :2] *= width  # row offsets into the flattened image (< 2**31: checked by image())
        xtab.append(xe)
        ytab.append(ye)
        xmap[y : y + h, x : x + w] = nx + np.arange(w, dtype=np.int32)[None, :]
        ymap[y : y + h, x : x + w] = ny + np.arange(h, dtype=np.int32)[:, None]
        nx, ny = nx + w, ny + h
    maps = (xmap.reshape(-1), ymap.reshape(-1), np.concatenate(xtab), np.concatenate(ytab))
    for a in maps:
        a.flags.writeable = False
    return (hp, wp), placements, maps
