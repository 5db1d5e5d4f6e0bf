"""Face detection accuracy of the bundled MCT cascade against cv2's face cascades (issue 21 item 5).

    python -m tools.measure eval-faces [--cascade PATH] [--scenes 12] [--settings 1.15,3 1.1,5] [--skip-peers]

Test sets (never used in training or threshold tuning; ``tools/generators/train_mct.py`` says which were):
- T1: CSU ScrapShots held-out identities (5, 10, ..., 30: 6 people), ground truth from the eyes
  with the cv2-calibrated box (width 2.54 x eye distance, eye midpoint at (0.49 w, 0.38 w)).
- T2: ``portcv.data.face_scenes``: T1 faces cut with a margin (1.6 x the face box, so the paste
  edge stays outside the face window) pasted at 24-120 px face width into pyvision's test
  face-free photos 44-51 (640x480), 3-8 faces per scene (seed 0), and two 1920x1080 scenes
  (seed 1, faces 54-270 px).
- T3: single photos, boxes checked by eye once (cv2 Haar alt2's box, drawn and looked at):
  scikit-image's astronaut, matplotlib's grace_hopper, pyvision's FaceSample and lena.
  scikit-image's camera is left out: the cameraman's face is turned to his camera, not frontal.
``--offsets`` adds ROC points: the MCT cascade with its last threshold moved.
- N: face-free photos 36-51 (16 photos, 4.9 Mpx): false positives per megapixel.
A face is found when a box has IoU >= 0.5 with it. Every detector runs through portcv on NumPy
(``MCTDetector`` / ``CascadeDetector``, equal to cv2 on the Haar and LBP cascades), min size 24.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import portcv
from portcv import data
from portcv.detect import CascadeDetector, MCTDetector, load_mct_cascade

PEERS = {"haar default": "haarcascade_frontalface_default.xml", "haar alt2": "haarcascade_frontalface_alt2.xml",
         "lbp": "lbpcascade_frontalface_opencv.xml"}


eye_box = data.face_box


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a (n, 4)`` against ``b (m, 4)``, ``[x, y, w, h]``."""
    a, b = a.astype(np.float64)[:, None], b.astype(np.float64)[None]
    x0, y0 = np.maximum(a[..., 0], b[..., 0]), np.maximum(a[..., 1], b[..., 1])
    x1 = np.minimum(a[..., 0] + a[..., 2], b[..., 0] + b[..., 2])
    y1 = np.minimum(a[..., 1] + a[..., 3], b[..., 1] + b[..., 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    return inter / (a[..., 2] * a[..., 3] + b[..., 2] * b[..., 3] - inter)


def score(boxes: np.ndarray, truth: np.ndarray) -> tuple[int, int]:
    """(found faces, false positives): greedy one-to-one matching at IoU >= 0.5."""
    if truth.shape[0] == 0:
        return 0, int(boxes.shape[0])
    if boxes.shape[0] == 0:
        return 0, 0
    m = iou(truth, boxes)
    found, used = 0, set()
    for t in range(truth.shape[0]):
        order = np.argsort(-m[t], kind="stable")
        for j in order:
            if m[t, j] < 0.5:
                break
            if j not in used:
                used.add(int(j))
                found += 1
                break
    return found, int(boxes.shape[0]) - len(used)


#: T3's boxes ``[x, y, w, h]``, checked by eye.
T3_BOXES = {"astronaut": [177, 66, 97, 97], "grace_hopper": [145, 99, 239, 239], "FaceSample": [171, 78, 250, 250],
            "lena": [220, 203, 173, 173]}


def single_photos() -> list:
    """``[(name, gray, truth (1, 4))]`` of T3."""
    import tarfile

    import imageio.v3 as iio
    import matplotlib.cbook as cbook
    from skimage import data as skdata

    rgb = {"astronaut": skdata.astronaut(),
           "grace_hopper": iio.imread(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))}
    with tarfile.open(data.fetch_pyvision()) as tar:
        for name in ("FaceSample", "lena"):
            member = tar.extractfile(data._PYVISION_DATA + f"misc/{name}.jpg").read()
            rgb[name] = iio.imread(member, extension=".jpg")
    return [(name, np.asarray(portcv.color.rgb_to_gray(np.ascontiguousarray(rgb[name][..., :3]))),
             np.array([T3_BOXES[name]], np.float64)) for name in T3_BOXES]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cascade", default="mct_frontalface_24.npz")
    ap.add_argument("--scenes", type=int, default=12)
    ap.add_argument("--settings", nargs="+", default=["1.15,3", "1.1,5"])
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--offsets", default="", help="ROC points: comma-separated offsets added to the MCT cascade's "
                    "last threshold (e.g. -2000,-1000), each evaluated as another detector")
    args = ap.parse_args()
    images, ids, eyes, _ = data.csu_scrapshots()
    test = [i for i in range(len(ids)) if ids[i] % 5 == 0]
    t1 = [(images[i], eyes[i]) for i in test]
    t2 = data.face_scenes(seed=0, count=args.scenes) + data.face_scenes(seed=1, count=2, size=(1920, 1080))
    t3 = single_photos()
    neg = [np.asarray(portcv.color.rgb_to_gray(p)) for n in ("validation", "test") for p in data.nonface_images(split=n)]
    neg_mpx = sum(n.size for n in neg) / 1e6
    cascade = load_mct_cascade(args.cascade)
    detectors = {"mct (portcv)": MCTDetector(cascade)}
    for off in [int(v) for v in args.offsets.split(",") if v]:
        thr = cascade.threshold.copy()
        thr[-1] += off
        detectors[f"mct, T_last {off:+d}"] = MCTDetector(portcv.detect.MCTCascade(
            cascade.positions, cascade.lut, cascade.stage_end, thr, cascade.window))
    if not args.skip_peers:
        detectors.update({name: CascadeDetector.from_opencv(f) for name, f in PEERS.items()})
    print(f"T1: {len(t1)} faces; T2: {len(t2)} scenes, {sum(t.shape[0] for _, t in t2)} faces; "
          f"N: {len(neg)} photos, {neg_mpx:.1f} Mpx\n")
    print("| detector | scale, min_neighbors | T1 found | T3 found (FP) | T2 found | T2 FP | N FP | N FP / Mpx | "
          "s per 640x480 (NumPy) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for setting in args.settings:
        sf, mn = float(setting.split(",")[0]), int(setting.split(",")[1])
        for name, det in detectors.items():
            kw = dict(scale_factor=sf, min_neighbors=mn, min_size=(24, 24))
            f1 = sum(score(det.detect(img, **kw)[0], eye_box(e)[None])[0] for img, e in t1)
            s3 = [score(det.detect(img, **kw)[0], truth) for _, img, truth in t3]
            f3, fp3 = sum(a for a, _ in s3), sum(b for _, b in s3)
            f2 = fp2 = 0
            t0 = time.perf_counter()
            for img, truth in t2[: args.scenes]:
                a, b = score(det.detect(img, **kw)[0], truth)
                f2, fp2 = f2 + a, fp2 + b
            sec = (time.perf_counter() - t0) / max(args.scenes, 1)
            for img, truth in t2[args.scenes :]:
                a, b = score(det.detect(img, **kw)[0], truth)
                f2, fp2 = f2 + a, fp2 + b
            fpn = sum(det.detect(img, **kw)[0].shape[0] for img in neg)
            n2 = sum(t.shape[0] for _, t in t2)
            print(f"| {name} | {sf}, {mn} | {f1}/{len(t1)} ({100 * f1 / len(t1):.1f} %) | {f3}/{len(t3)} ({fp3}) | {f2}/{n2} "
                  f"({100 * f2 / n2:.1f} %) | {fp2} | {fpn} | {fpn / neg_mpx:.2f} | {sec:.2f} |", flush=True)


if __name__ == "__main__":
    main()
