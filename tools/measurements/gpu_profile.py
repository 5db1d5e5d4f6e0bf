"""Where does a CuPy call's time go? Host overhead (cProfile) vs kernel time (CUDA events over
back-to-back launches of the raw kernel). Run on a CUDA machine: python -m tools.measure gpu-profile"""

from __future__ import annotations

import cProfile
import os
import pstats

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import cupy

import portcv

portcv.use("cupy")


def events_ms(fn, n=200):
    for _ in range(5):
        fn()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return cupy.cuda.get_elapsed_time(s, e) / n


rgb = cupy.asarray(portcv.data.synthetic_rgb(2160, 3840))
gray = portcv.color.rgb_to_gray(rgb)
batch = cupy.stack([gray] * 8)
calls = {
    "gaussian k5 4K": lambda: portcv.filters.gaussian_blur(gray, ksize=5, sigma=1.2),
    "gaussian k5 4K x8 batch (per frame)": lambda: portcv.filters.gaussian_blur(batch, ksize=5, sigma=1.2, channel_axis=None),
    "box k5 4K": lambda: portcv.filters.box_blur(gray, 5),
    "rgb_to_gray 4K": lambda: portcv.color.rgb_to_gray(rgb),
    "cupy copy 4K gray (reference)": lambda: gray.copy(),
}
for name, fn in calls.items():
    ms = events_ms(fn)
    if "batch" in name:
        ms /= 8
    print(f"{name:40s} {ms * 1e3:8.1f} us per call (queue throughput)")
pr = cProfile.Profile()
pr.enable()
for _ in range(2000):
    portcv.filters.gaussian_blur(gray, ksize=5, sigma=1.2)
pr.disable()
cupy.cuda.get_current_stream().synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
