"""Naive transcriptions of the thesis's MCT (eq. 2.1-2.2) and cascade decision (eq. 2.3), Python ints only."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def mct_code(patch: list[list[int]]) -> int:
    """Gamma(x) of one 3x3 patch: bit ``8 - k`` set when pixel ``k`` (raster order) is above the mean.

    The mean is compared twice, as ``9 I > S`` and as ``Fraction(S, 9) < I``; both must agree."""
    values = [int(patch[dy][dx]) for dy in range(3) for dx in range(3)]
    total = sum(values)
    code = 0
    for k, v in enumerate(values):
        above = 9 * v > total
        assert above == (Fraction(total, 9) < v)
        code = code * 2 + int(above)  # concatenation, first pixel most significant
    return code


def mct(image: np.ndarray) -> np.ndarray:
    """Valid-border MCT of a gray 2-D image by loops over pixels."""
    h, w = image.shape
    out = np.zeros((h - 2, w - 2), np.uint16)
    for y in range(h - 2):
        for x in range(w - 2):
            out[y, x] = mct_code([[image[y + dy, x + dx] for dx in range(3)] for dy in range(3)])
    return out


def window_status(codes: np.ndarray, x: int, y: int, positions: np.ndarray, lut: np.ndarray,
                  stage_end: np.ndarray, threshold: np.ndarray) -> tuple[bool, list[int]]:
    """Whether window ``(x, y)`` of a level's valid MCT image passes every stage, and its stage sums
    (up to the first failing stage). Code of position ``(px, py)`` = ``codes[y + py - 1, x + px - 1]``."""
    sums = []
    begin = 0
    for j, end in enumerate(stage_end):
        h = 0
        for k in range(begin, int(end)):
            px, py = int(positions[k, 0]), int(positions[k, 1])
            h += int(lut[k, int(codes[y + py - 1, x + px - 1])])
        sums.append(h)
        if not h <= int(threshold[j]):
            return False, sums
        begin = int(end)
    return True, sums
