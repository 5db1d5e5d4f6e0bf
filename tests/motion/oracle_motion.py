"""The Rice paper's motion detection (section III) as naive loops, line by line.

Algorithm 2 and 3 are transcribed from the pseudocode, Listings 6-8 from the CUDA listings (one
loop iteration per CUDA thread). Deliberately slow and obvious: the vectorized NumPy path must
equal these on small inputs. The paper's M/m etc. are read with our axis names: cell ``(i, j)``
is cell row ``i`` of ``rows`` and cell column ``j`` of ``cols``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


# ------------------------------------------------------------------------------ Algorithm 2
def algorithm2_printed(e1: np.ndarray, e2: np.ndarray, beta: int) -> np.ndarray:
    """Algorithm 2 exactly as printed: the apron test ``E1[q] = E2[q]`` clears ``D[q]``."""
    M, N = e1.shape
    D = np.zeros((M, N), np.uint8)
    for i in range(M):
        for j in range(N):
            if e1[i, j] != e2[i, j]:
                D[i, j] = 255
                for di in range(-beta, beta + 1):
                    for dj in range(-beta, beta + 1):
                        ii, jj = i + di, j + dj
                        if 0 <= ii < M and 0 <= jj < N and e1[ii, jj] == e2[ii, jj]:
                            D[ii, jj] = 0
    return D


def algorithm2(e1: np.ndarray, e2: np.ndarray, beta: int) -> np.ndarray:
    """Algorithm 2 with the match test of the paper's serial code and Listing 6: a pixel of the
    apron of ``E1`` equal to ``E2`` at the centre clears the centre; every pixel, apron clipped
    to the image."""
    M, N = e1.shape
    D = np.zeros((M, N), np.uint8)
    for i in range(M):
        for j in range(N):
            if e1[i, j] != e2[i, j]:
                D[i, j] = 255
                for di in range(-beta, beta + 1):
                    for dj in range(-beta, beta + 1):
                        ii, jj = i + di, j + dj
                        if 0 <= ii < M and 0 <= jj < N and e1[ii, jj] == e2[i, j]:
                            D[i, j] = 0
    return D


def listing6(edges_1: np.ndarray, edges_2: np.ndarray, threshold: int) -> np.ndarray:
    """Listing 6 (``difference_filter``), one iteration per thread ``(r, c)``."""
    height, width = edges_1.shape
    dev_out = np.zeros((height, width), np.uint8)
    for r in range(height):
        for c in range(width):
            dev_out[r, c] = 0
            crop_size = 7
            if (r > crop_size and c > crop_size and r < height - crop_size and c < width - crop_size
                    and edges_1[r, c] != edges_2[r, c]):
                dev_out[r, c] = 255
                for x_apron in range(-threshold, threshold + 1):
                    for y_apron in range(-threshold, threshold + 1):
                        if c + x_apron > 0 and r + y_apron > 0 and c + x_apron < width and r + y_apron < height:
                            if edges_1[r + y_apron, c + x_apron] == edges_2[r, c]:
                                dev_out[r, c] = 0
    return dev_out


# ------------------------------------------------------------------------------ Algorithm 3
def exceeds(x: int, area: int, gamma: float, strict: bool) -> bool:
    """``x / area > gamma`` (or ``>=``) in exact rationals, gamma as the decimal it prints as."""
    density = Fraction(x, area)
    g = Fraction(repr(gamma))
    return density > g if strict else density >= g


def algorithm3(D: np.ndarray, gamma: float, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 3: counts ``x`` over ``i' in [0, M/m]``, ``j' in [0, N/n]`` (inclusive), then
    ``(mn / MN) x > Gamma``. The paper assumes ``M = k1 m``; with ``M/m`` read as ``M // m``
    (and the normalizer ``1 / (kh kw)``) it extends to any size. Reads past the image (the last
    cell's inclusive row/column) count nothing: the pseudocode has no bounds test there."""
    M, N = D.shape
    kh, kw = M // rows, N // cols
    counts = np.zeros((rows, cols), np.int32)
    Dp = np.zeros((rows, cols), bool)
    for i in range(rows):
        for j in range(cols):
            x = 0  # number of differences in this region
            for di in range(kh + 1):
                for dj in range(kw + 1):
                    r, c = kh * i + di, kw * j + dj
                    if r < M and c < N and D[r, c] != 0:
                        x += 1
            counts[i, j] = x
            if exceeds(x, kh * kw, gamma, strict=True):
                Dp[i, j] = True
    return counts, Dp


def listing7(difference: np.ndarray, horizontal_divisions: int, vertical_divisions: int) -> np.ndarray:
    """Listing 7's cell of each thread's pixel, counting instead of adding ``1000.0 / block_size``."""
    height, width = difference.shape
    counts = np.zeros((vertical_divisions, horizontal_divisions), np.int32)
    for r in range(height):
        for c in range(width):
            if difference[r, c] != 0:
                i = int(vertical_divisions * r / float(height))
                j = int(horizontal_divisions * c / float(width))
                counts[i, j] += 1
    return counts


def listing8(counts: np.ndarray, height: int, width: int, gamma: float) -> np.ndarray:
    """Listing 8's motion area (255 where the pixel's cell has density >= threshold), the density
    being Listing 7's ``1000 * count / block_size`` compared with ``1000 * gamma`` exactly."""
    vertical_divisions, horizontal_divisions = counts.shape
    block_size = (width // horizontal_divisions) * (height // vertical_divisions)
    motion_area = np.zeros((height, width), np.uint8)
    for r in range(height):
        for c in range(width):
            i = int(vertical_divisions * r / float(height))
            j = int(horizontal_divisions * c / float(width))
            if exceeds(int(counts[i, j]), block_size, gamma, strict=False):
                motion_area[r, c] = 255
    return motion_area


def pseudocode_area(regions: np.ndarray, height: int, width: int) -> np.ndarray:
    """The motion area of Algorithm 3's cells (the paper's MATLAB): 255 over each motion cell's
    inclusive box ``[i kh, i kh + kh] x [j kw, j kw + kw]``, clipped to the image."""
    rows, cols = regions.shape
    kh, kw = height // rows, width // cols
    box = np.zeros((height, width), np.uint8)
    for i in range(rows):
        for j in range(cols):
            if regions[i, j]:
                for r in range(i * kh, i * kh + kh + 1):
                    for c in range(j * kw, j * kw + kw + 1):
                        if r < height and c < width:
                            box[r, c] = 255
    return box


def outlines(image: np.ndarray, regions: np.ndarray, bounds: np.ndarray, color, thickness: int) -> np.ndarray:
    """Rectangle outlines ``thickness`` pixels wide inside each motion cell's half-open bounds."""
    out = image.copy()
    rows, cols = regions.shape
    for i in range(rows):
        for j in range(cols):
            if not regions[i, j]:
                continue
            r0, r1, c0, c1 = (int(v) for v in bounds[i, j])
            for r in range(r0, r1):
                for c in range(c0, c1):
                    if min(r - r0, r1 - 1 - r) < thickness or min(c - c0, c1 - 1 - c) < thickness:
                        out[r, c] = color
    return out
