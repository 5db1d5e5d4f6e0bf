"""OpenCV's ``groupRectangles`` (eps 0.2), on the host in NumPy, with its exact rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Candidates compared per block when finding similar pairs (bounds the pair matrix).
_BLOCK = 2048


def _similar_pairs(r: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)``, ``i < j``, that OpenCV's ``SimilarRects(eps)`` calls similar."""
    x, y, w, h = (r[:, k].astype(np.int64) for k in range(4))
    right, bottom = x + w, y + h
    ii, jj = [], []
    n = r.shape[0]
    for a in range(0, n, _BLOCK):
        sl = slice(a, min(n, a + _BLOCK))
        delta = eps * (np.minimum(w[sl, None], w[None, :]) + np.minimum(h[sl, None], h[None, :])) * 0.5
        sim = ((np.abs(x[sl, None] - x[None, :]) <= delta) & (np.abs(y[sl, None] - y[None, :]) <= delta)
               & (np.abs(right[sl, None] - right[None, :]) <= delta)
               & (np.abs(bottom[sl, None] - bottom[None, :]) <= delta))
        i, j = np.nonzero(sim)
        i = i + a
        keep = i < j
        ii.append(i[keep])
        jj.append(j[keep])
    return np.concatenate(ii), np.concatenate(jj)


def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Connected components (label = smallest member index), by hooking and pointer jumping."""
    parent = np.arange(n)
    while True:
        pi, pj = parent[i], parent[j]
        lo, hi = np.minimum(pi, pj), np.maximum(pi, pj)
        changed = lo != hi
        if not changed.any():
            break
        np.minimum.at(parent, hi[changed], lo[changed])
        while True:  # pointer jumping to the roots
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
    return parent


def group_rectangles_impl(rects: Any, min_neighbors: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(rects, dtype=np.int64).reshape(-1, 4)
    n = r.shape[0]
    if min_neighbors <= 0 or n == 0:
        return r.astype(np.int32), np.ones(n, np.int32)
    i, j = _similar_pairs(r, eps)
    root = _components(n, i, j)
    # classes numbered by their first member (cv::partition's order)
    roots, first, labels = np.unique(root, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    labels = rank[labels.reshape(-1)]
    nclass = roots.size
    counts = np.bincount(labels, minlength=nclass)
    sums = np.zeros((nclass, 4), np.int64)
    np.add.at(sums, labels, r)
    # Rect(saturate_cast<int>(sum * s)) with s = 1.f / n: float32 products, rounded half to even
    scale = (np.float32(1.0) / counts.astype(np.float32)).astype(np.float32)
    avg = np.rint(sums.astype(np.float32) * scale[:, None]).astype(np.int64)
    big = counts > min_neighbors
    ax, ay, aw, ah = avg[:, 0], avg[:, 1], avg[:, 2], avg[:, 3]
    dx = np.rint(aw * eps).astype(np.int64)  # saturate_cast<int>(double): round half to even
    dy = np.rint(ah * eps).astype(np.int64)
    # class i is dropped when a different big class j contains it (expanded by dx, dy) and
    # (n_j > max(3, n_i) or n_i < 3)
    inside = ((ax[:, None] >= ax[None, :] - dx[None, :]) & (ay[:, None] >= ay[None, :] - dy[None, :])
              & (ax[:, None] + aw[:, None] <= ax[None, :] + aw[None, :] + dx[None, :])
              & (ay[:, None] + ah[:, None] <= ay[None, :] + ah[None, :] + dy[None, :]))
    stronger = (counts[None, :] > np.maximum(3, counts[:, None])) | (counts[:, None] < 3)
    covered = inside & stronger & big[None, :]
    np.fill_diagonal(covered, False)
    keep = big & ~covered.any(axis=1)
    return avg[keep].astype(np.int32), counts[keep].astype(np.int32)
