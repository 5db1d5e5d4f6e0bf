"""Naive transcriptions of the webcam report's binarization (its section 8) and of OpenCV's Otsu.

Loops over pixels and bins, in the order the listings run them; Python ints and Python floats
(IEEE doubles, one rounding per operation) only.
"""

from __future__ import annotations

import numpy as np


def histogram(img: np.ndarray, bins: int, has_channels: bool) -> np.ndarray:
    """Section 8.2.1: ``histogram[index]++`` for every pixel, per frame (and channel)."""
    lead = img.shape[:-3] if has_channels else img.shape[:-2]
    channels = img.shape[-1] if has_channels else 1
    out = np.zeros(lead + (channels, bins), dtype=np.int64)
    for f in np.ndindex(*lead):
        frame = img[f]
        for pos in np.ndindex(*frame.shape):
            c = pos[-1] if has_channels else 0
            out[f + (c, int(frame[pos]) * bins // 256)] += 1
    return out if has_channels else out[..., 0, :]


def _threshold(first: int, second: int) -> int:
    """Section 8.4: ``(first + second) / 2`` in C (truncating toward zero), clamped to [50, 200]."""
    total = first + second
    t = abs(total) // 2 * (1 if total >= 0 else -1)
    return 50 if t < 50 else 200 if t > 200 else t


def two_peaks_cpu(hist: np.ndarray, *, as_printed: bool) -> int:
    """Section 8.3.1's loop. ``as_printed``: ``sec_max = max`` after ``max = histogram[i]``
    (the listing); otherwise before it (the intent: the old maximum becomes the second)."""
    mx, sec_max = -1, -1
    index_max, index_sec_max = -1, -1
    for i in range(256):
        h = int(hist[i])
        if h >= mx:
            index_sec_max = index_max
            index_max = i
            if as_printed:
                mx = h
                sec_max = mx
            else:
                sec_max = mx
                mx = h
        elif h > sec_max and h < mx:
            sec_max = h
            index_sec_max = i
    return _threshold(index_max, index_sec_max)


def two_peaks_gpu(hist: np.ndarray) -> int:
    """Section 8.3.2's kernel, one block of 256 threads run step by step (``__syncthreads``
    between steps: every thread of a step reads before any writes)."""
    shared_histogram = [int(v) for v in hist]
    shared_indexes = list(range(256))
    offset = 256 // 2
    while offset > 1:
        writes = []
        for tid in range(256):
            if tid < offset and shared_histogram[tid] < shared_histogram[tid + offset]:
                writes.append((tid, shared_histogram[tid + offset], shared_indexes[tid + offset]))
        for tid, v, i in writes:
            shared_histogram[tid] = v
            shared_indexes[tid] = i
        offset >>= 1
    return _threshold(shared_indexes[0], shared_indexes[1])


def otsu_opencv(hist: np.ndarray) -> int:
    """OpenCV 4.x ``getThreshVal_Otsu`` (modules/imgproc/src/thresh.cpp), line by line."""
    h = [int(v) for v in hist]
    flt_epsilon = 2.0**-23
    mu, scale = 0.0, 1.0 / sum(h)
    for i in range(256):
        mu += i * float(h[i])
    mu *= scale
    mu1, q1 = 0.0, 0.0
    max_sigma, max_val = 0.0, 0
    for i in range(256):
        p_i = h[i] * scale
        mu1 *= q1
        q1 += p_i
        q2 = 1.0 - q1
        if min(q1, q2) < flt_epsilon or max(q1, q2) > 1.0 - flt_epsilon:
            continue
        mu1 = (mu1 + i * p_i) / q1
        mu2 = (mu - q1 * mu1) / q2
        sigma = q1 * q2 * (mu1 - mu2) * (mu1 - mu2)
        if sigma > max_sigma:
            max_sigma = sigma
            max_val = i
    return max_val


def binarize(img: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Section 8.5.1: ``matrix[i] > threshold ? 255 : 0``; ``thresholds`` already broadcast to ``img``."""
    out = np.zeros(img.shape, dtype=np.uint8)
    for pos in np.ndindex(*img.shape):
        out[pos] = 255 if int(img[pos]) > int(thresholds[pos]) else 0
    return out
