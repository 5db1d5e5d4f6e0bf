"""The device kernels both detectors share: the packed pyramid, the compaction and the grouping.

- ``cascade_pyramid``: every pyramid level resized from the frame and packed into one image, in
  one gather through host-built maps (``_pyramid.packed_pyramid_maps``).
- ``cascade_group``: OpenCV's ``groupRectangles`` and the clip of the candidates, on the device.
- ``cascade_compact``: OpenCV's stage-0 skip rule (the window after a visited stage-0 reject is
  not visited) as a scan, then the visited survivors in ascending order: Pertsau and Uvarov's
  mask -> plan (prefix-sum stream compaction, fixed capacity + count).

They keep the ``cascade_`` names they were written under for the OpenCV cascade; the MCT
detector runs them too. The NumPy and JAX overrides are here, with the block helpers that the
overrides of ``_cascade/_cascade.py`` also use; the CuPy overrides are in
``_cascade/_cascade_cuda.py``, whose one CUDA source holds them with the cascade's stage kernels.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..._kernel import kernel


# --------------------------------------------------------------------------------------------
# JAX: blocks
# --------------------------------------------------------------------------------------------
#: Packed pixels per block when JAX builds the pyramid on the CPU: its twelve gathers are
#: separate full-size temporaries there (850 MB for a 1080p frame's 15 M packed pixels).
CPU_PIXEL_BLOCK = 1 << 18
#: On a GPU, one block's temporaries may take this share of the device's memory: a frame of any
#: size is evaluated in as many blocks as that needs, never more memory at once (1080p and 4K
#: frames stay in one or two blocks on an 80 GB H100).
DEVICE_SHARE = 1 / 4
#: Bytes of the portable pyramid's temporaries per packed pixel.
PIXEL_BYTES = 64


@functools.lru_cache(maxsize=1)
def device_budget() -> int:
    """Bytes one block may take on JAX's default device (16 GB assumed where JAX does not say)."""
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return int(int(stats.get("bytes_limit", 16 << 30)) * DEVICE_SHARE)


