"""OpenCV's ``groupRectangles`` (eps 0.2) on the host in NumPy, with its exact rounding; the clip to
the image; the read-back sizes and layout of the grouping on the device (``_kernels.group_kernel``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _validate
from ...backends import owner_of, to_numpy

#: OpenCV's ``GROUP_EPS`` for ``detectMultiScale``.
GROUP_EPS = 0.2
#: Candidates read back in the one device -> host copy (more: a second, rare copy).
CANDIDATE_LIMIT = 4096
#: Boxes read back in that copy after grouping on the device (more: a second copy).
GROUP_READ = 256


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


def group_rectangles(rects: Any, min_neighbors: int, *, eps: float = GROUP_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Cluster similar rectangles, as ``cv2.groupRectangles`` (with the neighbour counts).

    Parameters
    ----------
    rects : (N, 4) integer array-like
        ``[x, y, w, h]`` rectangles (any backend; read on the host).
    min_neighbors : int
        A cluster is kept when it has more than ``min_neighbors`` members; ``0`` returns the
        input unchanged (with one neighbour each).
    eps : float
        Similarity: two rectangles are similar when each of ``|dx|, |dy|, |d right|, |d bottom|``
        is at most ``eps * (min(w1, w2) + min(h1, h2)) / 2``.

    Returns
    -------
    rects : (M, 4) int32 NumPy array
        Each kept cluster's mean rectangle, ``rint(float32(sum) * (1.f / n))``, in the order of
        each cluster's first member.
    neighbours : (M,) int32 NumPy array
        Cluster sizes (``detectMultiScale2``'s ``numDetections``).

    Notes
    -----
    OpenCV's ``groupRectangles``: connected components of the similarity relation
    (``cv::partition``), class means with float32 rounding, then a kept cluster is dropped when
    another kept cluster ``j`` contains it after growing by ``rint(eps * w_j)``,
    ``rint(eps * h_j)``, and ``n_j > max(3, n_i)`` or ``n_i < 3``.

    Examples
    --------
    >>> import portcv
    >>> rects = [[10, 10, 20, 20], [11, 10, 20, 20], [12, 11, 20, 21], [100, 100, 30, 30]]
    >>> boxes, n = portcv.detect.group_rectangles(rects, 1)
    >>> boxes.tolist(), n.tolist()
    ([[11, 10, 20, 20]], [3])
    """
    if owner_of(rects) is not None and not isinstance(rects, np.ndarray):
        rects = to_numpy(rects)
    try:
        r = np.asarray(rects)
    except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
        raise ValueError(f"rects must be an (N, 4) array of [x, y, w, h], got a ragged nested "
                         f"{type(rects).__name__}") from None
    if r.size == 0 and (r.ndim == 1 or r.shape[0] == 0):  # no rectangles: [], (0,) or (0, 4)
        r = r.reshape(0, 4)
    if r.ndim != 2 or r.shape[1] != 4:
        raise ValueError(f"rects must be an (N, 4) array of [x, y, w, h], got shape {r.shape}")
    if r.dtype == bool:
        raise TypeError("rects must hold integers [x, y, w, h], got dtype bool")
    if not np.issubdtype(r.dtype, np.integer):
        if np.issubdtype(r.dtype, np.floating) and np.all(np.isfinite(r)) and np.all(r == np.round(r)):
            r = r.astype(np.int64)
        else:
            raise TypeError(f"rects must hold integers, got dtype {r.dtype}")
    if r.size and np.abs(r.astype(np.int64)).max() >= 2**30:
        raise ValueError("rects: coordinates must be below 2**30 in magnitude")
    neighbours = _validate.integer(min_neighbors, "min_neighbors", low=0, high=2**31 - 1)
    similarity = _validate.real(eps, "eps", positive=True, high=10.0)
    return group_rectangles_impl(r, neighbours, similarity)


def group_and_clip(rects: np.ndarray, min_neighbors: int, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """A detector's last host step: ``groupRectangles(rects, min_neighbors, eps=0.2)`` (ones as
    neighbour counts for ``min_neighbors=0``, the raw candidates), then the clip to the image."""
    if min_neighbors == 0:
        neighbours = np.ones(rects.shape[0], np.int32)
    else:
        rects, neighbours = group_rectangles_impl(rects, min_neighbors, GROUP_EPS)
    return clip_rects(rects, neighbours, width, height)


def clip_rects(rects: np.ndarray, neighbours: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """``rect & Rect(0, 0, W, H)``; empty intersections are dropped."""
    r = rects.astype(np.int64)
    x0 = np.maximum(r[:, 0], 0)
    y0 = np.maximum(r[:, 1], 0)
    x1 = np.minimum(r[:, 0] + r[:, 2], width)
    y1 = np.minimum(r[:, 1] + r[:, 3], height)
    keep = (x1 > x0) & (y1 > y0)
    out = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)[keep]
    return out.astype(np.int32).reshape(-1, 4), neighbours[keep].astype(np.int32)


def unpack_boxes(grouped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rects, neighbours)`` from group_kernel's ``[n, m, (x, y, w, h, neighbours) * m, ...]``."""
    m = int(grouped[1])
    boxes = grouped[2 : 2 + 5 * m].reshape(m, 5)
    return np.ascontiguousarray(boxes[:, :4]), np.ascontiguousarray(boxes[:, 4])
