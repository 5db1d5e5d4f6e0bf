"""GPU figures of ``filters.median_filter`` by kernel size, CuPy against JAX (docs/filters.md,
"JAX and k >= 7"): a batch of 8 gray 1920x1080 frames per call, time per frame of back-to-back
calls (CUDA events on CuPy, one wait at the end on JAX), one synchronized call beside it.

    python -m tools.measure median-gpu [--sizes 5 7 11 15]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import portcv
from portcv._timing import queued_ms, synced_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 7, 11, 15])
    parser.add_argument("--frames", type=int, default=8)
    args = parser.parse_args()
    frames = portcv.data.synthetic_rgb(1080, 1920, seed=1)[..., 1]
    batch = np.stack([np.roll(frames, 7 * t, axis=1) for t in range(args.frames)])
    for k in args.sizes:
        row = {}
        for name in ("cupy", "jax"):
            with portcv.using(name) as b:
                x = portcv.asarray(batch)
                fn = lambda: portcv.filters.median_filter(x, k)
                t0 = time.perf_counter()
                b.block(fn())
                first = time.perf_counter() - t0
                per_call = queued_ms(name, fn, repeat=10, warmup=2, rounds=3)
                row[name] = per_call / args.frames
                single = synced_ms(lambda: b.block(fn()), n=3)
                print(f"median k={k:2d} {name:4s}: {1e3 * row[name]:9.1f} us per frame "
                      f"({per_call:8.3f} ms per call of {args.frames}), single call {single:8.3f} ms, "
                      f"first call {first:6.1f} s", flush=True)
        print(f"median k={k:2d} jax / cupy per frame: {row['jax'] / row['cupy']:.1f}x", flush=True)


if __name__ == "__main__":
    main()
