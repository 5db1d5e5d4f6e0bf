"""Cascade detection on the CPU: portcv's NumPy backend against cv2 on 2 threads (issue 24 item 3).

    python -m tools.measure cascade-cpu [--sizes 512,640x480,1920x1080] [--cascades haar,lbp] [--repeat 5]
                                [--threads 2] [--profile SIZE] [--memory]

One process, interleaved runs (``timing.interleaved_ms``): ``CascadeDetector.detect`` on NumPy
and ``cv2.CascadeClassifier.detectMultiScale`` with ``cv2.setNumThreads(threads)``, the same
cascade and portcv's defaults (scale 1.1, min_neighbors 3, min_size 0x0). Frames, gray via
``cv2.cvtColor``: scikit-image's astronaut (512x512), the astronaut resized to 640x480, and the
1920x1080 mosaic of ``tests/detect``'s memory test (the astronaut's red channel tiled 3 x 4).
The boxes are checked equal to cv2's (as sets). ``--memory`` runs each size's NumPy detection
in a fresh process and reports its peak RSS above the process before the call (``VmHWM``).
``--profile SIZE`` prints cProfile's top entries for one NumPy detection (the first cascade).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from portcv._timing import interleaved_ms

#: The repository root: the child processes import ``tools.measurements`` from there.
ROOT = Path(__file__).resolve().parents[2]

CASCADES = {"haar": "haarcascade_frontalface_default.xml", "lbp": "lbpcascade_frontalface_opencv.xml"}
PARAMS = dict(scale_factor=1.1, min_neighbors=3, min_size=(0, 0))


def frame(size: str) -> np.ndarray:
    import cv2
    from skimage import data

    rgb = data.astronaut()
    if size == "512":
        return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    if size == "640x480":
        return cv2.cvtColor(cv2.resize(rgb, (640, 480), interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY)
    if size == "1920x1080":
        return np.ascontiguousarray(np.tile(rgb[..., 0], (3, 4))[:1080, :1920])
    raise SystemExit(f"unknown size {size!r}")


def cascade_file(name: str, tmpdir: str) -> str:
    """The cascade's path for cv2 (scikit-image's LBP copy with its tag typo fixed, as the tests do)."""
    from portcv.detect._cascade._detector import resolve_cascade_path

    path = resolve_cascade_path(CASCADES[name])
    if name != "lbp":
        return path
    fixed = os.path.join(tmpdir, "lbp_fixed.xml")
    with open(path, "rb") as f:
        data = f.read().replace(b"featuhreParams", b"featureParams")
    with open(fixed, "wb") as f:
        f.write(data)
    return fixed


def as_set(boxes: object) -> list:
    return sorted(map(tuple, np.asarray(boxes).reshape(-1, 4).tolist()))


def peak_rss(size: str, cascade: str) -> float:
    """Peak RSS (MB) a fresh process gains over one NumPy detection of ``size``."""
    code = (
        "import numpy as np, portcv\n"
        "from tools.measurements.cascade_cpu import frame, CASCADES, PARAMS\n"
        f"img = frame({size!r})\n"
        f"det = portcv.detect.CascadeDetector.from_opencv(CASCADES[{cascade!r}])\n"
        "def status(key):\n"
        "    return int([l for l in open('/proc/self/status') if l.startswith(key)][0].split()[1]) * 1024\n"
        "base = status('VmRSS')\n"
        "with portcv.using('numpy'):\n"
        "    det.detect(img, **PARAMS)\n"
        "print(base, status('VmHWM'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    base, peak = (int(v) for v in out.stdout.split()[-2:])
    return (peak - base) / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="512,640x480,1920x1080")
    ap.add_argument("--cascades", default="haar,lbp")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default=None,
                    help="cProfile one NumPy detection of this size (the first of --cascades)")
    ap.add_argument("--memory", action="store_true", help="peak RSS of one NumPy detection per size (fresh process)")
    args = ap.parse_args(argv)

    import tempfile

    import cv2

    import portcv
    from portcv.detect import CascadeDetector

    cv2.setNumThreads(args.threads)
    tmpdir = tempfile.mkdtemp()
    sizes = [s for s in args.sizes.split(",") if s]
    if args.profile:
        import cProfile
        import pstats

        det = CascadeDetector.from_opencv(cascade_file(args.cascades.split(",")[0], tmpdir))
        img = frame(args.profile)
        with portcv.using("numpy"):
            det.detect(img, **PARAMS)
            prof = cProfile.Profile()
            prof.enable()
            det.detect(img, **PARAMS)
            prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    print(f"cv2 {cv2.__version__}, {cv2.getNumThreads()} threads; portcv NumPy; {PARAMS}; median of "
          f"{args.repeat} interleaved runs")
    print("| cascade | frame | portcv NumPy (ms) | cv2 (ms) | NumPy / cv2 | boxes equal | peak MB |")
    print("|---|---|---:|---:|---:|---|---:|")
    bad = 0
    for name in [c for c in args.cascades.split(",") if c]:
        path = cascade_file(name, tmpdir)
        det = CascadeDetector.from_opencv(path)
        cc = cv2.CascadeClassifier(path)
        for size in sizes:
            img = frame(size)

            def ours():
                with portcv.using("numpy"):
                    return det.detect(img, **PARAMS)[0]

            def theirs():
                return cc.detectMultiScale(img, scaleFactor=PARAMS["scale_factor"],
                                           minNeighbors=PARAMS["min_neighbors"], minSize=PARAMS["min_size"])

            same = as_set(ours()) == as_set(theirs())
            bad += not same
            ms = interleaved_ms({"numpy": ours, "cv2": theirs}, rounds=args.repeat)
            mem = f"{peak_rss(size, name):.0f}" if args.memory else ""
            print(f"| {name} | {size} | {ms['numpy']:.0f} | {ms['cv2']:.1f} | {ms['numpy'] / ms['cv2']:.1f}x "
                  f"| {same} | {mem} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
