"""Multi-GPU runs of portcv: ``map_videos`` and ``filter_store`` over 1..N GPU workers, and the MCT
detector split by pyramid levels over devices. Needs a machine with several GPUs.

Three parts, each best run as its own process (no CUDA context may exist in the process that
starts the GPU workers; the MCT part makes one):

* ``videos``: ``map_videos(motion(...))`` over ``--videos`` 1080p clips written with PyAV, on
  ``local_cluster(backend, devices=<first n GPUs>)`` for each n in ``--gpus``; speedup and
  efficiency against one GPU and the workers' busy share of ``n x wall`` (the task stream);
* ``image``: ``filter_store`` (Gaussian k=7, then ``edges.detect``) of a ``--image``-square
  uint8 zarr store (uncompressed input; 147456^2 is 21.7 gigapixels) with ``--tile`` tasks; GB/s
  per GPU against the host-to-device copy rate measured on GPU 0 (pinned and pageable);
* ``mct``: ``MCTDetector.detect(frame, devices=[0..n-1])`` at 1080p and 4K in one process: the
  median time per call against one GPU, and the boxes compared with one GPU's.

Every part runs for each backend of ``--backends`` (``cupy``, ``jax``). Each timed figure is the
minimum of ``--repeat`` runs after a warm-up on a few inputs; the load average is recorded.

    python -m tools.measure multigpu videos --gpus 1,2,4 --json videos.json
    python -m tools.measure multigpu image --gpus 1,2,4 --image 147456 --json image.json
    python -m tools.measure multigpu mct --gpus 1,2,4 --json mct.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import portcv
from tools.measurements.scaleout_bench import CHAIN, SPEC_PARAMS, _commit, best_of, load



def _write_clip(job: tuple) -> str:
    path, frames, width, height, seed = job
    portcv.video.write_video(path, portcv.data.moving_shapes(frames, height, width, seed=seed))
    return path


def write_clips(folder: Path, count: int, frames: int, width: int, height: int) -> list[str]:
    jobs = [(str(folder / f"clip{i:03d}.mp4"), frames, width, height, i) for i in range(count)]
    with ProcessPoolExecutor(max_workers=min(count, os.cpu_count() or 1)) as pool:
        return list(pool.map(_write_clip, jobs))


def _write_rows(job: tuple) -> int:
    import zarr

    path, y0, y1, side, chunk = job
    image = zarr.open_array(path, mode="r+")
    block = portcv.data.synthetic_rgb(chunk, chunk, seed=0)[..., 1]
    rng = np.random.default_rng(y0)
    for y in range(y0, y1, chunk):
        row = np.concatenate([np.roll(block, int(rng.integers(chunk)), axis=1) for _ in range(0, side, chunk)], axis=1)
        image[y:y + chunk, :] = row
    return y1 - y0


def write_image(folder: Path, side: int, chunk: int) -> str:
    """An uncompressed ``side x side`` uint8 zarr store (its bytes on disk are its pixels)."""
    import zarr

    path = str(folder / "scene.zarr")
    zarr.create_array(path, shape=(side, side), chunks=(chunk, chunk), dtype="uint8", compressors=None,
                      overwrite=True)
    rows = list(range(0, side, chunk))
    jobs = [(path, y, min(y + chunk, side), side, chunk) for y in rows]
    with ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        list(pool.map(_write_rows, jobs))
    return path


def over_gpu_counts(args: argparse.Namespace, be: str, once: Any, warm: Any) -> dict:
    """For each GPU count n: a cluster of n GPU workers on backend ``be``, ``warm(client, n)``,
    then the best of ``--repeat`` runs of ``once(client)`` (:func:`scaleout_bench.best_of`)."""
    import portcv.distributed as pdist
    from distributed import Client

    rows = {}
    for n in args.gpu_counts:
        devices = ",".join(str(i) for i in range(n))
        with pdist.local_cluster(be, devices=devices, threads_per_worker=args.threads,
                                 dashboard_address=None) as cluster, Client(cluster) as client:
            warm(client, n)
            rows[n] = best_of(client, lambda: once(client), args.repeat)
            rows[n]["threads_per_worker"] = args.threads
            rows[n]["load"] = load()
        r = rows[n]
        print(f"{be} {n} GPU: {r['wall']:.2f} s, busy {r['busy']:.1f} s over {r['tasks']} tasks", flush=True)
    return rows


def scaled(rows: dict, threads: int) -> dict:
    """Speedup and efficiency against the fewest GPUs, and the busy share: task compute seconds
    over ``n x threads x wall`` (every worker thread's time)."""
    base = rows[min(rows)]["wall"] * min(rows)
    for n, row in rows.items():
        row["speedup"] = base / row["wall"]
        row["efficiency"] = row["speedup"] / n
        row["utilisation"] = row["busy"] / (n * threads * row["wall"])
    return rows


def part_videos(args: argparse.Namespace, folder: Path) -> dict:
    import portcv.distributed as pdist

    width, height = (int(v) for v in args.size.lower().split("x"))
    t0 = time.perf_counter()
    paths = write_clips(folder, args.videos, args.frames, width, height)
    written = time.perf_counter() - t0
    spec = pdist.motion(**SPEC_PARAMS)
    out: dict = {"clips": len(paths), "frames_per_clip": args.frames, "size": args.size,
                 "bytes_on_disk": sum(os.path.getsize(p) for p in paths), "write_s": written}

    def once(client: Any) -> None:
        runs = list(pdist.map_videos(spec, paths, client=client, progress=False))
        bad = [r.error for r in runs if r.error]
        assert not bad, bad

    def warm(client: Any, n: int) -> None:
        list(pdist.map_videos(spec, paths[:4 * n], client=client, progress=False))

    for be in args.backends.split(","):
        rows = over_gpu_counts(args, be, once, warm)
        scaled(rows, args.threads)
        for n, r in rows.items():
            r["frames_per_s"] = args.videos * args.frames / r["wall"]
            print(f"  {be} {n} GPU: speedup {r['speedup']:.2f}x, efficiency {r['efficiency']:.0%}, "
                  f"busy share {r['utilisation']:.0%}, {r['frames_per_s']:.0f} frames/s", flush=True)
        out[be] = rows
    return out


def part_image(args: argparse.Namespace, folder: Path) -> dict:
    import portcv.distributed as pdist

    t0 = time.perf_counter()
    src = write_image(folder, args.image, args.tile)
    written = time.perf_counter() - t0
    pixels = args.image ** 2
    out: dict = {"side": args.image, "gigapixels": pixels / 1e9, "tile": args.tile, "chain": str(CHAIN),
                 "write_s": written}
    (folder / "warm").mkdir()
    warm_src = write_image(folder / "warm", 2 * args.tile, args.tile)  # first calls, compilation

    def once(client: Any) -> None:
        pdist.filter_store(src, str(folder / "out.zarr"), CHAIN, tile=args.tile, client=client)

    def warm(client: Any, n: int) -> None:
        pdist.filter_store(warm_src, str(folder / "warm.zarr"), CHAIN, tile=args.tile, client=client)

    for be in args.backends.split(","):
        rows = over_gpu_counts(args, be, once, warm)
        for n, r in rows.items():
            r["gb_per_s_per_gpu"] = pixels / 1e9 / r["wall"] / n
            print(f"image {be} {n} GPU: {r['gb_per_s_per_gpu']:.2f} GB/s per GPU read (and as much written)",
                  flush=True)
        scaled(rows, args.threads)
        for n, r in rows.items():
            print(f"  {be} {n} GPU: speedup {r['speedup']:.2f}x, efficiency {r['efficiency']:.0%}, "
                  f"busy share {r['utilisation']:.0%}", flush=True)
        out[be] = rows
    return out


def h2d_gbs() -> dict:
    """Host-to-device copy rate of GPU 0, pinned and pageable (256 MiB, best of 5)."""
    import cupy
    import cupyx

    size = 256 << 20
    pinned = cupyx.empty_pinned(size, np.uint8)
    pinned[:] = 1
    pageable = np.ones(size, np.uint8)
    dev = cupy.empty(size, np.uint8)
    rates = {}
    for name, host in (("pinned", pinned), ("pageable", pageable)):
        best = float("inf")
        for _ in range(5):
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            dev.set(host)
            cupy.cuda.Device().synchronize()
            best = min(best, time.perf_counter() - t0)
        rates[name] = size / best / 1e9
    return rates


def part_mct(args: argparse.Namespace, folder: Path) -> dict:
    from skimage import data

    det = portcv.detect.MCTDetector.default()
    # A mosaic of the astronaut at 540 pixels a side: faces at about their size in the photo.
    tile = portcv.to_numpy(portcv.transform.resize(data.astronaut()[..., 1], size=(540, 540)))
    out: dict = {}
    for be in args.backends.split(","):
        out[be] = {}
        with portcv.using(be):
            for name, (w, h) in (("1080p", (1920, 1080)), ("4K", (3840, 2160))):
                frame = np.ascontiguousarray(np.tile(tile, (h // 540, -(-w // 540)))[:, :w])
                row: dict = {}
                reference = None
                for n in args.gpu_counts:
                    devices = None if n == 1 else list(range(n))
                    call = lambda: det.detect(frame, scale_factor=1.1, min_neighbors=3, devices=devices)  # noqa: E731
                    for _ in range(3):
                        result = call()
                    times = []
                    for _ in range(args.calls):
                        t0 = time.perf_counter()
                        result = call()
                        times.append(time.perf_counter() - t0)
                    if reference is None:
                        reference = result
                    same = all(np.array_equal(a, b) for a, b in zip(reference, result))
                    row[n] = {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
                              "boxes": int(result[0].shape[0]), "same_boxes_as_1_gpu": same}
                    print(f"mct {be} {name} {n} GPU: median {row[n]['median_ms']:.2f} ms, min {row[n]['min_ms']:.2f} "
                          f"ms, {row[n]['boxes']} boxes, same as 1 GPU: {same}", flush=True)
                for n, r in row.items():
                    r["speedup"] = row[1]["median_ms"] / r["median_ms"]
                out[be][name] = row
    if "cupy" in args.backends:
        out["h2d_gbs_gpu0"] = h2d_gbs()
        print(f"host-to-device GB/s on GPU 0: {out['h2d_gbs_gpu0']}", flush=True)
    return out


PARTS = {"videos": part_videos, "image": part_image, "mct": part_mct}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("part", choices=sorted(PARTS))
    p.add_argument("--gpus", default="1,2", help="GPU counts (default 1,2)")
    p.add_argument("--backends", default="cupy,jax", help="backends (default cupy,jax)")
    p.add_argument("--videos", type=int, default=64, help="clips (default 64)")
    p.add_argument("--frames", type=int, default=48, help="frames per clip (default 48)")
    p.add_argument("--size", default="1920x1080", help="clip size WxH (default 1920x1080)")
    p.add_argument("--image", type=int, default=147456, help="side of the square image (default 147456: 21.7 GP)")
    p.add_argument("--tile", type=int, default=8192, help="filter_store tile and chunk (default 8192)")
    p.add_argument("--threads", type=int, default=2, help="threads per GPU worker (default 2, local_cluster's)")
    p.add_argument("--calls", type=int, default=20, help="MCT calls per figure (default 20)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per figure after a warm-up (default 1)")
    p.add_argument("--dir", default=None, help="scratch folder (default: a new temporary one)")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    args.gpu_counts = [int(v) for v in args.gpus.split(",") if v]
    folder = Path(tempfile.mkdtemp(prefix="portcv-multigpu-", dir=args.dir))
    report = {"part": args.part, "load_before": load(), "cores": os.cpu_count(), "commit": _commit(),
              "gpus": args.gpu_counts, "backends": args.backends}
    report["figures"] = PARTS[args.part](args, folder)
    report["load_after"] = load()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
