"""The frame-delta decode on the host: the NumPy version of ``portcv.codec``'s ``delta_decode``
kernel, which ``portcv.stream``'s receivers also run directly on the packets they read."""

from __future__ import annotations

from typing import Any

import numpy as np


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
