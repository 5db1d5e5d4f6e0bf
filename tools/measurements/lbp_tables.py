"""The LBP recognizer's CPU figures for docs/recognize.md: portcv's NumPy backend against
scikit-image's ``local_binary_pattern`` (time ratio, target within 3x), Table 4.2-style feature
extraction per face, and the recognition accuracy on CSU ScrapShots next to OpenCV's LBPH.

    python -m tools.measure lbp-tables [--skip-accuracy]

Runs on the host (NumPy backend; the GPU tables come from asv on the H100). Needs scikit-image,
opencv-contrib-python-headless (cv2.face) and the cached CSU faces
(``portcv.data.csu_faces()`` fetches them once).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import portcv
from portcv import recognize
from portcv._timing import host_time_ms as best_ms


def lbp_ratio() -> None:
    from skimage import data
    from skimage.feature import local_binary_pattern

    images = {"camera 512x512": data.camera(), "coins 303x384": data.coins(),
              "astronaut 512x512": portcv.to_numpy(portcv.color.rgb_to_gray(data.astronaut())),
              "face 130x150": portcv.to_numpy(portcv.color.rgb_to_gray(data.astronaut()))[30:180, 160:290]}
    print("| image | (P, R) | method | portcv NumPy [ms] | scikit-image [ms] | ratio |")
    print("|---|---|---|---|---|---|")
    with portcv.using("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, im in images.items():
            for P, R in [(8, 1), (8, 2), (16, 2)]:
                for method in ("default", "uniform"):
                    ours = best_ms(lambda: recognize.local_binary_pattern(im, P, R, method=method))
                    theirs = best_ms(lambda: local_binary_pattern(im, P, R, method=method))
                    print(f"| {name} | ({P}, {R}) | {method} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")


def table_4_2() -> None:
    from skimage.feature import local_binary_pattern

    face = np.random.default_rng(0).integers(0, 256, (150, 130), dtype=np.uint8)
    batch = np.random.default_rng(1).integers(0, 256, (64, 150, 130), dtype=np.uint8)
    print("| LBP type | region | length | thesis CPU [ms] | portcv NumPy 1 face [ms] | portcv NumPy per face, batch 64 [ms] "
          "| scikit-image LBP only [ms] |")
    print("|---|---|---|---|---|---|---|")
    thesis = {(8, (11, 13)): 4.25, (8, (18, 21)): 3.85, (8, (26, 30)): 4.01, (16, (18, 21)): 7.45, (16, (26, 30)): 7.86}
    with portcv.using("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (P, region), ms in thesis.items():
            one = best_ms(lambda: recognize.lbp_histograms(face, P=P, region_size=region))
            many = best_ms(lambda: recognize.lbp_histograms(batch, P=P, region_size=region), repeat=3) / len(batch)
            sk = best_ms(lambda: local_binary_pattern(face, P, 2, method="nri_uniform"))
            length = recognize.lbp_histograms(face, P=P, region_size=region).size
            print(f"| ({P}, 2)u2 | {region[0]}x{region[1]} | {length} | {ms} | {one:.2f} | {many:.2f} | {sk:.2f} |")


def table_4_3(sizes=(1000, 5000)) -> None:
    """1-NN of one query against N synthetic histograms from real ones (asv's gallery)."""
    from asv_bench.benchmarks import bench_recognize as bench

    print("| N | d | thesis GPU [ms] | thesis ANN (CPU) [ms] | portcv NumPy exact [ms] | NumPy float64 dense [ms] |")
    print("|---|---|---|---|---|---|")
    ann = {(1000, 2891): 2.55, (1000, 8496): 7.47, (1000, 11907): 10.46,
           (5000, 2891): 12.72, (5000, 8496): 37.32, (5000, 11907): 52.32}
    def median_ms(op) -> float:  # bench.median_ms's calls, within the 1 s this table always took
        return op.median_s(min_calls=3, max_calls=50, budget_s=1.0) * 1e3

    for n in sizes:
        for d in (2891, 8496, 11907):
            ours = median_ms(bench.nearest_operation("numpy", n, d))
            dense = median_ms(bench.nearest_operation(bench.NUMPY_DENSE, n, d))
            print(f"| {n} | {d} | {bench.THESIS_4_3_GPU_MS[(n, d)]} | {ann[(n, d)]} | {ours:.0f} | {dense:.0f} |")


def accuracy() -> None:
    import cv2

    faces, labels = portcv.data.csu_faces()
    n = len(faces)

    def leave_one_out(**kw) -> int:
        weights = kw.pop("weights", None)
        H = recognize.lbp_histograms(faces, **kw)
        idx, _ = recognize.nearest(H, H, k=2, weights=weights, max_count=18 * 21)
        idx = portcv.to_numpy(idx)
        best = np.where(idx[:, 0] == np.arange(n), idx[:, 1], idx[:, 0])
        return int((labels[best] == labels).sum())

    rows = [
        ("portcv (8,2)u2, 7x7 regions 18x21, Ahonen weights", leave_one_out(weights=recognize.AHONEN_WEIGHTS_7X7)),
        ("portcv (8,2)u2, 7x7, unweighted", leave_one_out()),
        ("portcv (16,2)u2, 7x7, Ahonen weights", leave_one_out(P=16, weights=recognize.AHONEN_WEIGHTS_7X7)),
        ("portcv (16,2)u2, 7x7, unweighted", leave_one_out(P=16)),
        ("portcv parity: (8,2) default codes, grid 7x7, unweighted", leave_one_out(method="default", grid=(7, 7))),
    ]
    hits = 0
    for i in range(n):
        keep = np.arange(n) != i
        lbph = cv2.face.LBPHFaceRecognizer_create(2, 8, 7, 7)
        lbph.train(list(faces[keep]), labels[keep])
        hits += int(lbph.predict(faces[i])[0] == labels[i])
    rows.append(("OpenCV cv2.face LBPH (radius 2, 8 neighbours, grid 7x7)", hits))
    print(f"| method | leave-one-out rank-1 of {n} |")
    print("|---|---|")
    for name, h in rows:
        print(f"| {name} | {h}/{n} ({100 * h / n:.1f} %) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--only", choices=["ratio", "4.2", "4.3", "accuracy"])
    args = parser.parse_args()
    if args.only:
        {"ratio": lbp_ratio, "4.2": table_4_2, "4.3": table_4_3, "accuracy": accuracy}[args.only]()
        return
    lbp_ratio()
    print()
    table_4_2()
    print()
    table_4_3()
    if not args.skip_accuracy:
        print()
        accuracy()


if __name__ == "__main__":
    main()
