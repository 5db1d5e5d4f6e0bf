"""Scaling of portcv.distributed over 1, 2, ... CPU workers, and the host side of N GPU workers.

Strong scaling on the same code path: ``E(n) = T(1 worker) / (n T(n workers))``, decomposed as
``E ~ U / S`` with ``U`` the workers' busy share of ``n x wall`` (from the scheduler's task
stream: scheduling overhead and imbalance) and ``S`` the slowdown of the mean task at ``n``
workers against 1 (contention: memory bandwidth, decode CPU). Two workloads:

* many videos: ``map_videos(motion(...))`` over ``--videos`` clips (one task per file);
* a huge image: ``filter_store`` (Gaussian k=7 then ``edges.detect``) of a ``--image``-square zarr
  store, one task per ``--tile``.

Each worker gets one core (``PORTCV_NUMPY_THREADS=1``: the NumPy overrides' thread pool would
otherwise spread one worker over every core). Also: the cost of distribution (in-process serial
time, with the NumPy pool over every core, / 1-worker time) and the scheduler's
overhead per task (a no-op task's wall share, and ``(n wall - busy) / tasks`` of the real runs).
Each figure is the minimum of ``--repeat`` runs after a warm-up run; the load average of the
machine is recorded beside it (``uptime``), since a shared machine's numbers are upper bounds.

``--ceiling``: the same ``filter_store`` tasks (read the halo, run the chain, write the core) in
``n`` plain processes of one core each, no scheduler: the slowdown of a task beside ``n - 1``
others (``S`` of the hardware and the store's codec alone) and so the speedup this machine allows
any scheduler, ``n / S``.

``--predicted-gpu N,...``: on a one-GPU machine, the host side of N GPU workers measured for real
with each GPU section replaced by its measured GPU time (``time.sleep``, which releases the GIL):
CPU decode, disk, scheduler and serialization are real, the devices are ideal. The per-frame GPU
time is measured here with CuPy (``--gpu-ms-per-frame`` gives it by hand). Labelled **predicted
(1-GPU emulation)**: it cannot see contention between real GPUs on the PCIe switch or in host
memory; the real multi-GPU figure belongs to a multi-GPU machine.

    python -m tools.measure scaleout --workers 1,2 --json scaleout.json --plot docs/img/scaleout.png
    python -m tools.measure scaleout --predicted-gpu 2,4,8 --workers 1   # on the H100 machine
    python -m tools.measure scaleout --workloads image --ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import portcv
import portcv.distributed as pdist

SPEC_PARAMS = dict(t_low=70, t_high=80, beta=4, grid=(6, 10))
# A Gaussian then an edge detector: tiles of 2048^2 take about 0.3 s on NumPy (the scheduler's
# few ms per task stay small beside that, as for real chains).
CHAIN = [("filters.gaussian_blur", {"ksize": 7, "sigma": 0}), ("edges.detect", {"t_low": 40, "t_high": 80})]


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return f"loadavg {os.getloadavg()}"


def write_clips(folder: Path, count: int, frames: int, size: tuple[int, int]) -> list[str]:
    width, height = size
    paths = []
    for i in range(count):
        path = folder / f"clip{i:03d}.mp4"
        portcv.video.write_video(path, portcv.data.moving_shapes(frames, height, width, seed=i))
        paths.append(str(path))
    return paths


def write_image(folder: Path, side: int, chunk: int) -> str:
    import zarr

    path = folder / "scene.zarr"
    image = zarr.create_array(str(path), shape=(side, side), chunks=(chunk, chunk), dtype="uint8", overwrite=True)
    block = portcv.data.synthetic_rgb(chunk, chunk, seed=0)[..., 1]
    rng = np.random.default_rng(0)
    for y in range(0, side, chunk):
        for x in range(0, side, chunk):
            image[y:y + chunk, x:x + chunk] = np.roll(block, int(rng.integers(chunk)), axis=1)
    return str(path)


def _tile_jobs(inputs: dict) -> list[tuple]:
    """filter_store's tasks for the image workload, as filter_store makes them."""
    import zarr

    from portcv.distributed._ops import chain_halo, resolve_chain
    from portcv.distributed._tiles import store_tiles

    stages = resolve_chain(inputs["chain"], {})
    depth = chain_halo(stages)
    src = zarr.open_array(inputs["image"], mode="r")
    out = inputs["out"] + "-ceiling"
    zarr.create_array(out, shape=src.shape, chunks=src.chunks, dtype="uint8", overwrite=True, fill_value=0)
    _, cores = store_tiles(src.shape, src.chunks, depth, inputs["tile"])
    return [(inputs["image"], out, stages, False, False, depth, "numpy", core, "error") for core in cores]


