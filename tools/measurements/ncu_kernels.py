"""Nsight Compute's view of the article's kernels: for each portcv kernel of one call (the calls
of tools/measurements/kernel_split.py), its time, how busy its SMs and memory are, how many of a warp's 32
threads do work, its occupancy and registers. kernel_split.py says which kernel takes the time;
this says why. It is what showed the 3-D convolution's padding bound by instructions with 6 of a
warp's 32 threads active (docs/volume.md). On a CUDA machine with ``ncu`` on the PATH:

    python -m tools.measure ncu-kernels [LABEL_PART ...]   # e.g. "convolve3d k=5 batch" nearest

Each case runs in a child process under ``ncu --profile-from-start off``: one call to compile
and allocate, then one call between cudaProfilerStart and cudaProfilerStop, which ncu replays
kernel by kernel. ncu locks the clocks to the card's base clock for its replays (1.5 GHz on an
H200, which runs up to 1.98) and flushes the caches between them, so its times sit up to about
a third above kernel_split's; its ratios are what to read.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

#: The repository root: the child processes import ``tools.measurements`` from there.
ROOT = Path(__file__).resolve().parents[2]

#: ncu metric -> (column, scale to the printed unit); --print-units base gives ns and bytes/s.
METRICS = {
    "gpu__time_duration.sum": ("µs", 1e-3),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("SM %", 1.0),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("memory %", 1.0),
    "dram__bytes.sum.per_second": ("DRAM TB/s", 1e-12),
    "smsp__thread_inst_executed_per_inst_executed.ratio": ("threads/warp", 1.0),
    "smsp__issue_active.avg.per_cycle_active": ("issue/cycle", 1.0),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("occupancy %", 1.0),
    "launch__registers_per_thread": ("registers", 1.0),
}


def run_case(label: str) -> None:
    """The child: one call of ``label`` to warm up, then one call for ncu to profile."""
    import cupy

    from tools.measurements.kernel_split import article_cases

    make, _, _ = article_cases()[label]
    fn = make()
    fn()
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStart()
    fn()
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStop()


def profile(label: str) -> list[tuple[str, dict[str, float]]]:
    """``[(kernel, {column: value})]`` of the profiled call, in launch order."""
    cmd = ["ncu", "--profile-from-start", "off", "--kernel-name", "regex:^portcv_", "--csv", "--print-units", "base",
           "--metrics", ",".join(METRICS), sys.executable, "-m", "tools.measurements.ncu_kernels", "--run", label]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"ncu took over 600 s on {label!r}") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith('"')]  # ncu's CSV, not its log
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"ncu failed on {label!r} (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    kernels: dict[str, tuple[str, dict[str, float]]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name, metric = row["Kernel Name"].split("(")[0].removeprefix("void ").strip(), row["Metric Name"]
        if metric in METRICS:
            column, scale = METRICS[metric]
            value = float(row["Metric Value"].replace(",", ""))
            kernels.setdefault(row["ID"], (name, {}))[1][column] = value * scale
    return [kernels[i] for i in sorted(kernels, key=int)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--run"]:
        run_case(argv[1])
        return 0
    if shutil.which("ncu") is None:
        print("ncu (Nsight Compute) is not on the PATH; it comes with the CUDA toolkit", file=sys.stderr)
        return 2
    from tools.measurements.kernel_split import article_cases

    labels = [label for label in article_cases() if not argv or any(part in label for part in argv)]
    columns = [column for column, _ in METRICS.values()]
    print("| call | kernel | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    failed = 0
    for label in labels:
        try:
            kernels = profile(label)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            failed += 1
            continue
        for name, values in kernels:
            cells = [f"{values[c]:.3g}" if c in values else "" for c in columns]
            print(f"| {label} | {name} | " + " | ".join(cells) + " |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
