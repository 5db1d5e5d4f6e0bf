"""MCT detection on the CPU: portcv's NumPy (and JAX-CPU) MCTDetector against cv2's LBP face cascade (issue 21).

    python -m tools.measure mct-cpu [--sizes 640x480,1920x1080] [--rounds 5] [--threads 2] [--jax] [--memory]

One process, interleaved runs (``timing.interleaved_ms``): ``MCTDetector.default().detect`` and
``cv2.CascadeClassifier('lbpcascade_frontalface_opencv.xml').detectMultiScale2`` with
``cv2.setNumThreads(threads)``, both at the thesis's settings (scale 1.15, min_neighbors 3, min
size 24x24; portcv's window step is 1 at every scale, cv2's LBP scan uses its step-2 rule below
scale 2). Frames: ``portcv.data.face_scenes`` (held-out faces in held-out photos; 640x480 scene
seed 0, 1920x1080 seed 1). Also prints the windows scanned and the survivors after each stage.
``--memory``: each size's NumPy detection in a fresh process, peak RSS above the process before
the call (``VmHWM``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import portcv
from portcv.detect._scan._parameters import ScanParameters
from portcv._timing import interleaved_ms

#: The repository root: the child processes import ``tools.measurements`` from there.
ROOT = Path(__file__).resolve().parents[2]

PARAMS = dict(scale_factor=1.15, min_neighbors=3, min_size=(24, 24))


def frame(size: str) -> np.ndarray:
    w, h = (int(v) for v in size.split("x"))
    return portcv.data.face_scenes(seed=0 if h <= 480 else 1, count=1, size=(w, h))[0][0]


def stage_counts(det: portcv.detect.MCTDetector, gray: np.ndarray) -> list[int]:
    """Windows alive before stage 0 and after each stage (a cascade cut after stage j)."""
    c = det.cascade
    counts = []
    for j in range(c.n_stages):
        end = int(c.stage_end[j])
        part = portcv.detect.MCTCascade(c.positions[:end], c.lut[:end], c.stage_end[: j + 1], c.threshold[: j + 1])
        counts.append(len(portcv.detect.MCTDetector(part).candidates(gray, scale_factor=PARAMS["scale_factor"])))
    scan = ScanParameters(scale_factor=PARAMS["scale_factor"], min_neighbors=PARAMS["min_neighbors"], min_size=(24, 24),
                          max_size=None, split_stage=None, step=1)
    levels, geos = det._geometries(gray.shape[1], gray.shape[0], scan, 1)
    return [sum(g.offsets.size for g in geos)] + counts


def peak_memory(size: str) -> float:
    code = (
        "import portcv\nfrom tools.measurements import mct_cpu\n"
        f"g = mct_cpu.frame('{size}'); det = portcv.detect.MCTDetector.default()\n"
        "def hwm():\n"
        "    return int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
        "before = hwm(); det.detect(g, **mct_cpu.PARAMS); print((hwm() - before) / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="640x480,1920x1080")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jax", action="store_true", help="also JAX on the CPU")
    ap.add_argument("--memory", action="store_true")
    args = ap.parse_args()
    import tempfile

    import cv2
    from tools.measurements.cascade_cpu import cascade_file  # scikit-image's LBP copy with its tag typo fixed

    cv2.setNumThreads(args.threads)
    lbp = cv2.CascadeClassifier(cascade_file("lbp", tempfile.mkdtemp()))
    assert not lbp.empty()
    det = portcv.detect.MCTDetector.default()
    print("| frame | portcv NumPy [ms] | " + ("portcv JAX-CPU [ms] | " if args.jax else "")
          + f"cv2 LBP, {args.threads} threads [ms] | NumPy / cv2 | " + ("JAX / cv2 | " if args.jax else "")
          + "windows | alive after stages 0..4 |")
    print("|---|---|" + ("---|---|" if args.jax else "") + "---|---|---|---|")
    for size in args.sizes.split(","):
        gray = frame(size)

        def numpy_run(g=gray):
            with portcv.using("numpy"):
                det.detect(g, **PARAMS)

        fns = {"numpy": numpy_run,
               "cv2": lambda g=gray: lbp.detectMultiScale2(g, scaleFactor=1.15, minNeighbors=3, minSize=(24, 24))}
        if args.jax:
            def jax_run(g=gray):
                with portcv.using("jax"):
                    det.detect(g, **PARAMS)

            fns["jax"] = jax_run
        ms = interleaved_ms(fns, rounds=args.rounds)
        counts = stage_counts(det, gray)
        jax_col = f"{ms['jax']:.1f} | " if args.jax else ""
        jax_ratio = f"{ms['jax'] / ms['cv2']:.2f} | " if args.jax else ""
        print(f"| {size} | {ms['numpy']:.1f} | {jax_col}{ms['cv2']:.1f} | {ms['numpy'] / ms['cv2']:.2f} | {jax_ratio}"
              f"{counts[0]} | {' / '.join(str(c) for c in counts[1:])} |", flush=True)
    if args.memory:
        for size in args.sizes.split(","):
            print(f"peak memory of one NumPy detect at {size}: {peak_memory(size):.0f} MB above the process")


if __name__ == "__main__":
    main()