_BARRIER: Any = None  # set in each --ceiling process by _one_core


def _one_core(barrier: Any) -> None:
    os.environ["PORTCV_NUMPY_THREADS"] = "1"
    global _BARRIER
    _BARRIER = barrier


def _run_share(jobs: list[tuple]) -> float:
    """Seconds per task of ``jobs`` after one warm-up task, started with the other processes."""
    from portcv.distributed._tiles import _store_tile

    _store_tile(jobs[0])
    _BARRIER.wait(timeout=120)  # every share on its own process, timed together
    t0 = time.perf_counter()
    for job in jobs:
        _store_tile(job)
    return (time.perf_counter() - t0) / len(jobs)


def ceiling(inputs: dict, counts: list[int], repeat: int) -> dict[int, float]:
    """Mean seconds per filter_store task with ``n`` plain processes sharing the tiles (best of ``repeat``)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    jobs = _tile_jobs(inputs)
    spawn = mp.get_context("spawn")
    per_task = {}
    for n in counts:
        if n > len(jobs):
            raise SystemExit(f"--ceiling: {n} processes but only {len(jobs)} tiles (use a smaller --tile)")
        barrier = spawn.Barrier(n)
        with ProcessPoolExecutor(n, mp_context=spawn, initializer=_one_core, initargs=(barrier,)) as pool:
            runs = [statistics.mean(pool.map(_run_share, [jobs[i::n] for i in range(n)], timeout=600))
                    for _ in range(repeat)]
        per_task[n] = min(runs)
    return per_task


def busy_seconds(stream: list[dict]) -> tuple[float, int, float]:
    """Compute seconds of every task, their count, and the mean compute time per task."""
    spans = [s["stop"] - s["start"] for task in stream for s in task.get("startstops", ())
             if s.get("action") == "compute"]
    return sum(spans), len(spans), (statistics.mean(spans) if spans else 0.0)


def run_workload(client: Any, workload: str, inputs: dict, spec: Any, repeat: int) -> dict:
    def once() -> None:
        if workload == "videos":
            runs = list(pdist.map_videos(spec, inputs["paths"], client=client, progress=False))
            assert all(r.error is None for r in runs), [r.error for r in runs if r.error]
        else:
            pdist.filter_store(inputs["image"], inputs["out"], inputs["chain"], tile=inputs["tile"], client=client)

    once()  # warm-up: imports, first-call costs, file cache
    return best_of(client, once, repeat)


def best_of(client: Any, once: Any, repeat: int) -> dict:
    """The fastest of ``repeat`` runs of ``once()``: its wall time and, from the scheduler's task
    stream, the tasks' compute seconds, their count and mean."""
    from distributed import get_task_stream

    best = None
    for _ in range(repeat):
        with get_task_stream(client) as ts:
            t0 = time.perf_counter()
            once()
            wall = time.perf_counter() - t0
        busy, tasks, mean_task = busy_seconds(ts.data)
        if best is None or wall < best["wall"]:
            best = {"wall": wall, "busy": busy, "tasks": tasks, "mean_task": mean_task}
    return best


def noop_overhead(client: Any, tasks: int = 400) -> float:
    """Wall seconds per no-op task, all workers busy (the scheduler's cost per task)."""
    def noop(i: int) -> int:
        return i

    client.gather(client.map(noop, range(50), pure=False))
    t0 = time.perf_counter()
    client.gather(client.map(noop, range(tasks), pure=False))
    return (time.perf_counter() - t0) / tasks


def in_process(workload: str, inputs: dict, spec: Any) -> float:
    with portcv.using("numpy"):
        t0 = time.perf_counter()
        if workload == "videos":
            list(pdist.map_videos(spec, inputs["paths"], client=None, progress=False))
        else:
            pdist.filter_store(inputs["image"], inputs["out"], inputs["chain"], tile=inputs["tile"], client=None)
        return time.perf_counter() - t0


