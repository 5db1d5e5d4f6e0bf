"""The measurements that are not asv benchmarks: GPU profiles, Nsight Compute, kernel splits,
end-to-end and multi-GPU runs, CPU comparisons with OpenCV, accuracy evaluations.

    python -m tools.measure                      # lists the measurements
    python -m tools.measure NAME [ARGS ...]      # runs one; NAME --help gives its options

Run from the repository root (``python -m`` puts it on the import path, so a measurement imports
``portcv``, its sibling measurements as ``tools.measurements.x`` and the asv suite's inputs as
``asv_bench.benchmarks.bench_x``). Each measurement is a module of ``tools/measurements/``, run
as its own ``__main__`` with ``ARGS`` as its command line, exactly as the script it was;
``stream-e2e`` is a shell script, run with bash. What the asv suite measures is not here: see
``docs/benchmarks.md``.
"""

from __future__ import annotations

import ast
import runpy
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "measurements"

#: Measurement name -> (file in tools/measurements/, whether it needs a CUDA GPU).
MEASUREMENTS: dict[str, tuple[str, bool]] = {
    "cascade-cpu": ("cascade_cpu.py", False),
    "cascade-schedule": ("cascade_schedule.py", True),
    "cpu-vs-opencv": ("cpu_vs_opencv.py", False),
    "depth-gpu": ("depth_gpu.py", True),
    "eval-faces": ("eval_faces.py", False),
    "gpu-bench": ("gpu_bench.py", True),
    "gpu-latency": ("gpu_latency.py", True),
    "gpu-profile": ("gpu_profile.py", True),
    "gpu-video": ("gpu_video.py", True),
    "jax-call-cost": ("jax_call_cost.py", True),
    "jax-profile": ("jax_profile.py", True),
    "kernel-split": ("kernel_split.py", True),
    "lbp-tables": ("lbp_tables.py", False),
    "mct-cpu": ("mct_cpu.py", False),
    "mct-gpu": ("mct_gpu.py", True),
    "median-gpu": ("median_gpu.py", True),
    "multigpu": ("multigpu_bench.py", True),
    "ncu-kernels": ("ncu_kernels.py", True),
    "recognize-gpu": ("recognize_gpu.py", True),
    "rice-tables": ("rice_tables.py", False),
    "scaleout": ("scaleout_bench.py", False),
    "stream-bandwidth": ("stream_bandwidth.py", False),
    "stream-e2e": ("stream_e2e.sh", False),
    "volume-timing": ("volume_timing.py", True),
    "zoom-timing": ("zoom_timing.py", True),
}


def summary(file: str) -> str:
    """The first line of a measurement's docstring (of its header comment for a shell script)."""
    path = HERE / file
    if path.suffix == ".sh":
        comments = [line[1:].strip() for line in path.read_text().splitlines()[1:] if line.startswith("#")]
        return comments[0] if comments else ""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.splitlines()[0] if doc else ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(__doc__.split("\n\n")[0].replace("\n", " "), "\n")
        for name, (file, gpu) in MEASUREMENTS.items():
            print(f"  {name:18s} {'[GPU] ' if gpu else ''}{summary(file)}")
        return 0
    name, args = argv[0], argv[1:]
    if not __package__:  # run as a file: the repository root is not on the import path
        print("measure: run it from the repository root as python -m tools.measure", file=sys.stderr)
        return 2
    if name not in MEASUREMENTS:
        print(f"measure: no measurement {name!r}; run python -m tools.measure to list them", file=sys.stderr)
        return 2
    file = MEASUREMENTS[name][0]
    if file.endswith(".sh"):
        return subprocess.call(["bash", str(HERE / file), *args])
    sys.argv = [f"tools.measure {name}", *args]
    runpy.run_module(f"tools.measurements.{Path(file).stem}", run_name="__main__", alter_sys=True)  # its sys.exit stands
    return 0


if __name__ == "__main__":
    sys.exit(main())
