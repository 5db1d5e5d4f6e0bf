"""The Rice paper's edge selection written out literally: Algorithm 1 and Listing 4, pixel by pixel.

Inputs are the paper's G (float64 ``sqrt(gx^2 + gy^2)``, eq. 5) and theta (``math.atan2(gy, gx)``,
eq. 6 / Listing 3), computed here from gradients that the test makes with OpenCV, independently
of portcv. float64 atan2 decides every sector the same way as exact arithmetic would: no nonzero
integer gradient lies on a sector boundary (tan^2 = 1/3 or 3 has no rational solution), and for
|g| <= 2^15 the nearest one is more than 1e-10 rad away while atan2 errs by about 1e-16.
"""

from __future__ import annotations

import math

import numpy as np

PI = math.pi


def magnitude_and_angle(gx: np.ndarray, gy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Listing 3: ``sqrt(gx^2 + gy^2)`` and ``atan2(gy, gx)`` per pixel, in float64."""
    h, w = gx.shape
    G = np.zeros((h, w))
    theta = np.zeros((h, w))
    for i in range(h):
        for j in range(w):
            x, y = float(gx[i, j]), float(gy[i, j])
            G[i, j] = math.sqrt(x * x + y * y)
            theta[i, j] = math.atan2(y, x)
    return G, theta


def sector_tests(t: float, closed_at_pi: bool) -> tuple[bool, bool, bool, bool]:
    """Algorithm 1, lines 4, 6, 8, 10: (horizontal, positive diagonal, vertical, negative diagonal).

    ``closed_at_pi``: read the horizontal sector's ``5 pi/6 < theta < pi`` as ``<= pi`` (atan2
    returns +pi for gy = 0, gx < 0; portcv's default). False: the text (and Listing 4) literally.
    """
    upper = (5 * PI / 6 < t <= PI) if closed_at_pi else (5 * PI / 6 < t < PI)
    horizontal = (-PI / 6 < t < PI / 6) or (-PI < t < -5 * PI / 6) or upper
    pos_diagonal = (PI / 6 < t < PI / 3) or (-5 * PI / 6 < t < -2 * PI / 3)
    vertical = (PI / 3 < t < 2 * PI / 3) or (-2 * PI / 3 < t < -PI / 3)
    neg_diagonal = (2 * PI / 3 < t < 5 * PI / 6) or (-PI / 3 < t < -PI / 6)
    return horizontal, pos_diagonal, vertical, neg_diagonal


def sector_code(gx: int, gy: int, closed_at_pi: bool = True) -> int:
    """portcv's sector code from the angle tests (4: no sector; (0, 0) has no angle)."""
    if gx == 0 and gy == 0:
        return 4
    tests = sector_tests(math.atan2(gy, gx), closed_at_pi)
    return [0, 1, 2, 3][tests.index(True)] if any(tests) else 4


def algorithm1(G: np.ndarray, theta: np.ndarray, alpha: int, t_h: float, t_l: float, *,
               closed_at_pi: bool = True) -> np.ndarray:
    """Algorithm 1: non-maximum suppression and selective thresholding, as printed.

    G is M x N (i: rows, j: columns). ``G_{i,j} > G_{i,j±1}`` means greater than both.
    """
    M, N = G.shape
    E = np.zeros((M, N), np.uint8)                                        # line 1
    for i in range(alpha + 1, M - alpha - 2 + 1):                         # line 2: i in [a+1, M-a-2]
        for j in range(alpha + 1, N - alpha - 2 + 1):                     # line 3
            horizontal, pos_diag, vertical, neg_diag = sector_tests(theta[i, j], closed_at_pi)
            g = G[i, j]
            horizontal_max = horizontal and g > G[i, j - 1] and g > G[i, j + 1]               # 4-5
            pos_diagonal_max = pos_diag and g > G[i + 1, j + 1] and g > G[i - 1, j - 1]       # 6-7
            vertical_max = vertical and g > G[i + 1, j] and g > G[i - 1, j]                   # 8-9
            neg_diagonal_max = neg_diag and g > G[i + 1, j - 1] and g > G[i - 1, j + 1]       # 10-11
            if g > t_h and (horizontal_max or pos_diagonal_max or vertical_max or neg_diagonal_max):  # 12
                for di in range(-alpha, alpha + 1):
                    for dj in range(-alpha, alpha + 1):
                        if G[i + di, j + dj] > t_l:                                           # 13
                            E[i + di, j + dj] = 255                                           # 14
    return E                                                              # line 15


def listing4(G: np.ndarray, theta: np.ndarray, apron_size: int, high_threshold: float,
             low_threshold: float) -> np.ndarray:
    """Listing 4 (``thresholding_and_suppression``), one thread after another.

    Run serially, with every thread's ``dev_output[i] = 0`` done before any apron write (the
    listing's threads race there; this is the race-free reading). Indexing as ``(r, c)``.
    ``magnitude_upper_*`` is row ``r + 1``, ``magnitude_lower_*`` row ``r - 1``, as printed.
    """
    input_height, input_width = G.shape
    out = np.zeros((input_height, input_width), np.uint8)
    for r in range(input_height):
        for c in range(input_width):
            if not (r > 1 and c > 1 and r < input_height - 1 and c < input_width - 1):
                continue
            magnitude = G[r, c]
            if not magnitude > high_threshold:
                continue
            above, below = G[r - 1, c], G[r + 1, c]
            left, right = G[r, c - 1], G[r, c + 1]
            upper_right, upper_left = G[r + 1, c + 1], G[r + 1, c - 1]
            lower_right, lower_left = G[r - 1, c + 1], G[r - 1, c - 1]
            t = theta[r, c]
            vertical_check = (PI / 3.0 < t < 2.0 * PI / 3.0) or (-2.0 * PI / 3.0 < t < -PI / 3.0)
            is_vertical_max = vertical_check and magnitude > below and magnitude > above
            horizontal_check = (-PI / 6.0 < t < PI / 6.0) or (-PI < t < -5.0 * PI / 6.0) or (5 * PI / 6.0 < t < PI)
            is_horizontal_max = horizontal_check and magnitude > right and magnitude > left
            positive_diagonal_check = (PI / 6.0 < t < PI / 3.0) or (-5.0 * PI / 6.0 < t < -2.0 * PI / 3.0)
            is_positive_diagonal_max = positive_diagonal_check and magnitude > upper_right and magnitude > lower_left
            negative_diagonal_check = (2.0 * PI / 3.0 < t < 5.0 * PI / 6.0) or (-PI / 3.0 < t < -PI / 6.0)
            is_negative_diagonal_max = negative_diagonal_check and magnitude > lower_right and magnitude > upper_left
            if is_vertical_max or is_horizontal_max or is_positive_diagonal_max or is_negative_diagonal_max:
                out[r, c] = 255
                for m in range(-apron_size, apron_size + 1):
                    for n in range(-apron_size, apron_size + 1):
                        if r + m > 0 and r + m < input_height and c + n > 0 and c + n < input_width:
                            if G[r + m, c + n] > low_threshold:
                                out[r + m, c + n] = 255
    return out


def hysteresis(state: np.ndarray) -> np.ndarray:
    """Canny hysteresis by a stack (as cv::Canny): 0 none, 1 weak, 2 strong -> uint8 {0, 255}."""
    h, w = state.shape
    edge = state == 2
    stack = [tuple(p) for p in np.argwhere(edge)]
    while stack:
        y, x = stack.pop()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                v, u = y + dy, x + dx
                if 0 <= v < h and 0 <= u < w and state[v, u] == 1 and not edge[v, u]:
                    edge[v, u] = True
                    stack.append((v, u))
    return np.where(edge, 255, 0).astype(np.uint8)
