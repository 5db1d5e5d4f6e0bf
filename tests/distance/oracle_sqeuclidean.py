"""Naive loop transcriptions of Lin et al.'s eq. (3) and of 1-NN matching by it.

Deliberately slow and obvious (Python integers, no overflow); the vectorized code must equal
these on small inputs.
"""

from __future__ import annotations

import numpy as np


def sqeuclidean(F: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``P[i][j] = sum_k (F[i][k] - D[j][k])**2``, summed one term at a time (int64 result)."""
    m, l = F.shape
    n = D.shape[0]
    P = np.zeros((m, n), dtype=np.int64)
    for i in range(m):
        for j in range(n):
            acc = 0
            for k in range(l):
                diff = int(F[i, k]) - int(D[j, k])
                acc += diff * diff
            P[i, j] = acc
    return P


def nearest(F: np.ndarray, D: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row of F, the k gallery rows with the smallest distance; equal distances in
    ascending gallery order (a sort of (distance, index) pairs)."""
    P = sqeuclidean(F, D)
    indices = np.zeros((F.shape[0], k), dtype=np.int64)
    distances = np.zeros((F.shape[0], k), dtype=np.int64)
    for i in range(F.shape[0]):
        pairs = sorted((int(P[i, j]), j) for j in range(D.shape[0]))
        for r in range(k):
            distances[i, r], indices[i, r] = pairs[r]
    return indices, distances
