"""Rebuild portcv's bundled MCT face cascade, ``src/portcv/detect/data/mct_frontalface_24.npz`` (issue 21).

    python -m tools.generators.train_mct [--out PATH] [--seed 0] [--per-face 40] [--negatives 40000]
                              [--rounds 30,60,120,200,400] [--hit-rates 0.995,0.995,0.995,0.995,0.98]
                              [--validation-per-face 20] [--variants mirror] [--quick]

Data (nothing else; fetched once into the user cache by ``portcv.data``):
- positives: CSU ScrapShots (pyvision-toolkit 1.3.6 sdist), identities with ``id % 5 != 0``
  (24 of 30); the last image of each is a validation face (threshold tuning only), the others
  are aligned by the eyes to the cv2-like 24x24 box and augmented (``augmented_faces``:
  mirror, rotation +-12 deg, scale +-8 %, shift +-1 px, gamma, blur); the validation faces get
  20 light variants each. Stages 0-3 keep 99.5 % of the validation faces, the last 98 %. Identities 5, 10, ..., 30
  are never seen: they are the held-out test set of ``tools/measurements/eval_faces.py``.
- negatives: pyvision's face-free photos 1-35 (gray) and scikit-image's face-free sample
  images, with their mirror images (``--variants`` can add quarter turns and 1.5x
  enlargements: tried, more mining time and not better); photos 36-51 are left for evaluation.
The recipe, the data checksums, the seed and the package versions go into the cascade's
``meta`` (the training time is printed, not stored): the same command gives the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time

import numpy as np

import portcv
from portcv import data
from portcv.detect import save_mct_cascade, train_mct_cascade
from portcv.detect._mct._train import augmented_faces

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "src", "portcv", "detect", "data", "mct_frontalface_24.npz")


def splits() -> dict:
    """The identity split of CSU ScrapShots: train / validation / test image indices."""
    images, ids, eyes, names = data.csu_scrapshots()
    train, val, test = [], [], []
    for person in sorted(set(ids.tolist())):
        idx = [i for i in range(len(ids)) if ids[i] == person]
        if person % 5 == 0:
            test += idx
        else:
            train += idx[:-1]
            val.append(idx[-1])
    return dict(images=images, ids=ids, eyes=eyes, names=names, train=train, validation=val, test=test)


def negatives(variants: str) -> list:
    """The negative images: pyvision photos 1-35 (gray) and scikit-image's face-free samples, plus
    ``variants`` of them: ``mirror`` (left-right), ``rot90`` (a quarter turn), ``up15`` (enlarged
    1.5x with ``bilinear_exact``: finer texture at the smallest scale)."""
    base = [np.asarray(portcv.color.rgb_to_gray(img)) for img in data.nonface_images(split="train")]
    base += data.skimage_negatives()
    out = list(base)
    for v in [v for v in variants.split(",") if v]:
        for g in base:
            if v == "mirror":
                out.append(np.ascontiguousarray(g[:, ::-1]))
            elif v == "rot90":
                out.append(np.ascontiguousarray(np.rot90(g)))
            elif v == "up15":
                size = (int(round(g.shape[1] * 1.5)), int(round(g.shape[0] * 1.5)))
                out.append(np.asarray(portcv.transform.resize(g, size=size, interpolation="bilinear_exact")))
            else:
                raise SystemExit(f"unknown negative variant {v!r}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-face", type=int, default=40)
    ap.add_argument("--negatives", type=int, default=40000)
    ap.add_argument("--rounds", default="30,60,120,200,400")
    ap.add_argument("--hit-rates", default="0.995,0.995,0.995,0.995,0.98", help="validation hit rate per stage (one, or one per stage)")
    ap.add_argument("--validation-per-face", type=int, default=20)
    ap.add_argument("--variants", default="mirror", help="negative image variants (see negatives())")
    ap.add_argument("--quick", action="store_true", help="a small smoke run (2 stages)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    s = splits()
    pos = augmented_faces([s["images"][i] for i in s["train"]], s["eyes"][s["train"]], per_face=args.per_face,
                          seed=args.seed)
    val = augmented_faces([s["images"][i] for i in s["validation"]], s["eyes"][s["validation"]],
                          per_face=args.validation_per_face,
                          seed=args.seed + 1, light=True)
    negs = negatives(args.variants)
    rounds = tuple(int(r) for r in args.rounds.split(","))
    stages = (10, 20, 40, 80, 484)
    if args.quick:
        stages, rounds = (10, 20), rounds[:2]
    with open(data.fetch_pyvision(), "rb") as fh:
        sdist = hashlib.sha256(fh.read()).hexdigest()
    lfw_bytes = np.ascontiguousarray(data.lfw_subset()[0]).tobytes()
    import imageio
    import skimage

    meta = dict(
        name="mct_frontalface_24",
        data=dict(pyvision_toolkit=dict(version=data.PYVISION_VERSION, sha256=sdist),
                  positives="CSU ScrapShots identities id % 5 != 0 (last image of each: validation)",
                  negatives=f"pyvision nonface 1-35 and scikit-image face-free samples, variants {args.variants}",
                  positives_sha256=hashlib.sha256(pos.tobytes()).hexdigest(),
                  validation_sha256=hashlib.sha256(val.tobytes()).hexdigest(),
                  negatives_sha256=hashlib.sha256(b"".join(n.tobytes() for n in negs)).hexdigest(),
                  lfw_subset_unused_sha256=hashlib.sha256(lfw_bytes).hexdigest()),
        augmentation=dict(per_face=args.per_face, validation_per_face=args.validation_per_face),
        test_identities=sorted({int(s["ids"][i]) for i in s["test"]}),
        versions=dict(python=platform.python_version(), numpy=np.__version__, scikit_image=skimage.__version__,
                      imageio=imageio.__version__, portcv=getattr(portcv, "__version__", "dev")),
        tool="tools/train_mct.py " +  # the name the committed cascade's meta records: a rerun gives its bytes
        " ".join(sys.argv[1:]),
    )
    print(f"{pos.shape[0]} positives, {val.shape[0]} validation faces, {len(negs)} negative images; "
          f"data ready in {time.perf_counter() - t0:.1f} s")
    hits = tuple(float(h) for h in args.hit_rates.split(","))
    cascade = train_mct_cascade(pos, negs, stage_positions=stages, negatives_per_stage=args.negatives,
                                stage_hit_rate=hits[0] if len(hits) == 1 else hits,
                                max_rounds=rounds, validation=val, seed=args.seed, step=1, progress=True, meta=meta)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_mct_cascade(cascade, args.out)
    print(f"{cascade!r} -> {args.out} ({os.path.getsize(args.out)} bytes); total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