def block_size(host_block: int, entry_bytes: int) -> int:
    """Entries per block: ``host_block`` on the CPU, :data:`DEVICE_SHARE` of the device's memory
    on a GPU (at ``entry_bytes`` an entry)."""
    from ...backends import backend

    if backend().runs_on_host:
        return host_block
    return max(host_block, device_budget() // max(1, entry_bytes))


def jax_blocked(evaluate: Any, *columns: Any, block: int) -> Any:
    """``evaluate(*columns)`` (one result per entry of the equally long 1-D ``columns``) in blocks
    of ``block`` entries, by ``lax.map`` (one compiled body); the same bits as all at once (every
    entry is independent). The last block is padded with entry value 0 (window 0, or a packed
    pixel with the fill weights: valid either way) and its results are dropped."""
    import jax
    import jax.numpy as jnp

    k = columns[0].shape[0]
    if k <= block:
        return evaluate(*columns)
    n = -(-k // block)
    blocks = [jnp.reshape(jnp.concatenate([c, jnp.zeros(n * block - k, c.dtype)]), (n, block)) for c in columns]
    out = jax.lax.map(lambda cs: evaluate(*cs), tuple(blocks))
    return jnp.reshape(out, (-1,))[:k]


def numpy_blocks(n: int, block: int, run: Any) -> None:
    """``run(a, b)`` for the blocks ``[a, b)`` of ``range(n)``, on the NumPy workers when there
    are several blocks (exceptions propagate)."""
    from ...backends.numpy import host_pool, host_threads

    bounds = [(a, min(n, a + block)) for a in range(0, n, block)]
    if len(bounds) <= 1 or host_threads() <= 1:
        for a, b in bounds:
            run(a, b)
        return
    # One task per block on the NumPy backend's pool (NumPy releases the GIL in the gathers and
    # ufuncs of a block; each block writes only its own slice, so the bits do not depend on the
    # scheduling): blocks of unequal work (pyramid levels) balance across the workers.
    pool = host_pool()
    for f in [pool.submit(run, a, b) for a, b in bounds]:
        f.result()


# --------------------------------------------------------------------------------------------
# The packed pyramid in one gather
# --------------------------------------------------------------------------------------------
#: Fixed-point rounding of the pyramid gather: ``(sum of Q8 x Q8 products + 2**15) >> 16``.
PYRAMID_ROUND = 1 << 15


@kernel("cascade_pyramid")
def pyramid_kernel(xp: Any, gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, *, shape: tuple[int, int]) -> Any:
    """Every pyramid level resized from ``gray`` and packed into one uint8 image ``shape``.

    One gather through host-built maps (``_pyramid.packed_pyramid_maps``): packed pixel ``p``
    takes column entry ``xtab[xmap[p]] = (x0, x1, wx0, wx1)`` and row entry
    ``ytab[ymap[p]] = (y0 * W, y1 * W, wy0, wy1)`` of its level's ``INTER_LINEAR_EXACT`` tables
    (Q8 weights summing to 256), and is
    ``(wy0 (wx0 g[y0,x0] + wx1 g[y0,x1]) + wy1 (wx0 g[y1,x0] + wx1 g[y1,x1]) + 2**15) >> 16``
    -- ``resize``'s ``'exact'`` arithmetic; a level of the input's size (a copy) has weights
    ``(256, 0)`` and an exact 2x reduction ``(128, 128)``, which gives ``resize``'s copy and
    ``(a + b + c + d + 2) >> 2``. Entry 0 of both tables has zero weights: the fill pixels
    (``pack_pyramid``'s ``fill=0``). Equal, bit for bit, to ``pack_pyramid([resize(gray, size=...,
    interpolation='bilinear_exact') ...])`` (tested).
    """
    flat = xp.astype(xp.reshape(gray, (-1,)), xp.int32)
    x0, x1, wx0, wx1 = (xp.take(xtab[:, k], xmap) for k in range(4))
    y0, y1, wy0, wy1 = (xp.take(ytab[:, k], ymap) for k in range(4))
    h0 = wx0 * xp.take(flat, y0 + x0) + wx1 * xp.take(flat, y0 + x1)
    h1 = wx0 * xp.take(flat, y1 + x0) + wx1 * xp.take(flat, y1 + x1)
    out = (wy0 * h0 + wy1 * h1 + PYRAMID_ROUND) >> 16  # <= 256 * 256 * 255 + 2**15 < 2**31
    return xp.reshape(xp.astype(out, xp.uint8), shape)


@pyramid_kernel.override("numpy")
def _pyramid_numpy(gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, *, shape: tuple[int, int]) -> Any:
    # Separable where the maps have rectangles (the levels of packed_pyramid_maps' layout):
    # the horizontal pass once per source row a level uses, then the vertical pass -- the same
    # int32 products and sums as the portable gather, per pixel. The other pixels (the fill) by
    # the portable arithmetic, once when they share one (xmap, ymap) pair: a pixel's value is a
    # function of its pair alone.
    gray = np.asarray(gray)
    xmap, ymap = np.asarray(xmap), np.asarray(ymap)
    rects, rest, pairs, inverse = _pyramid_layout(xmap, ymap, shape)
    out = np.empty(shape, np.uint8)
    flat = gray.reshape(-1).astype(np.int32)
    xtab, ytab = np.asarray(xtab), np.asarray(ytab)

    def level(k: int, _: int) -> None:
        r0, c0, h, w, j0, i0 = rects[k]
        x0, x1 = (xtab[i0 : i0 + w, n].astype(np.intp) for n in (0, 1))
        wx0, wx1 = (xtab[i0 : i0 + w, n][None, :] for n in (2, 3))
        y0, y1 = (ytab[j0 : j0 + h, n].astype(np.intp) for n in (0, 1))
        wy0, wy1 = (ytab[j0 : j0 + h, n][:, None] for n in (2, 3))
        rows, where = np.unique(np.concatenate([y0, y1]), return_inverse=True)
        across = wx0 * flat.take(rows[:, None] + x0) + wx1 * flat.take(rows[:, None] + x1)  # <= 256 * 255
        val = wy0 * across[where[:h]] + wy1 * across[where[h:]] + PYRAMID_ROUND
        out[r0 : r0 + h, c0 : c0 + w] = val >> 16  # < 2**31 as the portable's; uint8 as its astype

    numpy_blocks(len(rects), 1, level)
    if rest.size:
        one = pyramid_kernel.portable(np, gray, pairs[:, 0], pairs[:, 1], xtab, ytab, shape=(-1,))
        out.reshape(-1)[rest] = one[0] if inverse is None else one[inverse]
    return out


#: Layouts kept by _pyramid_layout (one per frame geometry in use, as the detectors' geometry caches).
PYRAMID_LAYOUTS = 8
_LAYOUTS: dict = {}


def _pyramid_layout(xmap: np.ndarray, ymap: np.ndarray, shape: tuple[int, int]) -> tuple:
    """``(rects, rest, pairs, inverse)`` of the pyramid maps: the rectangles ``(r0, c0, h, w, j0,
    i0)`` where ``ymap = j0 + (r - r0)`` and ``xmap = i0 + (c - c0)``, the flat indices of the
    other pixels, their ``(xmap, ymap)`` pairs and each one's pair (None: they all share one). Cached for
    read-only maps (packed_pyramid_maps'), keyed by the arrays themselves (held, so never stale)."""
    key = (id(xmap), id(ymap), tuple(shape))
    hit = _LAYOUTS.get(key)
    if hit is not None and hit[0] is xmap and hit[1] is ymap:
        return hit[2]
    hp, wp = shape
    xm, ym = xmap.reshape(hp, wp), ymap.reshape(hp, wp)
    same = np.zeros((hp, wp), bool)  # the pixel continues its left neighbour's run
    same[:, 1:] = (xm[:, 1:] == xm[:, :-1] + 1) & (ym[:, 1:] == ym[:, :-1])
    starts = np.flatnonzero(~same)
    length = np.diff(np.append(starts, hp * wp))
    long = length >= 8
    starts, length = starts[long], length[long]
    r, c = np.divmod(starts, wp)
    j, i = ym.reshape(-1)[starts], xm.reshape(-1)[starts]
    order = np.lexsort((r, i, length, c))
    r, c, length, j, i = (a[order] for a in (r, c, length, j, i))
    new = np.ones(r.size, bool)
    new[1:] = ((c[1:] != c[:-1]) | (length[1:] != length[:-1]) | (i[1:] != i[:-1]) | (r[1:] != r[:-1] + 1)
               | (j[1:] != j[:-1] + 1))
    first = np.flatnonzero(new)
    height = np.diff(np.append(first, r.size))
    rects = tuple((int(r[f]), int(c[f]), int(h), int(length[f]), int(j[f]), int(i[f])) for f, h in zip(first, height))
    covered = np.zeros((hp, wp), bool)
    for r0, c0, h, w, _, _ in rects:
        covered[r0 : r0 + h, c0 : c0 + w] = True
    rest = np.flatnonzero(~covered)
    xr, yr = xmap.reshape(-1)[rest], ymap.reshape(-1)[rest]
    if rest.size and np.all(xr == xr[0]) and np.all(yr == yr[0]):  # the fill: one pair
        pairs, inverse = np.array([[xr[0], yr[0]]]), None
    else:  # every pixel its own pair (no sort of millions of pairs on a first call)
        pairs, inverse = np.stack([xr, yr], axis=1), np.arange(rest.size)
    layout = (rects, rest, np.ascontiguousarray(pairs), inverse)
    if not xmap.flags.writeable and not ymap.flags.writeable:
        if len(_LAYOUTS) >= PYRAMID_LAYOUTS:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        _LAYOUTS[key] = (xmap, ymap, layout)
    return layout


@pyramid_kernel.override("jax", supports="every input (in blocks of pixels)")
def _pyramid_jax(gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, *, shape: tuple[int, int]) -> Any:
    from ...backends import backend

    xp = backend().xp
    flat = jax_blocked(lambda xm, ym: pyramid_kernel.portable(xp, gray, xm, ym, xtab, ytab, shape=(-1,)),
                        xmap, ymap, block=block_size(CPU_PIXEL_BLOCK, PIXEL_BYTES))
    return xp.reshape(flat, shape)

# --------------------------------------------------------------------------------------------
# Skip rule + compaction
# --------------------------------------------------------------------------------------------
@kernel("cascade_compact")
def compact_kernel(xp: Any, status: Any, row_end: Any, *, capacity: int) -> Any:
    """``(plan, count)``: ascending indices of the *visited* windows with ``status == 1``.

    OpenCV scans each row left to right and skips the window after a visited window rejected at
    stage 0 (``status == 0``): ``v[first] = 1``, ``v[i+1] = not (v[i] and status[i] == 0)``.
    Closed form: with ``r`` the last index before ``i`` that is a non-reject or the end of a row
    (``row_end``), ``v[i] = (i - r - 1)`` is even. ``r`` comes from a prefix count and a
    scatter (no cumulative max in the array API). ``plan`` has ``capacity`` int32 slots
    (``count..capacity-1`` hold zeros); ``count = min(survivors, capacity)`` (0-d int32).
    ``row_end=None``: no skip rule, every ``status == 1`` index is kept (plan -> plan).
    """
    import array_api_extra as xpx

    n = status.shape[0]
    idx = xp.arange(n, dtype=xp.int32)
    if row_end is None:
        keep = status == 1
        krank = xp.cumulative_sum(xp.astype(keep, xp.int32)) - 1
        slot = xp.where(keep & (krank < capacity), krank, capacity)
        plan = xpx.at(xp.zeros(capacity + 1, dtype=xp.int32), slot).set(idx)[:capacity]
        total = xp.sum(xp.astype(keep, xp.int32), dtype=xp.int32)
        return plan, xp.asarray(xp.minimum(total, capacity), dtype=xp.int32)
    reset = (status != 0) | row_end
    rank = xp.cumulative_sum(xp.astype(reset, xp.int32))  # inclusive: resets at or before i
    before = rank - xp.astype(reset, xp.int32)              # resets strictly before i
    # position of the j-th reset (1-based j); slot 0 is "none" (-1); slot n+1 a dump slot
    dest = xp.where(reset, rank, n + 1)
    pos = xpx.at(xp.full(n + 2, -1, dtype=xp.int32), dest).set(idx)
    last = xp.take(pos, before)
    visited = ((idx - last - 1) % 2) == 0
    keep = visited & (status == 1)
    krank = xp.cumulative_sum(xp.astype(keep, xp.int32)) - 1
    ok = keep & (krank < capacity)
    slot = xp.where(ok, krank, capacity)
    plan = xpx.at(xp.zeros(capacity + 1, dtype=xp.int32), slot).set(idx)[:capacity]
    count = xp.asarray(xp.minimum(xp.sum(xp.astype(keep, xp.int32), dtype=xp.int32), capacity), dtype=xp.int32)
    return plan, count


@compact_kernel.override("numpy")
def _compact_numpy(status: Any, row_end: Any, *, capacity: int) -> Any:
    # The same closed form with a running maximum for r (NumPy has one) and flatnonzero for
    # the plan: four passes instead of the portable's prefix counts and scatters.
    status = np.asarray(status)
    n = status.shape[0]
    if row_end is None:
        keep = status == 1
    else:
        reset = (status != 0) | np.asarray(row_end)
        last = np.full(n, -1, np.intp)  # the last reset strictly before i (-1: none)
        if n > 1:
            np.maximum.accumulate(np.where(reset[:-1], np.arange(n - 1), -1), out=last[1:])
        visited = ((np.arange(n) - last - 1) & 1) == 0
        keep = visited & (status == 1)
    found = np.flatnonzero(keep)
    plan = np.zeros(capacity, np.int32)
    count = min(found.size, capacity)
    plan[:count] = found[:count]
    return plan, np.asarray(count, dtype=np.int32)


@kernel("cascade_group")
def group_kernel(xp: Any, cand: Any, win_x: Any, win_y: Any, win_level: Any, factors: Any, recip: Any, *,
                 window: tuple[int, int], min_neighbors: int, eps: float, width: int, height: int,
                 capacity: int) -> Any:
    """OpenCV's ``groupRectangles`` and the clip to the image, on the device: int32 ``(2 + 5 C,)``.

    ``cand`` is ``candidates_kernel``'s ``[count, n, idx...]`` (at least ``C + 2`` long, ``C =
    capacity``); window ``w`` is at ``(win_x[w], win_y[w])`` of level ``win_level[w]`` whose
    float32 scale is ``factors[level]``; ``recip[k] = float32(1) / float32(k)`` (``k <= C``,
    made on the host: every backend divides alike). The result is ``[n, m, (x, y, w, h,
    neighbours) * m, 0...]`` -- the boxes ``group_rectangles_impl`` then ``clip_rects`` return,
    in their order -- or ``[n, -1, 0...]`` when ``n > C`` (the host groups instead).

    Same arithmetic as the host: rects ``rint(float32(x) * f)``; classes are the connected
    components of SimilarRects (``delta = eps * (min w + min h) * 0.5`` in float64), each
    labelled by its smallest member (:func:`component_labels_kernel`); averages ``rint(float32(sum) *
    recip[n])`` (the sums exact in a float64 product); ``dx = rint(w * eps)`` in float64;
    the containment filter; the clip.
    """
    C = capacity
    n = xp.astype(cand[1], xp.int32)
    ar = xp.arange(C, dtype=xp.int32)
    valid = ar < n
    idx = xp.where(valid, cand[2 : 2 + C], 0)
    f = xp.take(factors, xp.take(win_level, idx))

    def scaled(v: Any) -> Any:  # rint(float32(v) * f), OpenCV's window -> image mapping
        return xp.astype(xp.round(xp.astype(v, xp.float32) * f), xp.int64)

    rx, ry = scaled(xp.take(win_x, idx)), scaled(xp.take(win_y, idx))
    rw = scaled(xp.full(C, window[0], dtype=xp.int32))
    rh = scaled(xp.full(C, window[1], dtype=xp.int32))
    delta = (eps * xp.astype(xp.minimum(rw[:, None], rw[None, :]) + xp.minimum(rh[:, None], rh[None, :]),
                             xp.float64)) * 0.5

    def close(a: Any) -> Any:
        return xp.astype(xp.abs(a[:, None] - a[None, :]), xp.float64) <= delta

    pair = valid[:, None] & valid[None, :]
    linked = close(rx) & close(ry) & close(rx + rw) & close(ry + rh) & pair
    label = component_labels_kernel(linked)
    root = valid & (label == ar)
    # Class r (a root) holds the valid i with label[i] == r. Sums as a float64 product: integers
    # under 2^53, so exact in any order (no scatter-add: NumPy's would drop repeated indices).
    same = (label[None, :] == ar[:, None]) & valid[None, :]
    members = xp.sum(xp.astype(same, xp.int32), axis=1, dtype=xp.int32)
    sums = xp.astype(xp.matmul(xp.astype(same, xp.float64), xp.astype(xp.stack([rx, ry, rw, rh], axis=1), xp.float64)),
                     xp.int64)
    inv = xp.take(recip, members)
    ax, ay, aw, ah = (xp.astype(xp.round(xp.astype(sums[:, k], xp.float32) * inv), xp.int64) for k in range(4))
    dx = xp.astype(xp.round(xp.astype(aw, xp.float64) * eps), xp.int64)
    dy = xp.astype(xp.round(xp.astype(ah, xp.float64) * eps), xp.int64)
    big = root & (members > min_neighbors)
    inside = ((ax[:, None] >= ax[None, :] - dx[None, :]) & (ay[:, None] >= ay[None, :] - dy[None, :])
              & (ax[:, None] + aw[:, None] <= ax[None, :] + aw[None, :] + dx[None, :])
              & (ay[:, None] + ah[:, None] <= ay[None, :] + ah[None, :] + dy[None, :]))
    stronger = (members[None, :] > xp.maximum(members[:, None], 3)) | (members[:, None] < 3)
    covered = inside & stronger & big[None, :] & (ar[:, None] != ar[None, :])
    x0, y0 = xp.maximum(ax, 0), xp.maximum(ay, 0)
    x1, y1 = xp.minimum(ax + aw, width), xp.minimum(ay + ah, height)
    keep = big & ~xp.any(covered, axis=1) & (x1 > x0) & (y1 > y0)
    order, m = compact_kernel.portable(xp, xp.astype(keep, xp.int32), None, capacity=C)
    boxes = xp.stack([x0, y0, x1 - x0, y1 - y0, xp.astype(members, xp.int64)], axis=1)
    boxes = xp.where((ar < m)[:, None] & (n <= C), xp.take(boxes, order, axis=0), 0)
    head = xp.stack([n, xp.where(n <= C, m, -1)])
    return xp.concat([head, xp.reshape(xp.astype(boxes, xp.int32), (-1,))])


@kernel("cascade_component_labels")
def component_labels_kernel(xp: Any, linked: Any) -> Any:
    """int32 ``(C,)``: for each node of the symmetric boolean ``(C, C)`` relation ``linked``, the
    smallest index in its connected component, by ``ceil(log2 C)`` squarings of the reachability
    matrix (a float32 product of 0/1 matrices: exact) -- array-API operations only."""
    C = linked.shape[0]
    ar = xp.arange(C, dtype=xp.int32)
    reach = xp.astype(linked | (ar[:, None] == ar[None, :]), xp.float32)
    for _ in range(max(1, (C - 1).bit_length())):  # paths of up to 2^k steps: every component
        reach = xp.astype(xp.matmul(reach, reach) > 0, xp.float32)
    return xp.min(xp.where(reach > 0, ar[None, :], C), axis=1)


@component_labels_kernel.override("numpy", supports="every input (SciPy's connected components)")
def _component_labels_numpy(linked: Any) -> Any:
    # The squarings cost log2(C) float32 C x C x C products (7.5 s a frame at C = 4096 on two
    # cores); a graph walk gives the same labels: each component's smallest member.
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    linked = np.asarray(linked)
    C = linked.shape[0]
    _, component = connected_components(csr_array(linked), directed=False)
    smallest = np.full(C, C, np.int32)
    np.minimum.at(smallest, component, np.arange(C, dtype=np.int32))
    return smallest[component]


@component_labels_kernel.override("jax", supports="every input (label propagation in a while loop)")
def _component_labels_jax(linked: Any) -> Any:
    # Each step takes the smallest label among a node's neighbours, then its label's label
    # (pointer jumping): labels only fall and stay members of the component, and they settle
    # on its smallest member -- the same labels as the squarings, in as many C x C passes as
    # the components are wide (a few) instead of log2(C) C x C x C products (12 at C = 4096).
    import jax.numpy as jnp
    from jax import lax

    C = linked.shape[0]

    def step(state: tuple) -> tuple:
        label, _ = state
        nxt = jnp.minimum(label, jnp.min(jnp.where(linked, label[None, :], C), axis=1))
        nxt = jnp.take(nxt, nxt)
        return nxt, jnp.any(nxt != label)

    label, _ = lax.while_loop(lambda state: state[1], step, (jnp.arange(C, dtype=jnp.int32), jnp.asarray(True)))
    return label


def reciprocals(capacity: int) -> np.ndarray:
    """``float32(1) / float32(k)`` for ``k = 0..capacity`` (k = 0 unused: 0), group_kernel's ``recip``."""
    k = np.arange(capacity + 1, dtype=np.float32)
    with np.errstate(divide="ignore"):
        return np.where(k > 0, np.float32(1) / k, np.float32(0)).astype(np.float32)
