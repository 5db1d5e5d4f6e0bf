"""OpenCV's ``groupRectangles`` (eps 0.2), on the host in NumPy, with its exact rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

def _similar_pairs(r: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)``, ``i < j``, that OpenCV's ``SimilarRects(eps)`` calls similar.

    Similar rectangles have ``|x_i - x_j| <= delta_ij`` with ``delta_ij = eps * (min(w) +
    min(h)) / 2 <= eps * (w_i + h_i) / 2``, so after sorting by x only the neighbours within
    that reach (plus 1 for rounding) are tested: O(n log n + pairs) instead of all n^2 pairs.
    """
    x, y, w, h = (r[:, k].astype(np.int64) for k in range(4))
    right, bottom = x + w, y + h
    n = r.shape[0]
    order = np.argsort(x, kind="stable")
    xs = x[order]
    reach = eps * (w[order] + h[order]) * 0.5 + 1.0
    stop = np.searchsorted(xs, xs + reach, side="right")  # sorted neighbours k < stop[s] may be similar
    span = np.maximum(stop - np.arange(n) - 1, 0)
    first = np.repeat(np.arange(n), span)
    # the sorted partners of each s: s + 1 .. s + span[s]
    offset = np.arange(first.size) - np.repeat(np.cumsum(span) - span, span) + 1
    a, b = order[first], order[first + offset]
    delta = eps * (np.minimum(w[a], w[b]) + np.minimum(h[a], h[b])) * 0.5
    sim = ((np.abs(x[a] - x[b]) <= delta) & (np.abs(y[a] - y[b]) <= delta)
           & (np.abs(right[a] - right[b]) <= delta) & (np.abs(bottom[a] - bottom[b]) <= delta))
    a, b = a[sim], b[sim]
    return np.minimum(a, b), np.maximum(a, b)


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
