"""OpenCV's cascade evaluation transcribed literally: float32 arithmetic, one window at a time.

From the notes ``/work/shared/opencv-cascade.md`` (read from OpenCV 4.x ``cascadedetect.cpp``):
per window ``vnf = float32(1 / sqrt(nf))`` and a variance reject ``A * vnf >= 0.1``; a Haar node
goes left iff ``float32(w0 S0 + w1 S1 [+ w2 S2]) * vnf < thr`` (float32 products and sums); an
LBP node iff the code's bit is set in the node's category set; a stage rejects when the double
sum of its float32 leaves is below ``float32(threshold) - 1e-5f``. The OpenCV scan loop with the
stage-0 skip rule is transcribed too. Naive loops; small images only.
"""

from __future__ import annotations

import numpy as np


def integrals(img: np.ndarray, tilted: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact int64 sum, squared sum and tilted (``cv2.integral3`` layout) tables.

    Tilted, from its definition: ``T[Y][X] = sum(I[y][x] for y < Y for x with
    |x - X + 1| <= Y - y - 1)`` (zeros when ``tilted`` is false).
    """
    a = img.astype(np.int64)
    h, w = a.shape
    s = np.zeros((h + 1, w + 1), np.int64)
    q = np.zeros((h + 1, w + 1), np.int64)
    s[1:, 1:] = a.cumsum(0).cumsum(1)
    q[1:, 1:] = (a * a).cumsum(0).cumsum(1)
    t = np.zeros((h + 1, w + 1), np.int64)
    for Y in range(1, h + 1 if tilted else 1):
        for X in range(w + 1):
            total = 0
            for y in range(Y):
                r = Y - y - 1
                lo, hi = max(X - 1 - r, 0), min(X - 1 + r, w - 1)
                if lo <= hi:
                    total += int(a[y, lo : hi + 1].sum())
            t[Y, X] = total
    return s, q, t


def _rect(ii: np.ndarray, x: int, y: int, w: int, h: int) -> int:
    return int(ii[y, x]) - int(ii[y, x + w]) - int(ii[y + h, x]) + int(ii[y + h, x + w])


def _tilted(t: np.ndarray, x: int, y: int, w: int, h: int) -> int:
    return int(t[y, x]) - int(t[y + h, x - h]) - int(t[y + w, x + w]) + int(t[y + w + h, x + w - h])


def evaluate_window(cascade, tables, x0: int, y0: int) -> int:
    """OpenCV's ``runAt`` at window ``(x0, y0)``: 1, ``-stage``, or -1 (variance)."""
    s, q, t = tables
    W, H = cascade.window
    c = cascade
    vnf = np.float32(1.0)
    if c.feature_type == "haar":
        area = float((W - 2) * (H - 2))
        vs = _rect(s, x0 + 1, y0 + 1, W - 2, H - 2)
        vq = _rect(q, x0 + 1, y0 + 1, W - 2, H - 2)
        nf = area * vq - float(vs) * vs
        if nf <= 0:
            return -1
        vnf = np.float32(1.0 / np.sqrt(nf))
        if area * float(vnf) >= 0.1:
            return -1
    for st in range(c.n_stages):
        acc = 0.0
        for tree in range(int(c.stage_tree_start[st]), int(c.stage_tree_start[st + 1])):
            n0, l0 = int(c.tree_node_start[tree]), int(c.tree_leaf_start[tree])
            idx = 0
            while True:
                node = n0 + idx
                f = int(c.node_feature[node])
                if c.feature_type == "haar":
                    val = np.float32(0.0)
                    for r in range(3):
                        wt = int(c.feature_weight[f, r])
                        if wt == 0:
                            continue
                        rx, ry, rw, rh = (int(v) for v in c.feature_rect[f, r])
                        if c.feature_tilted[f]:
                            srect = _tilted(t, x0 + rx, y0 + ry, rw, rh)
                        else:
                            srect = _rect(s, x0 + rx, y0 + ry, rw, rh)
                        val = np.float32(val + np.float32(np.float32(wt) * np.float32(srect)))
                    val = np.float32(val * vnf)
                    left = bool(val < c.node_threshold[node])
                else:
                    rx, ry, rw, rh = (int(v) for v in c.feature_rect[f])
                    blocks = [[_rect(s, x0 + rx + i * rw, y0 + ry + j * rh, rw, rh) for i in range(3)] for j in range(3)]
                    centre = blocks[1][1]
                    code = 0
                    for bit, (i, j) in zip((128, 64, 32, 16, 8, 4, 2, 1),
                                           ((0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1))):
                        if blocks[j][i] >= centre:
                            code |= bit
                    word = int(c.node_subset[node, code >> 5])
                    left = bool(word & (1 << (code & 31)))
                idx = int(c.node_left[node]) if left else int(c.node_right[node])
                if idx <= 0:
                    break
            acc += float(c.leaf_value[l0 - idx])
        if acc < float(c.stage_threshold[st]):
            return -st
    return 1


def scan_level(cascade, level: np.ndarray, step: int) -> dict:
    """OpenCV's row scan over one level: ``{(x, y): status}`` of the *visited* windows."""
    tables = integrals(level, cascade.has_tilted)
    W, H = cascade.window
    h, w = level.shape
    out = {}
    for y in range(0, h - H + 1, step):
        x = 0
        while x <= w - W:
            r = evaluate_window(cascade, tables, x, y)
            out[(x, y)] = r
            x += 2 * step if r == 0 else step
    return out