class ReplayedGPU:
    """A spec whose host side is real (the worker decodes every frame) and whose device side is
    ``time.sleep`` of the measured GPU time per frame: ideal, independent devices."""

    def __init__(self, ms_per_frame: float) -> None:
        self.ms_per_frame = ms_per_frame

    def __call__(self, frames: Any, backend: Any = None) -> int:
        count = 0
        for _ in frames:
            time.sleep(self.ms_per_frame / 1e3)
            count += 1
        return count


def gpu_ms_per_frame(paths: list[str]) -> float:
    """CuPy time per frame of the motion chain (upload, kernels, download of the small results)."""
    from portcv._timing import gpu_time_ms

    frames = portcv.video.read_video(paths[0])
    with portcv.using("cupy"):
        detector = portcv.motion.MotionDetector(**SPEC_PARAMS)
        state = {"i": 0}

        def step() -> Any:
            state["i"] = (state["i"] + 1) % len(frames)
            result = detector.update(frames[state["i"]])
            return None if result is None else portcv.to_numpy(result.regions)

        per_call, _ = gpu_time_ms(step, repeat=50, warmup=5, rounds=3)
    return per_call


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2", help="CPU worker counts (default 1,2)")
    p.add_argument("--videos", type=int, default=8, help="clips (default 8)")
    p.add_argument("--frames", type=int, default=60, help="frames per clip (default 60: > 1 s per task on NumPy)")
    p.add_argument("--size", default="640x480", help="clip size WxH (default 640x480)")
    p.add_argument("--image", type=int, default=8192, help="side of the square image (default 8192)")
    p.add_argument("--tile", type=int, default=2048, help="filter_store tile and chunk (default 2048)")
    p.add_argument("--repeat", type=int, default=3, help="runs per figure, the minimum is kept (default 3)")
    p.add_argument("--workloads", default="videos,image", help="videos, image or both (default both)")
    p.add_argument("--ceiling", action="store_true", help="also time the image tasks in plain processes (no scheduler)")
    p.add_argument("--predicted-gpu", default=None, metavar="N,...", help="also emulate N GPU workers (default: no)")
    p.add_argument("--gpu-ms-per-frame", type=float, default=None, help="GPU ms per frame (default: measured with CuPy)")
    p.add_argument("--json", default=None, help="write the figures here (default: none)")
    p.add_argument("--plot", default=None, help="write a speedup/efficiency plot here (default: none)")
    args = p.parse_args(argv)

    from distributed import Client

    workers = [int(v) for v in args.workers.split(",") if v]
    workloads = [w for w in args.workloads.split(",") if w]
    width, height = (int(v) for v in args.size.lower().split("x"))
    folder = Path(tempfile.mkdtemp(prefix="portcv-scaleout-"))
    spec = pdist.motion(**SPEC_PARAMS)
    inputs = {"chain": CHAIN, "tile": args.tile,
              "out": str(folder / "out.zarr")}
    if "videos" in workloads or args.predicted_gpu:
        inputs["paths"] = write_clips(folder, args.videos, args.frames, (width, height))
    if "image" in workloads:
        inputs["image"] = write_image(folder, args.image, args.tile)
    report: dict[str, Any] = {"load_before": load(), "cores": os.cpu_count(), "commit": _commit(),
                              "versions": _versions(), "figures": {}}
    for workload in workloads:
        serial = min(in_process(workload, inputs, spec) for _ in range(max(1, args.repeat - 1)))
        rows = {}
        for n in workers:
            # one core per worker (the NumPy overrides' pool too), so n workers use n cores
            with pdist.local_cluster("numpy", n_workers=n, threads_per_worker=1, dashboard_address=None,
                                     env={"PORTCV_NUMPY_THREADS": "1"}) as cluster, Client(cluster) as client:
                best = run_workload(client, workload, inputs, spec, args.repeat)
                best["noop_per_task"] = noop_overhead(client)
                best["load"] = load()
            rows[n] = best
        base = rows[workers[0]]["wall"] * workers[0]
        for n, row in rows.items():
            row["speedup"] = rows[workers[0]]["wall"] / row["wall"] * workers[0] if workers[0] == 1 else None
            row["efficiency"] = base / (n * row["wall"])
            row["utilisation"] = row["busy"] / (n * row["wall"])
            row["slowdown"] = row["mean_task"] / rows[workers[0]]["mean_task"] if rows[workers[0]]["mean_task"] else None
            row["overhead_per_task"] = max(n * row["wall"] - row["busy"], 0) / max(row["tasks"], 1)
        report["figures"][workload] = {"in_process": serial, "workers": rows,
                                       "distribution_cost": serial / rows[workers[0]]["wall"]}
        _print(workload, serial, rows)
    if args.ceiling and "image" in workloads:
        per_task = ceiling(inputs, sorted({1, *workers}), args.repeat)
        one = per_task[1]
        report["ceiling"] = {"seconds_per_task": per_task}
        print("\nimage tasks in plain processes (no scheduler), one core each:")
        for n, sec in per_task.items():
            slow = sec / one
            print(f"  {n} processes: {sec * 1e3:.0f} ms per task, S {slow:.2f}, ceiling {n / slow:.2f}x")
    if args.predicted_gpu:
        ms = args.gpu_ms_per_frame if args.gpu_ms_per_frame is not None else gpu_ms_per_frame(inputs["paths"])
        counts = [int(v) for v in args.predicted_gpu.split(",") if v]
        rows = {}
        replay = ReplayedGPU(ms)
        for n in [1, *counts]:
            with pdist.local_cluster("numpy", n_workers=n, threads_per_worker=1, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                rows[n] = run_workload(client, "videos", inputs, replay, args.repeat)
                rows[n]["load"] = load()
        for n, row in rows.items():
            row["speedup"] = rows[1]["wall"] / row["wall"]
            row["efficiency"] = row["speedup"] / n
        report["figures"]["predicted_gpu"] = {"label": "predicted (1-GPU emulation)", "gpu_ms_per_frame": ms,
                                              "workers": rows}
        print(f"\npredicted (1-GPU emulation), {ms:.2f} GPU ms per frame:")
        for n, row in rows.items():
            print(f"  {n} GPU workers: {row['wall']:.2f} s, speedup {row['speedup']:.2f}x, efficiency {row['efficiency']:.0%}")
    report["load_after"] = load()
    print(f"\nload before: {report['load_before']}\nload after:  {report['load_after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    if args.plot:
        plot(report, Path(args.plot))
    return 0


def _print(workload: str, serial: float, rows: dict) -> None:
    print(f"\n{workload}: in-process serial {serial:.2f} s")
    print(f"  {'workers':>7} {'wall s':>7} {'speedup':>7} {'E':>5} {'U':>5} {'S':>5} {'tasks':>5} "
          f"{'ovh ms/task':>11} {'noop ms':>7}")
    for n, r in rows.items():
        speed = f"{r['speedup']:.2f}x" if r["speedup"] else "-"
        slow = f"{r['slowdown']:.2f}" if r["slowdown"] else "-"
        print(f"  {n:>7} {r['wall']:>7.2f} {speed:>7} {r['efficiency']:>5.0%} {r['utilisation']:>5.0%} {slow:>5} "
              f"{r['tasks']:>5} {r['overhead_per_task'] * 1e3:>11.1f} {r['noop_per_task'] * 1e3:>7.2f}")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    top = 1
    for name, fig_data in report["figures"].items():
        rows = {int(k): v for k, v in fig_data["workers"].items()}
        ns = sorted(rows)
        label = fig_data.get("label", name)
        ax.plot(ns, [rows[n]["speedup"] or 1 for n in ns], marker="o",
                label=f"{name} ({label})" if name == "predicted_gpu" else name)
        top = max(top, *ns)
    ax.plot([1, top], [1, top], color="grey", linestyle=":", label="ideal")
    ax.set_xlabel("workers")
    ax.set_ylabel("speedup vs 1 worker")
    load_avg = report["load_before"].split("load average:")[-1].strip()
    ax.set_title(f"portcv.distributed scaling, {report['cores']} cores (NumPy backend)\n"
                 f"load average at the start: {load_avg} (a shared machine)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except OSError:
        return "?"


def _versions() -> dict:
    import dask
    import distributed

    return {"portcv": portcv.__version__, "dask": dask.__version__, "distributed": distributed.__version__,
            "numpy": np.__version__}


if __name__ == "__main__":
    sys.exit(main())
