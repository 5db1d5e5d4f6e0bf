"""Per-kernel GPU time of Table 4's and Table 5's calls, of Table 1's 3-D convolution and of the
article's distance problem on CuPy (timing.kernel_split_ms): which kernel of ``zoom`` (prefilter,
interpolation), of ``dcbf`` (hole list, hole fill), of ``convolve3d`` (padding, sums) or of
``sqeuclidean`` / ``nearest`` (row norms, tiles) to work on next. Run on a CUDA machine:
python -m tools.measure kernel-split [LABEL_PART ...] (only the cases whose label contains one of them)"""

from __future__ import annotations

import sys
from typing import Any, Callable

import portcv
from portcv._timing import kernel_split_ms
from tools.measurements.zoom_timing import table4_cases

from asv_bench.benchmarks import bench_depth as D  # the asv suite's inputs
from asv_bench.benchmarks import bench_distance as DIST
from asv_bench.benchmarks import bench_volume as V

#: A case: ``make()`` puts its inputs on the GPU and returns the call; the call makes ``count``
#: of ``unit`` (frames, clips or calls), the unit the times are printed per.
Case = tuple[Callable[[], Callable[[], Any]], int, str]


def article_cases() -> dict[str, Case]:
    """``{label: (make, count, unit)}`` on CuPy; nothing touches the GPU before a ``make()``
    (tools/measurements/ncu_kernels.py profiles the same calls, one case per process)."""
    import cupy

    portcv.use("cupy")
    cases: dict[str, Case] = {}

    def zoom(frames, factor):
        def make():
            x = cupy.asarray(frames)
            return lambda: portcv.transform.zoom(x, factor)
        return make

    for label, frames, factor, count in table4_cases():
        cases[f"zoom {label}"] = (zoom(frames, factor), count, "frame")

    def dcbf(dtype, frames):
        def make():
            depth, color = cupy.asarray(D.table5_depth(dtype)), cupy.asarray(D.table5_color())
            if frames > 1:
                depth, color = cupy.stack([depth] * frames), cupy.stack([color] * frames)
            return lambda: portcv.depth.dcbf(depth, color, D.KSIZE, D.SIGMA_SPACE, D.SIGMA_COLOR)
        return make

    cases["dcbf uint8"] = (dcbf("uint8", 1), 1, "frame")
    cases["dcbf uint16"] = (dcbf("uint16", 1), 1, "frame")
    cases["dcbf uint8 batch 16"] = (dcbf("uint8", 16), 16, "frame")

    def convolve3d(k, clips):  # Table 1: one clip = the 4 output frames of k + 3 frames of 720 x 560
        def make():
            video, kernel = cupy.asarray(V._article_clip(k)), V._article_kernel(k)
            if clips > 1:
                video = cupy.stack([video] * clips)
            return lambda: portcv.volume.convolve3d(video, kernel, method="direct")
        return make

    for k in (5, 15):
        cases[f"convolve3d k={k} clip"] = (convolve3d(k, 1), 1, "clip")
        cases[f"convolve3d k={k} batch of 16 clips"] = (convolve3d(k, 16), 16, "clip")

    def distance(fn):
        def make():
            queries, database = (cupy.asarray(a) for a in DIST.features("4096x16384x128"))
            return lambda: fn(queries, database)
        return make

    cases["sqeuclidean 4096x16384x128"] = (distance(portcv.distance.sqeuclidean), 1, "call")
    cases["nearest 4096x16384x128"] = (distance(portcv.distance.nearest), 1, "call")
    return cases


def main(argv: list[str]) -> int:
    for label, (make, count, unit) in article_cases().items():
        if argv and not any(part in label for part in argv):
            continue
        split = kernel_split_ms(make(), calls=10 if count > 1 else 30)
        if split is None:
            print(f"{label}: the host could not queue the calls behind the spin")
            continue
        parts = ", ".join(f"{k} {v * 1e3 / count:.1f}" for k, v in split.items())
        print(f"{label} (µs per {unit}): {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
