"""OpenCV's 8-bit Gaussian taps (Q8, sum 256), shared by ``portcv.filters`` (``gaussian_blur``,
``gaussian_taps_q8``) and ``portcv.edges`` (the paper's low-pass stage)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction


@functools.lru_cache(maxsize=1024)
def q8_gaussian_taps(ksize: int, sigma: float) -> tuple[int, ...]:
    half = ksize // 2
    scale = -0.125 / (sigma * sigma)
    t = [math.exp(((1 - ksize + 2 * i) ** 2) * scale) for i in range(half)]
    inv_sum = 1.0 / (2.0 * sum(t) + 1.0)
    q, err = [], 0.0
    for ti in t:
        a = ti * inv_sum * 256.0 + err
        v = round(a)  # Python's round is half-to-even, like OpenCV's cvRound on doubles
        err = a - v
        q.append(v)
    centre = 256 - 2 * sum(q)
    return tuple(q + [centre] + q[::-1])


#: OpenCV's fixed 8-bit Gaussian taps for sigma <= 0 (Q8, sum 256): cv2.GaussianBlur(img, (k, k), 0).
SMALL_GAUSSIAN_Q8 = {
    1: (256,),
    3: (64, 128, 64),
    5: (16, 64, 96, 64, 16),
    7: (8, 28, 56, 72, 56, 28, 8),
    9: (4, 13, 30, 51, 60, 51, 30, 13, 4),
}


@functools.lru_cache(maxsize=64)
def sigma0_gaussian_taps(ksize: int) -> tuple[int, ...]:
    """OpenCV's taps for ``sigma = 0``: the fixed tables, else ``sigma = fma(k, 0.15, 0.35)``."""
    if ksize in SMALL_GAUSSIAN_Q8:
        return SMALL_GAUSSIAN_Q8[ksize]
    # OpenCV evaluates 0.3 * ((k - 1) * 0.5 - 1) + 0.8 as one fused multiply-add of k * 0.15 + 0.35;
    # float(Fraction) rounds the exact value once, as the FMA does.
    sigma = float(Fraction(ksize) * Fraction(0.15) + Fraction(0.35))
    return q8_gaussian_taps(ksize, sigma)
