"""The frame-delta decode kernel (``delta_decode``): ``portcv.codec`` runs it (and registers its
CuPy override), ``portcv.stream``'s receivers run its NumPy version directly on the packets they
read."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernel import kernel


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
def delta_decode_numpy(reference: Any, diffs: Any, positions: Any, count: Any) -> Any:
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
