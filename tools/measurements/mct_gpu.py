"""MCT detection on the GPU: ``MCTDetector.default().detect`` per frame (one synchronized call, and
per frame in a batch of 16 frames) and the MCT transform's GPU time, on CuPy and JAX.

    python -m tools.measure mct-gpu [--sizes 640x480,1920x1080] [--backends cupy,jax] [--json out.json]

Frames are ``portcv.data.face_scenes`` (as ``tools/measurements/mct_cpu.py``), settings the thesis's (scale
1.15, min_neighbors 3, min size 24x24). Each detection is checked against NumPy's boxes. A
detection reads its survivor counts on the host between stage segments, so its time is a wall
time (CUDA events on CuPy give the GPU time spanned beside it).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import portcv
from portcv._timing import gpu_time_ms, jax_queue_ms, timed
from tools.measurements.mct_cpu import PARAMS, frame


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="640x480,1920x1080")
    p.add_argument("--backends", default="cupy,jax")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    det = portcv.detect.MCTDetector.default()
    report: dict = {}
    for size in args.sizes.split(","):
        gray = frame(size)
        with portcv.using("numpy"):
            expected = det.detect(gray, **PARAMS)
        batch = np.stack([gray] * args.batch)
        for be in args.backends.split(","):
            with portcv.using(be):
                events = be == "cupy"
                got, wall, gpu = timed(lambda: det.detect(gray, **PARAMS), args.repeat, events)
                same = all(np.array_equal(a, b) for a, b in zip(expected, got))
                _, batch_wall, _ = timed(lambda: det.detect(batch, **PARAMS), max(3, args.repeat // 10), events)
                dev = portcv.asarray(gray)
                mct = (gpu_time_ms(lambda: portcv.detect.mct(dev), repeat=100)[0] if events
                       else jax_queue_ms(lambda: portcv.detect.mct(dev)))
            row = {"call_ms": wall, "call_gpu_ms": gpu, "per_frame_in_batch_ms": batch_wall / args.batch,
                   "mct_transform_ms": mct, "boxes": int(got[0].shape[0]), "same_boxes_as_numpy": same}
            report[f"{be} {size}"] = row
            print(f"{be} {size}: call {wall:.3f} ms (GPU {gpu if gpu is None else round(gpu, 3)} ms), "
                  f"per frame in a batch of {args.batch} {row['per_frame_in_batch_ms']:.3f} ms, "
                  f"mct transform {mct * 1e3:.1f} us, {row['boxes']} boxes, same as NumPy: {same}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
