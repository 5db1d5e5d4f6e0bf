"""Face detection accuracy of the bundled MCT cascade against cv2's face cascades (issue 21 item 5).

    python tools/eval_faces.py [--cascade PATH] [--scenes 12] [--settings 1.15,3 1.1,5] [--skip-peers]

Test sets (never used in training or threshold tuning; ``tools/train_mct.py`` says which were):
- T1: CSU ScrapShots held-out identities (5, 10, ..., 30: 6 people), ground truth from the eyes
  with the cv2-calibrated box (width 2.54 x eye distance, eye midpoint at (0.49 w, 0.38 w)).
- T2: composited scenes, seeded: T1 faces cut with a margin (1.6 x the face box, so the paste
  edge stays outside the face window) pasted at 24-120 px face width into pyvision's test
  face-free photos 44-51 (640x480), 3-8 faces per scene, and two 1920x1080 scenes.
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
from portcv.detect._mct_train import BOX_PER_EYE_DISTANCE, EYE_MID

PEERS = {"haar default": "haarcascade_frontalface_default.xml", "haar alt2": "haarcascade_frontalface_alt2.xml",
         "lbp": "lbpcascade_frontalface_opencv.xml"}


def eye_box(eyes: np.ndarray) -> np.ndarray:
    lx, ly, rx, ry = eyes.astype(np.float64)
    w = BOX_PER_EYE_DISTANCE * np.hypot(rx - lx, ry - ly)
    return np.array([(lx + rx) / 2 - EYE_MID[0] * w, (ly + ry) / 2 - EYE_MID[1] * w, w, w])


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


def scenes(t1: list, seed: int, count: int) -> list:
    """``[(gray scene, truth boxes)]``: T1 faces pasted into test photos (see the module doc)."""
    rng = np.random.default_rng(seed)
    backgrounds = [np.asarray(portcv.color.rgb_to_gray(p)) for p in data.nonface_images(split="test")]
    out = []
    for k in range(count + 2):
        big = k >= count
        bg = backgrounds[k % len(backgrounds)]
        if big:  # 1920x1080: the photo scaled up
            canvas = np.array(portcv.transform.resize(bg, size=(1920, 1080), interpolation="bilinear"))
        else:
            canvas = bg.copy() if bg.shape == (480, 640) else np.ascontiguousarray(bg.T[:480, :640])
        h, w = canvas.shape
        placed: list = []  # pasted rectangles (no overlaps)
        truth: list = []
        want = int(rng.integers(3, 9))
        for _ in range(400):
            if len(truth) >= want:
                break
            img, eyes = t1[int(rng.integers(len(t1)))]
            size = int(rng.integers(24, 121)) * (2 if big else 1)
            box = eye_box(eyes)
            margin = 0.3 * box[2]
            x0, y0 = int(round(box[0] - margin)), int(round(box[1] - margin))
            x1, y1 = int(round(box[0] + box[2] + margin)), int(round(box[1] + box[3] + margin))
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, img.shape[1]), min(y1, img.shape[0])
            f = size / box[2]
            cw, ch = max(1, int(round((x1 - x0) * f))), max(1, int(round((y1 - y0) * f)))
            if cw >= w or ch >= h:
                continue
            px, py = int(rng.integers(0, w - cw)), int(rng.integers(0, h - ch))
            if any(px < bx + bw and bx < px + cw and py < by + bh and by < py + ch for bx, by, bw, bh in placed):
                continue
            crop = np.ascontiguousarray(img[y0:y1, x0:x1])
            canvas[py : py + ch, px : px + cw] = np.asarray(
                portcv.transform.resize(crop, size=(cw, ch), interpolation="bilinear"))
            placed.append((px, py, cw, ch))
            truth.append([px + (box[0] - x0) * f, py + (box[1] - y0) * f, size, size])
        truth = np.array(truth, np.float64).reshape(-1, 4)
        out.append((canvas, truth))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cascade", default="mct_frontalface_24.npz")
    ap.add_argument("--scenes", type=int, default=12)
    ap.add_argument("--settings", nargs="+", default=["1.15,3", "1.1,5"])
    ap.add_argument("--skip-peers", action="store_true")
    args = ap.parse_args()
    images, ids, eyes, _ = data.csu_scrapshots()
    test = [i for i in range(len(ids)) if ids[i] % 5 == 0]
    t1 = [(images[i], eyes[i]) for i in test]
    t2 = scenes(t1, 0, args.scenes)
    neg = [np.asarray(portcv.color.rgb_to_gray(p)) for n in ("validation", "test") for p in data.nonface_images(split=n)]
    neg_mpx = sum(n.size for n in neg) / 1e6
    detectors = {"mct (portcv)": MCTDetector(load_mct_cascade(args.cascade))}
    if not args.skip_peers:
        detectors.update({name: CascadeDetector.from_opencv(f) for name, f in PEERS.items()})
    print(f"T1: {len(t1)} faces; T2: {len(t2)} scenes, {sum(t.shape[0] for _, t in t2)} faces; "
          f"N: {len(neg)} photos, {neg_mpx:.1f} Mpx\n")
    print("| detector | scale, min_neighbors | T1 found | T2 found | T2 FP | N FP | N FP / Mpx | s per 640x480 |")
    print("|---|---|---|---|---|---|---|---|")
    for setting in args.settings:
        sf, mn = float(setting.split(",")[0]), int(setting.split(",")[1])
        for name, det in detectors.items():
            kw = dict(scale_factor=sf, min_neighbors=mn, min_size=(24, 24))
            f1 = sum(score(det.detect(img, **kw)[0], eye_box(e)[None])[0] for img, e in t1)
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
            print(f"| {name} | {sf}, {mn} | {f1}/{len(t1)} ({100 * f1 / len(t1):.1f} %) | {f2}/{n2} "
                  f"({100 * f2 / n2:.1f} %) | {fp2} | {fpn} | {fpn / neg_mpx:.2f} | {sec:.2f} |", flush=True)


if __name__ == "__main__":
    main()
