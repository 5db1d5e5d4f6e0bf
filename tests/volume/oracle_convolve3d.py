"""Naive loop transcription of eq. (1) of Lin et al.'s video-parallelization article:
``(V * K)[t, y, x] = sum_l sum_n sum_m V[t - l, y - n, x - m] K[l, n, m]`` with centred kernel
indices, the border rule in space (and in time for 'same'), exact Python integers.

Deliberately slow and obvious; every method of portcv.volume.convolve3d must equal it."""

from __future__ import annotations

import numpy as np

from ..filters.oracle_filters import border_index


def convolve3d(video: np.ndarray, kernel: np.ndarray, border: str, value: int, time_mode: str) -> np.ndarray:
    """int64 (T_out, H, W) for one (T, H, W) clip and one (kt, kh, kw) kernel."""
    t_len, h, w = video.shape
    kt, kh, kw = kernel.shape
    at, ah, aw = kt // 2, kh // 2, kw // 2
    times = range(at, t_len - at) if time_mode == "valid" else range(t_len)
    out = np.zeros((len(times), h, w), dtype=np.int64)
    for o, t in enumerate(times):
        for y in range(h):
            for x in range(w):
                acc = 0
                for l in range(-at, at + 1):
                    tt = t - l if time_mode == "valid" else border_index(t - l, t_len, border)
                    for n in range(-ah, ah + 1):
                        yy = border_index(y - n, h, border)
                        for m in range(-aw, aw + 1):
                            xx = border_index(x - m, w, border)
                            sample = value if tt is None or yy is None or xx is None else int(video[tt, yy, xx])
                            acc += sample * int(kernel[l + at, n + ah, m + aw])
                out[o, y, x] = acc
    return out
