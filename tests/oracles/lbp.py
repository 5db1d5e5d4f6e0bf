"""Naive transcriptions of the LBP operator and its mappings (Ojala et al. 2002, with
scikit-image's sample points), in Python integers and fractions, pixel by pixel."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def sample_points(P: int, R: float) -> list[tuple[Fraction, Fraction]]:
    """(row, column) offsets of the P points: the 5-decimal numbers scikit-image rounds to."""
    points = []
    for i in range(P):
        angle = 2 * np.pi * i / P
        r = float(np.round(-R * np.sin(angle), 5))
        c = float(np.round(R * np.cos(angle), 5))
        points.append((Fraction(f"{r:.5f}"), Fraction(f"{c:.5f}")))
    return points


def _pixel(image: np.ndarray, r: int, c: int) -> int:
    h, w = image.shape
    return int(image[r, c]) if 0 <= r < h and 0 <= c < w else 0


def bilinear(image: np.ndarray, r: Fraction, c: Fraction) -> Fraction:
    """The exact bilinear value at (r, c), zero outside the image."""
    r0, c0 = math.floor(r), math.floor(c)
    fr, fc = r - r0, c - c0
    top = (1 - fc) * _pixel(image, r0, c0) + fc * _pixel(image, r0, c0 + 1)
    bottom = (1 - fc) * _pixel(image, r0 + 1, c0) + fc * _pixel(image, r0 + 1, c0 + 1)
    return (1 - fr) * top + fr * bottom


def codes(image: np.ndarray, P: int, R: float) -> np.ndarray:
    """The P-bit codes of a 2-D uint8 image (zero padding, full size): bit i = value_i >= centre."""
    points = sample_points(P, R)
    h, w = image.shape
    out = np.zeros((h, w), np.int64)
    for y in range(h):
        for x in range(w):
            g = int(image[y, x])
            code = 0
            for i, (dr, dc) in enumerate(points):
                if bilinear(image, y + dr, x + dc) >= g:
                    code |= 1 << i
            out[y, x] = code
    return out


def ties(image: np.ndarray, P: int, R: float) -> np.ndarray:
    """(H, W, P) bool: where sample i's exact bilinear value equals the centre (the real ties)."""
    points = sample_points(P, R)
    h, w = image.shape
    out = np.zeros((h, w, P), bool)
    for y in range(h):
        for x in range(w):
            g = int(image[y, x])
            for i, (dr, dc) in enumerate(points):
                out[y, x, i] = bilinear(image, y + dr, x + dc) == g
    return out


def _transitions(bits: list[int]) -> int:
    return sum(bits[i] != bits[(i + 1) % len(bits)] for i in range(len(bits)))


def label(code: int, P: int, method: str) -> int:
    """One code's label, from the definitions (circular transition count)."""
    bits = [(code >> i) & 1 for i in range(P)]
    uniform = _transitions(bits) <= 2
    ones = sum(bits)
    if method == "default":
        return code
    if method == "ror":
        return min(((code >> s) | (code << (P - s))) & ((1 << P) - 1) for s in range(P))
    if method == "uniform":
        return ones if uniform else P + 1
    if method == "u2":
        uniform_codes = [c for c in range(1 << P) if _transitions([(c >> i) & 1 for i in range(P)]) <= 2]
        return uniform_codes.index(code) if uniform else len(uniform_codes)
    # nri_uniform: the uniform codes with k ones (0 < k < P) are the P rotations of the run
    # 0..k-1; rotation s moves its start to bit s (scikit-image's rot_index counts right shifts)
    if not uniform:
        return P * (P - 1) + 2
    if ones == 0:
        return 0
    if ones == P:
        return P * (P - 1) + 1
    run = (1 << ones) - 1
    start = next(s for s in range(P) if ((run << s) | (run >> (P - s))) & ((1 << P) - 1) == code)
    rotation = (P - start) % P if start else 0
    return 1 + (ones - 1) * P + rotation
