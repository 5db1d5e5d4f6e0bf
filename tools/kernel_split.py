"""Per-kernel GPU time of Table 4's and Table 5's calls, of Table 1's 3-D convolution and of the
distances on CuPy (timing.kernel_split_ms): which kernel of ``zoom`` (prefilter passes,
interpolation), of ``dcbf`` (hole list, hole fill) and of ``convolve3d`` (padding, sums) to work on
next. Run on a CUDA machine: python tools/kernel_split.py [LABEL_PART ...] (only the cases whose
label contains one of them)"""

from __future__ import annotations

import os
import sys

import portcv
from timing import kernel_split_ms  # tools/, beside this script
from zoom_timing import table4_cases

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "asv_bench"))
from benchmarks import bench_depth as D  # noqa: E402  (the asv suite's inputs)
from benchmarks import bench_distance as B  # noqa: E402
from benchmarks import bench_volume as V  # noqa: E402


def article_cases() -> dict:
    """``{label: (call, frames per call)}``: Table 4's zooms, Table 5's DCBF, Table 1's clips,
    on CuPy (tools/ncu_kernels.py profiles the same calls)."""
    import cupy

    portcv.use("cupy")
    cases = {}
    for label, frames, factor, count in table4_cases():
        x = cupy.asarray(frames)
        cases[f"zoom {label}"] = ((lambda x=x, factor=factor: portcv.transform.zoom(x, factor)), count)
    color = cupy.asarray(D.table5_color())
    depth8, depth16 = cupy.asarray(D.table5_depth("uint8")), cupy.asarray(D.table5_depth("uint16"))
    color_batch, depth8_batch = cupy.stack([color] * 16), cupy.stack([depth8] * 16)
    dcbf = lambda d, c: portcv.depth.dcbf(d, c, D.KSIZE, D.SIGMA_SPACE, D.SIGMA_COLOR)  # noqa: E731
    cases["dcbf uint8"] = (lambda: dcbf(depth8, color), 1)
    cases["dcbf uint16"] = (lambda: dcbf(depth16, color), 1)
    cases["dcbf uint8 batch 16"] = (lambda: dcbf(depth8_batch, color_batch), 16)
    for k in (5, 15):  # Table 1: one clip = the 4 output frames of k + 3 frames of 720 x 560
        clip, kernel = cupy.asarray(V._article_clip(k)), V._article_kernel(k)
        clips = cupy.stack([clip] * 16)
        conv = lambda v, kernel=kernel: portcv.volume.convolve3d(v, kernel, method="direct")  # noqa: E731
        cases[f"convolve3d k={k} clip"] = ((lambda v=clip, conv=conv: conv(v)), 1)
        cases[f"convolve3d k={k} batch of 16 clips"] = ((lambda v=clips, conv=conv: conv(v)), 16)
    F, Dm = (cupy.asarray(a) for a in B.features("4096x16384x128"))  # the article's distance problem
    cases["sqeuclidean 4096x16384x128"] = (lambda: portcv.distance.sqeuclidean(F, Dm), 1)
    cases["nearest 4096x16384x128"] = (lambda: portcv.distance.nearest(F, Dm), 1)
    return cases


def main(argv: list[str]) -> int:
    cases = article_cases()
    for label, (fn, frames) in cases.items():
        if argv and not any(part in label for part in argv):
            continue
        split = kernel_split_ms(fn, calls=10 if frames > 1 else 30)
        if split is None:
            print(f"{label}: the host could not queue the calls behind the spin")
            continue
        parts = ", ".join(f"{k} {v * 1e3 / frames:.1f}" for k, v in split.items())
        unit = "clip" if label.startswith("convolve3d") else "call" if " 4096x" in label else "frame"
        print(f"{label} (µs per {unit}): {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
