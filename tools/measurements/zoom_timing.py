"""GPU figures of portcv.transform.zoom at Lin et al.'s Table 4 sizes (docs/zoom.md): ms per
frame of back-to-back calls (CUDA events on CuPy, one wait at the end on JAX), one frame and a
batch of 64 QCIF frames x7, and 1080p -> 4K, with one synchronized call beside each and, on
CuPy, the GPU's own time per frame with the host's dispatch hidden (timing.device_ms).

    python -m tools.measure zoom-timing [--backends cupy,jax]
"""

from __future__ import annotations

import argparse

import numpy as np

import portcv
from portcv._timing import device_ms, gpu_time_ms, jax_queue_ms, synced_ms


def table4_cases() -> list:
    """``(label, frames, factor, frame count)``: one QCIF frame and a batch of 64 x7, and 1080p x2
    (random uint8, seed 0); tools/measurements/kernel_split.py times the same."""
    rng = np.random.default_rng(0)
    return [("QCIF x7, 1 frame", rng.integers(0, 256, (144, 176), dtype=np.uint8), 7, 1),
            ("QCIF x7, batch of 64", rng.integers(0, 256, (64, 144, 176), dtype=np.uint8), 7, 64),
            ("1080p x2 (4K)", rng.integers(0, 256, (1080, 1920), dtype=np.uint8), 2, 1)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="cupy,jax")
    backends = p.parse_args().backends.split(",")
    for label, frames, factor, count in table4_cases():
        for name in backends:
            with portcv.using(name) as b:
                x = portcv.asarray(frames)
                coeffs = portcv.transform.spline_filter(x)
                for stage, fn in (("prefilter", lambda: portcv.transform.spline_filter(x)),
                                  ("interpolation", lambda: portcv.transform.zoom(coeffs, factor, prefilter=False)),
                                  ("zoom", lambda: portcv.transform.zoom(x, factor))):
                    gpu = ""
                    if name == "cupy":
                        per_call, _ = gpu_time_ms(fn, repeat=10, rounds=3, warmup=2)
                        own = device_ms(fn, calls=20)
                        gpu = f", GPU alone {1e3 * own / count:7.1f} us/frame" if own is not None else ""
                    else:
                        per_call = jax_queue_ms(fn, repeat=10, rounds=3, warmup=2)
                    single = synced_ms(lambda: b.block(fn()), n=5)
                    print(f"zoom {label:22s} {name:5s} {stage:13s}: {1e3 * per_call / count:9.1f} us/frame "
                          f"({per_call:8.3f} ms/call), single call {single:8.3f} ms{gpu}", flush=True)


if __name__ == "__main__":
    main()
