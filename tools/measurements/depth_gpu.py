"""GPU figures of Table 5's task (docs/depth.md): ``dcbf`` (uint8 and uint16 depth, RGB guide,
11 x 11), ``joint_bilateral`` (RGB guide, d = 11) and ``propagate`` / ``warp_disparity`` at
800 x 600, on CuPy and JAX: ms per call of back-to-back calls (CUDA events on CuPy, one wait at
the end on JAX), one synchronized call beside it, on CuPy the GPU's own time per call with the
host's dispatch hidden (timing.device_ms), and whether the result equals NumPy's. The
inputs are the asv suite's (asv_bench/benchmarks/bench_depth.py).

    python -m tools.measure depth-gpu [--backends cupy,jax]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import portcv
from portcv._timing import device_ms, queued_ms, synced_ms

from asv_bench.benchmarks import bench_depth as B  # the asv suite's inputs


def cases() -> list:
    K_src, K_dst, R, t = B.cameras()
    color, disparity = B.table5_color(), B.table5_disparity()
    return [
        ("dcbf uint8", lambda: portcv.depth.dcbf, (B.table5_depth("uint8"), color, B.KSIZE, B.SIGMA_SPACE, B.SIGMA_COLOR)),
        ("dcbf uint16", lambda: portcv.depth.dcbf, (B.table5_depth("uint16"), color, B.KSIZE, B.SIGMA_SPACE,
                                                     B.SIGMA_COLOR)),
        ("joint_bilateral rgb", lambda: portcv.filters.joint_bilateral,
         (color, B.table5_depth("uint8"), B.KSIZE, B.SIGMA_COLOR, B.SIGMA_SPACE)),
        ("propagate uint16", lambda: lambda d: portcv.depth.propagate(d, K_src, K_dst, R, t, B.TABLE5),
         (B.table5_depth("uint16"),)),
        ("warp_disparity Q4", lambda: lambda d: portcv.depth.warp_disparity(d, frac_bits=4), (disparity,)),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="cupy,jax")
    args = p.parse_args(argv)
    for label, fn_of, inputs in cases():
        fn = fn_of()
        with portcv.using("numpy"):
            expected = portcv.to_numpy(fn(*inputs))
        for name in args.backends.split(","):
            with portcv.using(name) as b:
                dev = [portcv.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
                got = portcv.to_numpy(fn(*dev))
                per_call = queued_ms(name, lambda: fn(*dev), repeat=20, warmup=3, rounds=3)
                single = synced_ms(lambda: b.block(fn(*dev)), n=5)
                own = device_ms(lambda: fn(*dev), calls=20) if name == "cupy" else None
            gpu = f", GPU alone {own:7.3f} ms" if own is not None else ""
            print(f"{label:20s} {name:5s}: {per_call:8.3f} ms per call, single call {single:8.3f} ms{gpu}, "
                  f"same as NumPy: {np.array_equal(expected, got)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
