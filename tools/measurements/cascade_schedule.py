"""The cascade-scheduling experiments of issue 7 (the scheduling paper's Table 1, docs/detect.md).

    python -m tools.measure cascade-schedule [--backends cupy,jax,opencv] [--sizes 640x480,1280x960,1920x1080]
                                     [--splits 1,2,3,5] [--cpu-splits 5,10] [--repeat 5] [--json OUT.json]
                                     [--deep 4,6,8 --lanes 8,32] [--phases]

Three ways to schedule the same cascade over every window of every scale (all pyramid levels
packed in one image, one integral image), each giving the same candidates and grouped boxes:

(a) depth-first: one launch runs every stage on every grid window (a thread stops at its
    rejecting stage); OpenCV's stage-0 skip rule is applied afterwards to the statuses, so
    the candidates are exactly the breadth-first ones;
(b) breadth-first: stages ``[0, s)`` on every window, the skip rule and a prefix-sum compaction
    into a dense plan, stages ``[s, S)`` on the plan (``CascadeDetector.detect(split_stage=s)``,
    the library's own path: no host round trip until the candidates);
(c) CPU/GPU split (the scheduling paper's structure): the GPU runs stages ``[0, s)`` and the
    compaction, one device -> host copy of the plan, and the host (NumPy) finishes stages
    ``[s, S)`` on its own pyramid and integral images, built while the GPU works.

Frames: gray scenes of 640x480, 1280x960 and 1920x1080 made from scikit-image's astronaut
(tiled, mirrored, with faces pasted at three sizes; deterministic). Times: the median of
``--repeat`` runs after a warm-up, synchronized wall time (what a caller waits) and, on CuPy,
the GPU span between CUDA events. JAX (``detect``, its default split 1) and cv2 (``detectMultiScale2``) are
references. Every variant's grouped boxes are checked against (b) with split 2 and against cv2.

Run it on the CUDA machine (under 90 s with the defaults). Without CuPy the GPU variants are
skipped with a message: ``--backends numpy --sizes 640x480 --repeat 1`` is a CPU smoke test
that runs (a) and (b) on NumPy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np

import portcv
from portcv._timing import timed
from portcv.detect import GROUP_EPS, CascadeDetector
from portcv.detect._cascade._cascade import evaluate_kernel, integrals_kernel, plan_evaluate_kernel
from portcv.detect._cascade._scan import candidates_to_rects, cascade_arrays, default_split, scan_geometry
from portcv.detect._scan._group import CANDIDATE_LIMIT, clip_rects, group_rectangles_impl
from portcv.detect._scan._kernels import compact_kernel, pyramid_kernel

SIZES = {"640x480": (480, 640), "1280x960": (960, 1280), "1920x1080": (1080, 1920)}
CASCADE = "haarcascade_frontalface_default.xml"
#: Plan entries read back in (c)'s one device -> host copy (more: a second copy, counted in the time).
PLAN_READ = 1 << 18


# --------------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------------
def face_scene(size: str) -> np.ndarray:
    """A gray ``size`` frame: the astronaut tiled (every other tile mirrored) plus faces pasted at
    1/8, 1/5 and 1/3 of the height. Deterministic (portcv's own resize on NumPy)."""
    h, w = SIZES[size]
    with portcv.using("numpy"):
        try:
            from skimage import data

            rgb = data.astronaut()
        except ImportError:  # pragma: no cover - still deterministic, fewer late-stage windows
            rgb = portcv.data.synthetic_rgb(512, 512, seed=0)
        gray = portcv.to_numpy(portcv.color.rgb_to_gray(rgb))
        tile = portcv.to_numpy(portcv.transform.resize(gray, size=(h, h)))
        tiles = [tile if i % 2 == 0 else tile[:, ::-1] for i in range(w // h + 1)]
        frame = np.ascontiguousarray(np.concatenate(tiles, axis=1)[:, :w])
        face = gray[30:210, 140:320]
        for i, frac in enumerate((1 / 8, 1 / 5, 1 / 3)):
            side = int(h * frac)
            patch = portcv.to_numpy(portcv.transform.resize(face, size=(side, side)))
            x = int((w - side) * (0.15 + 0.3 * i))
            y = int((h - side) * (0.8 - 0.35 * i))
            frame[y : y + side, x : x + side] = patch
    return frame


# --------------------------------------------------------------------------------------------
# The variants (on the active portcv backend)
# --------------------------------------------------------------------------------------------
class Scan:
    """The shared front of every variant: cached geometry, packed pyramid, integral images."""

    def __init__(self, det: CascadeDetector, gray_host: np.ndarray, params: dict) -> None:
        self.det, self.c = det, det.cascade
        self.params = params
        h, w = gray_host.shape
        self.geo = scan_geometry(w, h, self.c.window, params["scale_factor"], params["min_size"], (w, h))
        self.grid = self.geo.grid
        self.static = dict(feature_type=self.c.feature_type, window=self.c.window, has_tilted=self.c.has_tilted,
                           stages=self.c.stage_layout())

    def device(self, gray: Any) -> tuple:
        b = portcv.backend()
        xmap, ymap, xtab, ytab, windows, row_end = self.geo.on(b)
        arrays = cascade_arrays(self.c, self.det._device)
        packed = pyramid_kernel(gray, xmap, ymap, xtab, ytab, shape=self.geo.packed_shape)
        ints = integrals_kernel(packed, tilted=self.c.has_tilted)
        return ints, windows, row_end, arrays

    def finish(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidate window indices -> grouped, clipped boxes (as ``detect``)."""
        rects = candidates_to_rects(self.grid, np.asarray(idx, np.int64), self.c.window)
        mn = self.params["min_neighbors"]
        if mn == 0:
            neighbours = np.ones(rects.shape[0], np.int32)
        else:
            rects, neighbours = group_rectangles_impl(rects, mn, GROUP_EPS)
        return clip_rects(rects, neighbours, self.geo.width, self.geo.height)


def depth_first(scan: Scan, gray: Any) -> tuple[np.ndarray, np.ndarray]:
    """(a) One launch of every stage on every window; the skip rule afterwards."""
    (s, q, t), windows, row_end, arrays = scan.device(gray)
    S = scan.c.n_stages
    status = evaluate_kernel(s, q, t, windows, *arrays, stage_begin=0, stage_end=S, check_variance=True,
                             **scan.static)
    plan, count = compact_kernel(status, row_end, capacity=scan.grid.size)
    xp = portcv.backend().xp
    out = portcv.to_numpy(xp.concat([xp.reshape(count, (1,)), plan[:CANDIDATE_LIMIT]]))
    n = int(out[0])
    idx = out[1 : 1 + n] if n <= CANDIDATE_LIMIT else portcv.to_numpy(plan[:n])
    return scan.finish(idx)


def breadth_first(scan: Scan, gray: Any, split: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(b) The library's path (``split`` None: the backend's default)."""
    p = scan.params
    return scan.det.detect(gray, scale_factor=p["scale_factor"], min_neighbors=p["min_neighbors"],
                           min_size=p["min_size"], split_stage=split)


def cpu_gpu_split(scan: Scan, gray: Any, gray_host: np.ndarray, split: int) -> tuple[np.ndarray, np.ndarray]:
    """(c) GPU: stages [0, split) + compaction; one copy of the plan; host: stages [split, S)."""
    from portcv.detect._cascade._cascade import _evaluate_numpy

    (s, q, t), windows, row_end, arrays = scan.device(gray)
    status = evaluate_kernel(s, q, t, windows, *arrays, stage_begin=0, stage_end=split, check_variance=True,
                             **scan.static)
    plan, count = compact_kernel(status, row_end, capacity=scan.grid.size)
    xp = portcv.backend().xp
    head = xp.concat([xp.reshape(count, (1,)), plan[:PLAN_READ]])
    # While the GPU works (the launches above are asynchronous), the host builds its own pyramid
    # and integral images -- the paper's CPU prepares the scales itself.
    with portcv.using("numpy"):
        hs, hq, ht = integrals_kernel(pyramid_kernel(gray_host, *scan.geo.maps, shape=scan.geo.packed_shape),
                                      tilted=scan.c.has_tilted)
    out = portcv.to_numpy(head)  # the one device -> host copy (it waits for the GPU)
    n = int(out[0])
    idx = out[1 : 1 + n] if n <= PLAN_READ else portcv.to_numpy(plan[:n])
    if split < scan.c.n_stages and n:
        host_arrays = scan.c.arrays()
        final = _evaluate_numpy(hs, hq, ht, scan.grid.windows[idx], *host_arrays, stage_begin=split,
                                stage_end=scan.c.n_stages, check_variance=False, **scan.static)
        idx = idx[final == 1]
    return scan.finish(idx)


def with_deep(stage: int, lanes: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with the CuPy plan launch's deep stage and lanes set (see _cascade_cuda)."""
    from portcv.detect import _cascade_cuda as cc

    saved = cc.DEEP_STAGE, cc.DEEP_LANES
    cc.DEEP_STAGE, cc.DEEP_LANES = stage, lanes
    try:
        return fn(*args)
    finally:
        cc.DEEP_STAGE, cc.DEEP_LANES = saved


def print_phases(size: str, scan: Scan, gray: Any, split: int, repeat: int = 20) -> None:
    """GPU time of each step of (b) (CUDA events between the launches, medians)."""
    import cupy

    from portcv.detect._cascade._cascade import candidates_kernel

    b = portcv.backend()
    xmap, ymap, xtab, ytab, windows, row_end = scan.geo.on(b)
    arrays = cascade_arrays(scan.c, scan.det._device)
    S = scan.c.n_stages
    times: dict[str, list[float]] = {}
    for it in range(repeat + 2):
        ev = [cupy.cuda.Event()]
        ev[0].record()
        names = []

        def mark(name: str) -> None:
            e = cupy.cuda.Event()
            e.record()
            ev.append(e)
            names.append(name)

        packed = pyramid_kernel(gray, xmap, ymap, xtab, ytab, shape=scan.geo.packed_shape)
        mark("pyramid")
        s, q, t = integrals_kernel(packed, tilted=scan.c.has_tilted)
        mark("integrals")
        status = evaluate_kernel(s, q, t, windows, *arrays, stage_begin=0, stage_end=split, check_variance=True,
                                 **scan.static)
        mark(f"stages [0, {split}) on every window")
        plan, count = compact_kernel(status, row_end, capacity=scan.grid.size)
        mark("skip rule + compaction")
        final = plan_evaluate_kernel(s, q, t, windows, plan, count, *arrays, stage_begin=split, stage_end=S,
                                     check_variance=False, **scan.static)
        mark(f"stages [{split}, {S}) on the plan")
        candidates_kernel(plan, count, final, limit=CANDIDATE_LIMIT)
        mark("candidates")
        ev[-1].synchronize()
        if it >= 2:
            for i, name in enumerate(names):
                times.setdefault(name, []).append(cupy.cuda.get_elapsed_time(ev[i], ev[i + 1]))
    total = sum(statistics.median(v) for v in times.values())
    print(f"\n{size}: GPU time per step of (b) s={split} (median of {repeat}), {total:.3f} ms in all")
    for name, v in times.items():
        print(f"  {name:40s} {statistics.median(v):8.3f} ms")


def video_rows(size: str, det: CascadeDetector, gray_host: np.ndarray, params: dict, n: int, backends: list[str],
               reference: list | None) -> list[dict]:
    """``detect_video`` over ``n`` host frames (the scene shifted by t pixels: every frame
    differs) on CuPy (streams on and off) and JAX; the rate is its ``statistics()['throughput']``
    after one warm-up pass, and frame 0's boxes are checked against (b)."""
    from portcv.detect import detect_video

    frames = [np.ascontiguousarray(np.roll(gray_host, t, axis=1)) for t in range(n)]
    runs = [("cupy", True), ("cupy", False)] if "cupy" in backends else []
    runs += [("jax", False)] if "jax" in backends else []
    out = []
    for backend, streams in runs:
        with portcv.using(backend):
            for _ in range(2):  # the second pass is timed (the first compiles / learns capacities)
                run = detect_video(det, frames, streams=streams, **params)
                results = list(run)
            r = row(size, f"detect_video ({'streams' if streams else 'sequential'})", backend, None,
                    1e3 / run.statistics()["throughput"], None, len(results[0][1]))
            r["fps"] = round(run.statistics()["throughput"], 1)
            r["same_boxes"] = None if reference is None else boxes_key(results[0][1:]) == reference
            out.append(r)
    return out


def plan_counts(scan: Scan, gray: Any, splits: list[int]) -> dict[int, int]:
    """Windows left in the plan after the skip rule and stages [0, s) (not timed)."""
    (s, q, t), windows, row_end, arrays = scan.device(gray)
    out = {}
    for split in splits:
        status = evaluate_kernel(s, q, t, windows, *arrays, stage_begin=0, stage_end=split, check_variance=True,
                                 **scan.static)
        _, count = compact_kernel(status, row_end, capacity=scan.grid.size)
        out[split] = int(portcv.to_numpy(count))
    return out


# --------------------------------------------------------------------------------------------
def boxes_key(result: tuple[np.ndarray, np.ndarray]) -> list:
    boxes, neighbours = result
    return sorted(map(tuple, np.c_[np.asarray(boxes).reshape(-1, 4), np.asarray(neighbours).reshape(-1)].tolist()))


def available(name: str) -> str | None:
    """None when backend ``name`` can run here, else why not."""
    if name == "opencv":
        try:
            import cv2  # noqa: F401
        except ImportError as exc:
            return str(exc)
        return None
    try:
        portcv.backends.get(name).load()
    except Exception as exc:  # BackendUnavailableError and friends
        return str(exc).splitlines()[0]
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="cupy,jax,opencv",
                    help="comma-separated: cupy (variants a, b, c), jax (reference), opencv (reference), "
                         "numpy (variants a and b on the host: slow, a smoke test)")
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--splits", default="1,2,3,5", help="breadth-first split stages (b)")
    ap.add_argument("--cpu-splits", default="5,10,15", help="GPU stages before the host takes over (c); the paper: 10-15")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scale-factor", type=float, default=1.1)
    ap.add_argument("--min-neighbors", type=int, default=5)
    ap.add_argument("--min-size", type=int, default=30)
    ap.add_argument("--cascade", default=CASCADE)
    ap.add_argument("--deep", default="",
                    help="CuPy: also run (b) s=2 with the plan's stages from k on at --lanes threads per window, "
                         "for each k in this list (k >= the stage count: one thread per window throughout)")
    ap.add_argument("--lanes", default="32", help="threads per window for --deep (powers of two up to 32)")
    ap.add_argument("--phases", action="store_true", help="CuPy: print the GPU time of each step of (b) s=2")
    ap.add_argument("--video", type=int, default=0,
                    help="also run detect_video over this many host frames per size (CuPy with and without "
                         "streams, JAX) and report frames per second")
    ap.add_argument("--json", help="write the rows as JSON to this file")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    backends = []
    for name in wanted:
        why = available(name)
        if why is None:
            backends.append(name)
        else:
            print(f"skipping {name}: {why}", file=sys.stderr)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            ap.error(f"--sizes: unknown size {s!r}; choose from {', '.join(SIZES)}")
    splits = [int(v) for v in args.splits.split(",") if v.strip()]
    cpu_splits = [int(v) for v in args.cpu_splits.split(",") if v.strip()]
    params = dict(scale_factor=args.scale_factor, min_neighbors=args.min_neighbors,
                  min_size=(args.min_size, args.min_size))
    det = CascadeDetector.from_opencv(args.cascade)
    S = det.cascade.n_stages
    splits = [s for s in splits if 1 <= s <= S]
    cpu_splits = [s for s in cpu_splits if 1 <= s <= S]
    # The structure variants run on the GPU when there is one, else (smoke test) on NumPy.
    structure = "cupy" if "cupy" in backends else ("numpy" if "numpy" in backends else None)
    if "cupy" not in backends:
        print("no CuPy: the GPU variants are skipped (c needs a GPU; a and b run on NumPy only with "
              "--backends numpy)", file=sys.stderr)

    rows: list[dict] = []
    for size in sizes:
        gray_host = face_scene(size)
        scan = Scan(det, gray_host, params)
        reference: list | None = None
        cv2_key: list | None = None
        if "opencv" in backends:
            import cv2

            cc = cv2.CascadeClassifier(det_path(args.cascade))
            res, wall, _ = timed(lambda: cc.detectMultiScale2(gray_host, scaleFactor=params["scale_factor"],
                                                              minNeighbors=params["min_neighbors"],
                                                              minSize=params["min_size"]),
                                 max(1, min(args.repeat, 3)), False)
            cv2_key = boxes_key(res)
            rows.append(row(size, "cv2 detectMultiScale2", "opencv", None, wall, None, len(cv2_key)))
            rows[-1]["threads"] = cv2.getNumThreads()
        if structure is not None:
            with portcv.using(structure):
                events = structure == "cupy"
                gray = portcv.asarray(gray_host)
                counts = plan_counts(scan, gray, sorted(set(splits + cpu_splits)))
                variants: list[tuple[str, int | None, Callable[[], Any]]] = []
                for split in splits:
                    variants.append(("(b) breadth-first", split, lambda s=split: breadth_first(scan, gray, s)))
                variants.append(("(a) depth-first", None, lambda: depth_first(scan, gray)))
                if structure == "cupy":
                    for split in cpu_splits:
                        variants.append(("(c) CPU/GPU split", split,
                                         lambda s=split: cpu_gpu_split(scan, gray, gray_host, s)))
                default = 2 if 2 in splits else (splits[0] if splits else None)
                if default is not None:
                    reference = boxes_key(breadth_first(scan, gray, default))
                deep_runs = []
                if structure == "cupy":
                    for k in [int(v) for v in args.deep.split(",") if v.strip()]:
                        for lanes in [int(v) for v in args.lanes.split(",") if v.strip()]:
                            deep_runs.append((k, lanes))
                            variants.append((f"(b) deep from {k} x{lanes}", 2,
                                             lambda k=k, lanes=lanes: with_deep(k, lanes, breadth_first, scan, gray, 2)))
                    if args.phases:
                        print_phases(size, scan, gray, 2)
                for name, split, fn in variants:
                    # (c) spends most of its time on the host: fewer runs keep the study short
                    repeat = min(args.repeat, 3) if name.startswith("(c)") else args.repeat
                    res, wall, gpu = timed(fn, repeat, events)
                    key = boxes_key(res)
                    if reference is None:
                        reference = key
                    r = row(size, name, structure, split, wall, gpu, len(key))
                    r["plan"] = counts.get(split) if split is not None else None
                    r["same_boxes"] = key == reference
                    r["equal_cv2"] = None if cv2_key is None else key == cv2_key
                    rows.append(r)
        if "jax" in backends:
            with portcv.using("jax"):
                gray = portcv.asarray(gray_host)
                breadth_first(scan, gray, None)  # learns the plan capacities (and compiles them)
                res, wall, _ = timed(lambda: breadth_first(scan, gray, None), max(1, min(args.repeat, 3)), False)
                key = boxes_key(res)
                r = row(size, "JAX detect", "jax", default_split(portcv.backends.get("jax")), wall, None, len(key))
                r["same_boxes"] = None if reference is None else key == reference
                r["equal_cv2"] = None if cv2_key is None else key == cv2_key
                rows.append(r)
        if args.video:
            rows.extend(video_rows(size, det, gray_host, params, args.video, backends, reference))
        for r in rows:
            if r["size"] == size:
                r["windows"] = scan.grid.size if scan.grid is not None else 0
        if cv2_key is not None:
            for r in rows:
                if r["size"] == size and r["backend"] == "opencv":
                    r["same_boxes"] = None if reference is None else cv2_key == reference
                    r["equal_cv2"] = True

    elapsed = time.perf_counter() - t_start
    print_table(rows, params, args.cascade, S, elapsed)
    if args.json:
        meta = dict(cascade=args.cascade, stages=S, params={k: list(v) if isinstance(v, tuple) else v
                                                            for k, v in params.items()},
                    repeat=args.repeat, seconds=round(elapsed, 1), device=device_name(backends))
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
        print(f"\nwrote {args.json}")
    bad = [r for r in rows if r.get("same_boxes") is False]
    if bad:
        print(f"\n{len(bad)} variant(s) gave different boxes: {[(r['size'], r['variant'], r['split']) for r in bad]}",
              file=sys.stderr)
        return 1
    return 0


def det_path(name: str) -> str:
    from portcv.detect._cascade._detector import resolve_cascade_path

    return resolve_cascade_path(name)


def row(size: str, variant: str, backend: str, split: int | None, wall: float, gpu: float | None,
        boxes: int) -> dict:
    return dict(size=size, variant=variant, backend=backend, split=split, wall_ms=round(wall, 3),
                gpu_ms=None if gpu is None else round(gpu, 3), boxes=boxes)


def device_name(backends: list[str]) -> str:
    if "cupy" in backends:
        return portcv.backends.get("cupy").device
    import platform

    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} CPUs)"


def print_table(rows: list[dict], params: dict, cascade: str, stages: int, elapsed: float) -> None:
    print(f"\n{cascade} ({stages} stages), scale {params['scale_factor']}, min_neighbors "
          f"{params['min_neighbors']}, min_size {params['min_size']}; median times; {elapsed:.0f} s in all\n")
    print("| frame | variant | backend | split s | windows | plan after s | wall ms | GPU ms | boxes | "
          "same as (b) s=2 | = cv2 |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")

    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "**NO**"
        if isinstance(v, float):
            return f"{v:.2f}" if v < 100 else f"{v:.0f}"
        return str(v)

    for r in rows:
        print("| " + " | ".join(fmt(r.get(k)) for k in ("size", "variant", "backend", "split", "windows", "plan",
                                                          "wall_ms", "gpu_ms", "boxes", "same_boxes", "equal_cv2"))
              + " |")


if __name__ == "__main__":
    sys.exit(main())
