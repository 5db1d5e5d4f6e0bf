"""Naive weighted chi-square (Ahonen et al., Tek's eq. 2.4): exact fractions, the fixed-point
floor per term, and the 1-NN by a plain loop."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def exact(S: np.ndarray, M: np.ndarray, weights: np.ndarray) -> Fraction:
    """sum_j w_j sum_i (S_ij - M_ij)**2 / (S_ij + M_ij) as a Fraction (S, M: (regions, bins))."""
    total = Fraction(0)
    for j in range(S.shape[0]):
        for i in range(S.shape[1]):
            s, m = int(S[j, i]), int(M[j, i])
            if s + m:
                total += int(weights[j]) * Fraction((s - m) ** 2, s + m)
    return total


def fixed_point(S: np.ndarray, M: np.ndarray, weights: np.ndarray, F: int) -> int:
    """sum_j w_j sum_i floor((S - M)**2 2**F / (S + M)) in Python integers."""
    total = 0
    for j in range(S.shape[0]):
        region = 0
        for i in range(S.shape[1]):
            s, m = int(S[j, i]), int(M[j, i])
            if s + m:
                region += ((s - m) ** 2 << F) // (s + m)
        total += int(weights[j]) * region
    return total


def nearest(query: np.ndarray, gallery: np.ndarray, weights: np.ndarray, F: int, k: int) -> tuple[list, list]:
    """Indices and distances of the k smallest (distance, index) pairs."""
    d = [(fixed_point(query, g, weights, F), i) for i, g in enumerate(gallery)]
    d.sort()
    return [i for _, i in d[:k]], [v for v, _ in d[:k]]
