"""The frame-delta kernels of the webcam report (section 2): encode with error feedback, decode.

``delta_encode``: a byte is *changed* when ``|frame - reference| > threshold``. Changed bytes
are listed in ascending flat (C-order) position: ``positions[k]`` is the flat index of the
``k``-th changed byte and ``diffs[k] = (frame - reference) mod 256`` stored as int8, exactly the
report's ``h_xs`` / ``h_diff``; ``count`` is the report's ``h_pos``. The buffers have a fixed
``capacity`` (static under ``jit``); slots ``count..capacity-1`` hold zeros. The first
``capacity`` changed bytes are *sent*; the new reference takes the frame's value where a byte is
sent and keeps the old reference elsewhere (the report's error feedback, ``pvs.data[i] -= df``):
a byte that drifts slowly keeps its old value until the drift crosses the threshold, and a
changed byte that did not fit stays pending for the next frame. So the decoder's picture,
``reference + diffs`` at ``positions``, equals the encoder's new reference exactly.

Three implementations, one result: the portable array-API version (flags -> inclusive
``cumulative_sum`` -> ranks -> scatter into ``capacity + 1`` slots, the last a dump slot for
bytes that are not sent; it is what JAX traces under ``jit`` and what ``numpy:readonly`` runs),
a NumPy override (``flatnonzero``; the same result ~15x faster, checked against the portable
version by the test suite) and a CuPy override running ``cuda/delta.cu``: a counting pass,
a single-block scan of the per-block counts and a compaction pass, all with 16-byte vectors,
no atomics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernel import kernel

#: Bytes one CUDA thread handles (one uint4) and threads per block: a block compacts a 4 KiB tile.
CUDA_VECTOR = 16
CUDA_BLOCK = 256
CUDA_TILE = CUDA_VECTOR * CUDA_BLOCK
#: Threads of the single-block scan over the per-tile counts.
CUDA_SCAN_THREADS = 1024


def _changed(xp: Any, f: Any, r: Any, threshold: int) -> Any:
    """``|f - r| > threshold`` on uint8 without widening: max - min cannot wrap."""
    return (xp.maximum(f, r) - xp.minimum(f, r)) > threshold


@kernel("delta_encode")
def delta_encode_kernel(xp: Any, frame: Any, reference: Any, *, threshold: int, capacity: int,
                        donate_reference: bool = False) -> Any:
    """Portable delta encoder: ``(count, diffs, positions, new_reference)`` (see the module docstring).

    ``donate_reference`` is a hint that the caller will not read ``reference`` again, so an
    override may update it in place (the CUDA kernel then writes only the 16-byte vectors that
    hold a sent byte); the portable version never writes its inputs.
    """
    n = math.prod(frame.shape)
    f = xp.reshape(frame, (-1,))
    r = xp.reshape(reference, (-1,))
    changed = _changed(xp, f, r, threshold)
    # rank = how many changed bytes come before this one; n < 2**31, so int32 cannot wrap.
    rank = xp.cumulative_sum(xp.astype(changed, xp.int32)) - 1
    sent = changed & (rank < capacity)
    dest = xp.where(sent, rank, capacity)  # slot `capacity` is the dump slot, sliced off below
    index = xp.arange(n, dtype=xp.int32)
    # (f - r) mod 256 as int8, spelled out in int16: ((d + 128) & 255) - 128 in [-128, 127].
    d = xp.astype(f, xp.int16) - xp.astype(r, xp.int16)
    d8 = xp.astype(((d + 128) & 255) - 128, xp.int8)
    import array_api_extra as xpx

    positions = xpx.at(xp.zeros(capacity + 1, dtype=xp.int32), dest).set(index)[:capacity]
    diffs = xpx.at(xp.zeros(capacity + 1, dtype=xp.int8), dest).set(d8)[:capacity]
    # xp.asarray: NumPy reductions return scalars; the count is a 0-d array on every backend.
    count = xp.asarray(xp.minimum(xp.sum(xp.astype(changed, xp.int32), dtype=xp.int32), capacity), dtype=xp.int32)
    new_reference = xp.reshape(xp.where(sent, f, r), frame.shape)
    return count, diffs, positions, new_reference


@delta_encode_kernel.override("numpy")
def _delta_encode_numpy(frame: Any, reference: Any, *, threshold: int, capacity: int,
                        donate_reference: bool = False) -> Any:
    # The host fast path: flatnonzero instead of a full-size scatter. The numpy:readonly test
    # backend runs the portable version, and the tests require the two to agree bit for bit.
    f = np.ascontiguousarray(frame).reshape(-1)
    r = np.ascontiguousarray(reference).reshape(-1)
    index = np.flatnonzero(_changed(np, f, r, threshold))[:capacity]
    k = index.size
    positions = np.zeros(capacity, np.int32)
    positions[:k] = index
    diffs = np.zeros(capacity, np.int8)
    diffs[:k] = (f[index] - r[index]).view(np.int8)  # uint8 subtraction wraps: (f - r) mod 256
    new_reference = r.copy()
    new_reference[index] = f[index]
    return np.asarray(k, dtype=np.int32), diffs, positions, new_reference.reshape(frame.shape)


@delta_encode_kernel.override("cupy")
def _delta_encode_cupy(frame: Any, reference: Any, *, threshold: int, capacity: int,
                       donate_reference: bool = False) -> Any:
    import cupy

    from .backends.cupy import cuda_function

    n = frame.size
    f = cupy.ascontiguousarray(frame).reshape(-1)
    r = cupy.ascontiguousarray(reference).reshape(-1)
    in_place = donate_reference and r.data.ptr == reference.data.ptr
    new_reference = r if in_place else cupy.empty(n, dtype=cupy.uint8)
    aligned = all(a.data.ptr % CUDA_VECTOR == 0 for a in (f, r, new_reference))
    tiles = (n + CUDA_TILE - 1) // CUDA_TILE
    tile_counts = cupy.empty(tiles, dtype=cupy.int32)  # per-tile counts, then exclusive offsets
    count = cupy.empty((), dtype=cupy.int32)
    positions = cupy.empty(capacity, dtype=cupy.int32)
    diffs = cupy.empty(capacity, dtype=cupy.int8)
    n64, th, cap, al = np.int64(n), np.int32(threshold), np.int32(capacity), np.int32(aligned)
    count_tiles = cuda_function("delta.cu", f"portcv_delta_count<{CUDA_BLOCK}>")
    scan = cuda_function("delta.cu", f"portcv_delta_tile_offsets<{CUDA_SCAN_THREADS}>")
    compact = cuda_function("delta.cu", f"portcv_delta_compact<{CUDA_BLOCK},{'true' if in_place else 'false'}>")
    count_tiles((tiles,), (CUDA_BLOCK,), (f, r, n64, th, al, tile_counts))
    scan((1,), (CUDA_SCAN_THREADS,), (tile_counts, np.int32(tiles), cap, count))
    compact((tiles,), (CUDA_BLOCK,), (f, r, new_reference, n64, th, al, tile_counts, count, cap, positions, diffs))
    return count, diffs, positions, new_reference.reshape(frame.shape)


@kernel("delta_decode")
def delta_decode_kernel(xp: Any, reference: Any, diffs: Any, positions: Any, count: Any) -> Any:
    """Portable decoder: ``reference`` with ``diffs[k]`` added (mod 256) at ``positions[k]``, ``k < count``.

    Entries at or beyond ``count`` and entries whose position lies outside the frame are
    ignored (never written out of bounds); positions must be distinct.
    """
    n = math.prod(reference.shape)
    capacity = diffs.shape[0]
    flat = xp.concat([xp.reshape(reference, (-1,)), xp.zeros(1, dtype=xp.uint8)])  # [n] = dump slot
    p = xp.astype(positions, xp.int64)
    valid = (xp.arange(capacity, dtype=xp.int64) < xp.astype(count, xp.int64)) & (p >= 0) & (p < n)
    dest = xp.where(valid, p, n)
    # int8 -> uint8 spelled out: d mod 256 in int16, then an in-range cast; the uint8 sum wraps mod 256.
    d = xp.astype(xp.astype(diffs, xp.int16) & 255, xp.uint8)
    import array_api_extra as xpx

    updated = xpx.at(flat, dest).set(xp.take(flat, dest) + d)
    return xp.reshape(updated[:n], reference.shape)


@delta_decode_kernel.override("numpy")
def _delta_decode_numpy(reference: Any, diffs: Any, positions: Any, count: Any) -> Any:
    n = reference.size
    k = max(0, min(int(count), diffs.shape[0]))
    p = positions[:k].astype(np.int64)
    keep = (p >= 0) & (p < n)
    if not keep.all():
        p = p[keep]
    d = diffs[:k] if keep.all() else diffs[:k][keep]
    out = np.array(reference, copy=True).reshape(-1)
    out[p] += d.view(np.uint8)  # uint8 += wraps mod 256; positions are distinct
    return out.reshape(reference.shape)


@delta_decode_kernel.override("cupy")
def _delta_decode_cupy(reference: Any, diffs: Any, positions: Any, count: Any) -> Any:
    import cupy

    from .backends.cupy import cuda_function, launch_1d

    if positions.dtype != cupy.int32:
        return NotImplemented
    out = cupy.array(reference, copy=True, order="C")
    capacity = diffs.shape[0]
    if capacity == 0:
        return out
    count = cupy.asarray(count, dtype=cupy.int64)
    fn = cuda_function("delta.cu", f"portcv_delta_apply<{CUDA_BLOCK}>")
    grid, block = launch_1d(capacity, CUDA_BLOCK)
    fn(grid, block, (out.reshape(-1), np.int64(out.size), cupy.ascontiguousarray(positions),
                     cupy.ascontiguousarray(diffs), count, np.int32(capacity)))
    return out
