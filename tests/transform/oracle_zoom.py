"""Naive cubic B-spline zoom: the formulas of Lin et al.'s interpolation section (after Unser's
"Splines: a perfect fit"), evaluated per pixel with Python integers and exact fractions.

- prefilter: ``h[n] = sqrt(3) z1**|n|`` (``z1 = sqrt(3) - 2``) rounded at 2**24 until a tap
  rounds to 0, centre corrected to a sum of 2**24; a row pass rounded to Q16 (``>> 8``), a
  column pass rounded to Q16 (``>> 24``), mirror (reflect-101) indices;
- interpolation at ``x = (o + 1/2) n_in / n_out - 1/2`` with the cubic B-spline pieces (or
  ``1 - t, t``, or the sample at ``floor(x + 1/2)``), as fractions; where an axis' common
  denominator exceeds 2**15 its weights are rounded half up to 2**-30 (the largest absorbs the
  rest) and the row sums are rounded to Q16 before the column sum;
- ``clip(floor(v + 1/2), 0, 255)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

SQRT3 = math.sqrt(3.0)
Z1 = SQRT3 - 2.0


def mirror(i: int, n: int) -> int:
    if n == 1:
        return 0
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def taps() -> list[int]:
    side = []
    n = 1
    while round(SQRT3 * Z1**n * 2**24) != 0:
        side.append(round(SQRT3 * Z1**n * 2**24))
        n += 1
    return [2**24 - 2 * sum(side)] + side


def prefilter_plane(plane: np.ndarray) -> list[list[int]]:
    h = taps()
    n = len(h) - 1
    rows, cols = plane.shape
    p = [[int(v) for v in row] for row in plane]
    r = [[(sum(h[abs(k)] * p[y][mirror(x + k, cols)] for k in range(-n, n + 1)) + 2**7) >> 8 for x in range(cols)]
         for y in range(rows)]
    return [[(sum(h[abs(k)] * r[mirror(y + k, rows)][x] for k in range(-n, n + 1)) + 2**23) >> 24 for x in range(cols)]
            for y in range(rows)]


def _weights(order: int, t: Fraction) -> list[Fraction]:
    if order == 1:
        return [1 - t, t]
    return [(1 - t) ** 3 / 6, (3 * t**3 - 6 * t**2 + 4) / 6, (-3 * t**3 + 3 * t**2 + 3 * t + 1) / 6, t**3 / 6]


def axis(order: int, n_in: int, n_out: int) -> tuple[list[list[tuple[int, Fraction]]], bool]:
    """Per output index, ``[(source index, weight)]``; and whether the weights are exact."""
    table = []
    for o in range(n_out):
        x = (o + Fraction(1, 2)) * n_in / n_out - Fraction(1, 2)
        if order == 0:
            table.append([(mirror(math.floor(x + Fraction(1, 2)), n_in), Fraction(1))])
            continue
        first = math.floor(x)
        start = first - 1 if order == 3 else first
        table.append([(mirror(start + k, n_in), w) for k, w in enumerate(_weights(order, x - first))])
    denominator = math.lcm(*(w.denominator for row in table for _, w in row))
    if denominator <= 2**15:
        return table, True
    rounded = []
    for row in table:
        q = [math.floor(w * 2**30 + Fraction(1, 2)) for _, w in row]
        largest = max(range(len(row)), key=lambda k: row[k][1])
        q[largest] += 2**30 - sum(q)
        rounded.append([(i, Fraction(qk, 2**30)) for (i, _), qk in zip(row, q)])
    return rounded, False


def zoom_plane(samples: list[list[int]], shape_out: tuple[int, int], order: int, frac_bits: int) -> np.ndarray:
    """``samples`` (pixels, or Q``frac_bits`` coefficients) interpolated to ``shape_out``."""
    rows, cols = len(samples), len(samples[0])
    ty, y_exact = axis(order, rows, shape_out[0])
    tx, x_exact = axis(order, cols, shape_out[1])
    out = np.zeros(shape_out, np.uint8)
    one = Fraction(1, 2**frac_bits)
    for oy in range(shape_out[0]):
        for ox in range(shape_out[1]):
            if x_exact and y_exact:
                v = sum(wy * wx * samples[iy][ix] for iy, wy in ty[oy] for ix, wx in tx[ox]) * one
            else:  # the row sums rounded to Q16 first
                q16 = [math.floor(sum(wx * samples[iy][ix] for ix, wx in tx[ox]) * 2**16 * one + Fraction(1, 2))
                       for iy, _ in ty[oy]]
                v = sum(wy * r for (_, wy), r in zip(ty[oy], q16)) / 2**16
            out[oy, ox] = min(255, max(0, math.floor(v + Fraction(1, 2))))
    return out


def zoom(image: np.ndarray, factor: tuple[float, float], order: int) -> np.ndarray:
    """One ``(H, W)`` uint8 plane zoomed as ``portcv.transform.zoom(image, factor, order=order)``."""
    shape_out = (round(image.shape[0] * factor[0]), round(image.shape[1] * factor[1]))
    if order == 3:
        return zoom_plane(prefilter_plane(image), shape_out, 3, 16)
    return zoom_plane([[int(v) for v in row] for row in image], shape_out, order, 0)
