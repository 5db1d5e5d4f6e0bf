"""Naive transcription of the webcam report's CPU delta loop (section 2.1), one byte at a time.

    for (int i = 0; i < total; i++) {
        int df = frame[i] - previous[i];
        if (df < -LR_THRESHOLDS || df > LR_THRESHOLDS) {
            frame[h_pos] = df; h_xs[h_pos] = i; h_pos++;
        } else {
            pvs.data[i] -= df;            // pvs is a clone of the frame: the next reference
        }
    }

with one change the report does not need: a byte is sent only while ``h_pos < capacity``; a
changed byte past the capacity takes the ``else`` branch (keeps its old value).
"""

from __future__ import annotations

import numpy as np


def encode(frame: np.ndarray, previous: np.ndarray, threshold: int, capacity: int | None = None):
    total = frame.size
    capacity = total if capacity is None else capacity
    cur = [int(v) for v in frame.reshape(-1)]
    prev = [int(v) for v in previous.reshape(-1)]
    pvs = list(cur)
    diff = [0] * capacity
    xs = [0] * capacity
    h_pos = 0
    for i in range(total):
        df = cur[i] - prev[i]
        if (df < -threshold or df > threshold) and h_pos < capacity:
            diff[h_pos] = (df + 128) % 256 - 128  # the uint8_t store, read back as int8
            xs[h_pos] = i
            h_pos += 1
        else:
            pvs[i] -= df
    return (
        h_pos,
        np.array(diff, dtype=np.int8),
        np.array(xs, dtype=np.int32),
        np.array(pvs, dtype=np.uint8).reshape(frame.shape),
    )


def decode(previous: np.ndarray, diff: np.ndarray, xs: np.ndarray, count: int) -> np.ndarray:
    """The receiver: ``frame[xs[k]] = (frame[xs[k]] + diff[k]) mod 256`` for ``k < count``."""
    out = [int(v) for v in previous.reshape(-1)]
    for k in range(count):
        out[int(xs[k])] = (out[int(xs[k])] + int(diff[k])) % 256
    return np.array(out, dtype=np.uint8).reshape(previous.shape)
