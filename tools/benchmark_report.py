"""Speedup tables and plots for docs/benchmarks.md from the committed asv results.

Reads ``asv_bench/results/<machine>/*.json`` (every machine: the CPU runs and the GPU runs that
``tools/gpu_asv.sh`` produced), takes per machine the results of the newest benchmarked commit
(or ``--commit``), and writes

* between ``<!-- benchmark-report:start -->`` and ``<!-- benchmark-report:end -->`` in
  ``docs/benchmarks.md``: per machine, a table per op and size of the median time of each
  backend and its speedup over NumPy on the same machine, and a table of achieved bandwidth
  (the ``track_*_bandwidth`` benchmarks) against the measured copy bandwidth where known;
* ``docs/img/speedup_vs_pixels.png``: speedup over NumPy against pixel count, one panel per
  backend, one line per op and machine (the style of the papers' Figures 26-28);
* ``docs/img/roofline.png``: achieved GB/s per op and backend at the largest frame, with the
  device's measured copy bandwidth as the roof (from ``tools/measurements/gpu_bench.py --json``'s output,
  ``asv_bench/measurements/gpu_bench_h100.json`` by default, which also adds its kernel-only CuPy GB/s).

Usage::

    python tools/benchmark_report.py                     # the repository's results and docs
    python tools/benchmark_report.py --results /tmp/asv/results --doc /tmp/b.md --img /tmp/img

Only the standard library is needed for the tables; the plots need matplotlib
(``pip install 'portcv[bench]'``) and are skipped with a message without it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- benchmark-report:start -->"
END = "<!-- benchmark-report:end -->"
#: Column order; other backend values follow in the order met.
BACKEND_ORDER = ["numpy", "jax", "cupy", "opencv", "cupyx"]
REFERENCE = "numpy"


@dataclass
class Run:
    """One machine's results for one commit (possibly several environments merged)."""

    machine: str
    info: dict
    commit: str
    date: int
    #: benchmark name -> (param names, {param tuple: value})
    values: dict[str, tuple[list[str], dict[tuple[str, ...], float]]] = field(default_factory=dict)
    #: every commit whose results were merged, oldest first
    commits: list[str] = field(default_factory=list)


def _unquote(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_runs(results_dir: Path, commit: str | None = None, machines: list[str] | None = None) -> list[Run]:
    """Each machine's results (of ``commit`` only, when given), from asv's results JSON (format
    version 2): per benchmark and parameters, the value of the newest commit that measured it
    (a GPU run may cover only some benchmarks)."""
    try:
        with open(results_dir / "benchmarks.json") as f:
            benchmarks = json.load(f)
    except FileNotFoundError:
        benchmarks = {}
    runs = []
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        machine = machine_dir.name
        if machines and machine not in machines:
            continue
        info = {}
        if (machine_dir / "machine.json").is_file():
            info = json.loads((machine_dir / "machine.json").read_text())
        files = []
        for path in machine_dir.glob("*.json"):
            if path.name == "machine.json":
                continue
            data = json.loads(path.read_text())
            if "results" not in data or "commit_hash" not in data:
                continue
            if commit and not data["commit_hash"].startswith(commit):
                continue
            files.append(data)
        if not files:
            continue
        # Oldest first: a value measured again at a newer commit replaces the older one, and
        # what a newer (partial) run did not measure keeps its latest earlier value.
        files.sort(key=lambda d: d.get("date") or 0)
        newest = files[-1]["commit_hash"]
        run = Run(machine, info, newest, files[-1].get("date") or 0)
        for data in files:
            if data["commit_hash"] not in run.commits:
                run.commits.append(data["commit_hash"])
            columns = data["result_columns"]
            for name, row in data["results"].items():
                entry = dict(zip(columns, row))
                result, params = entry.get("result"), entry.get("params") or []
                param_names = benchmarks.get(name, {}).get("param_names") or [f"p{i}" for i in range(len(params))]
                table = run.values.setdefault(name, (param_names, {}))[1]
                if not params:
                    if _finite(result):
                        table[()] = float(result)
                    continue
                combos = _product([[_unquote(v) for v in p] for p in params])
                for combo, value in zip(combos, result or []):
                    if _finite(value):
                        table[combo] = float(value)
        runs.append(run)
    return runs


def _product(lists: list[list[str]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for values in lists:
        out = [o + (v,) for o in out for v in values]
    return out


def _pixels(size: str) -> int | None:
    m = re.fullmatch(r"(\d+)x(\d+)", size)
    return int(m.group(1)) * int(m.group(2)) if m else None


def _short_name(name: str) -> str:
    """``bench_filters.GaussianBlur.time_gaussian_blur`` -> ``GaussianBlur.time_gaussian_blur``."""
    return name.split(".", 1)[1] if "." in name else name


def _ordered_backends(backends) -> list[str]:
    seen = list(dict.fromkeys(backends))
    return [b for b in BACKEND_ORDER if b in seen] + [b for b in seen if b not in BACKEND_ORDER]


def _fmt_time(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1e3:.0f} µs" if ms >= 0.1 else f"{ms * 1e3:.1f} µs"


def _fmt_speedup(x: float) -> str:
    return f"{x:.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def rows_by_op(run: Run, prefix: str):
    """``(benchmark, other params) -> {backend: value}`` for benchmarks named ``*.<prefix>*`` with a backend param."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, float]] = defaultdict(dict)
    for name, (param_names, table) in sorted(run.values.items()):
        if not name.split(".")[-1].startswith(prefix) or "backend" not in param_names:
            continue
        bi = param_names.index("backend")
        for combo, value in table.items():
            others = tuple((n, v) for i, (n, v) in enumerate(zip(param_names, combo)) if i != bi)
            out[(name, others)][combo[bi]] = value
    return out


def _sort_key(item):
    (name, others), _ = item
    return (name, tuple(_pixels(v) or v for _, v in others))


#: Units of the ``track_*_per_frame`` benchmarks, by the name's ending: seconds per unit.
PER_FRAME_UNITS = {"_us_per_frame": 1e-6, "_ms_per_frame": 1e-3}


def per_frame_rows(run: Run) -> dict:
    """:func:`rows_by_op` of the ``track_*_{us,ms}_per_frame`` benchmarks (time per frame in a
    batch, the figure GPU backends are judged by), in seconds."""
    out = {}
    for (name, others), cells in rows_by_op(run, "track_").items():
        scale = next((v for k, v in PER_FRAME_UNITS.items() if name.endswith(k)), None)
        if scale is not None:
            out[(name, others)] = {b: v * scale for b, v in cells.items()}
    return out


def speed_table(run: Run, rows: dict | None = None) -> list[str]:
    """Times per backend with the speedup over NumPy: the ``time_*`` benchmarks, or ``rows``."""
    rows = rows_by_op(run, "time_") if rows is None else rows
    if not rows:
        return []
    backends = _ordered_backends(b for cells in rows.values() for b in cells)
    head = ["benchmark", "parameters"] + [f"{b}" + ("" if b == REFERENCE else " (speedup)") for b in backends]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (name, others), cells in sorted(rows.items(), key=_sort_key):
        ref = cells.get(REFERENCE)
        row = [f"`{_short_name(name)}`", ", ".join(v for _, v in others) or "-"]
        for b in backends:
            v = cells.get(b)
            if v is None:
                row.append("n/a")
            elif b == REFERENCE or ref is None:
                row.append(_fmt_time(v))
            else:
                row.append(f"{_fmt_time(v)} ({_fmt_speedup(ref / v)})")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def bandwidth_table(run: Run, copy_gbs: float | None) -> list[str]:
    rows = rows_by_op(run, "track_")
    rows = {k: v for k, v in rows.items() if k[0].endswith("_bandwidth")}
    if not rows:
        return []
    backends = _ordered_backends(b for cells in rows.values() for b in cells)
    head = ["benchmark", "parameters"] + [f"{b} GB/s" for b in backends]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (name, others), cells in sorted(rows.items(), key=_sort_key):
        row = [f"`{_short_name(name)}`", ", ".join(v for _, v in others) or "-"]
        for b in backends:
            v = cells.get(b)
            if v is None:
                row.append("n/a")
            elif copy_gbs and b in ("cupy", "jax", "cupyx"):
                row.append(f"{v:.1f} ({100 * v / copy_gbs:.0f}%)")
            else:
                row.append(f"{v:.1f}" if v >= 1 else f"{v:.3f}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def load_gpu_bench(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text())


def report_markdown(runs: list[Run], gpu_bench: dict | None, gpu_machine: str, img_rel: str | None) -> str:
    out = ["_Generated by `python tools/benchmark_report.py` from `asv_bench/results/`; do not edit by hand "
           "between these markers._", ""]
    if not runs:
        out.append("No results committed yet.")
        return "\n".join(out)
    for run in runs:
        info = run.info
        desc = ", ".join(filter(None, [info.get("cpu"), f"{info['num_cpu']} CPUs" if info.get("num_cpu") else "",
                                       info.get("os")]))
        copy_gbs = gpu_bench.get("copy_GBps") if gpu_bench and run.machine == gpu_machine else None
        commits = ", ".join(f"`{c[:8]}`" for c in (run.commits or [run.commit]))
        which = (f"commits {commits} (each value from the newest that measured it)" if len(run.commits) > 1
                 else f"commit {commits}")
        out += [f"### Machine `{run.machine}`", "", f"{desc}; {which}." if desc else f"{which[0].upper()}{which[1:]}.",
                ""]
        table = speed_table(run)
        if table:
            out += ["Median time of one synchronized call; in brackets the speedup over NumPy on the same "
                    "machine (`n/a`: skipped or not run).", ""] + table + [""]
        per_frame = speed_table(run, per_frame_rows(run))
        if per_frame:
            out += ["Time per frame in a batch (the `track_*_per_frame` benchmarks: one call on a stack of "
                    "frames, divided by the frames; NumPy one frame a call); in brackets the speedup over "
                    "NumPy.", ""] + per_frame + [""]
        bw = bandwidth_table(run, copy_gbs)
        if bw:
            roof = (f"; in brackets the fraction of the measured device-to-device copy bandwidth, "
                    f"{copy_gbs:.0f} GB/s (`tools/measurements/gpu_bench.py`)") if copy_gbs else ""
            out += [f"Achieved bandwidth, compulsory bytes over the median call time{roof}.", ""] + bw + [""]
    if gpu_bench:
        out += [f"### Kernel-only CuPy figures (`tools/measurements/gpu_bench.py`, {gpu_bench.get('device', '?')})", "",
                "CUDA-event time per frame in a batch of 8 (launch cost amortized), achieved GB/s and the "
                f"fraction of the measured copy bandwidth ({gpu_bench.get('copy_GBps', float('nan')):.0f} GB/s).", "",
                "| op | size | cupy ms/frame | GB/s | of copy bandwidth |", "|---|---|---|---|---|"]
        for r in gpu_bench.get("ops", []):
            out.append(f"| {r.get('op')} | {r.get('size')} | {r.get('cupy_batch8_ms_per_frame', float('nan')):.4f} "
                       f"| {r.get('cupy_GBps', float('nan')):.0f} | {100 * r.get('roofline_fraction', float('nan')):.0f}% |")
        out.append("")
    if img_rel:
        out += [f"![speedup over NumPy against pixel count]({img_rel}/speedup_vs_pixels.png)", "",
                f"![achieved bandwidth against the copy bandwidth]({img_rel}/roofline.png)", ""]
    return "\n".join(out).rstrip() + "\n"


def write_between_markers(doc: Path, body: str) -> None:
    text = doc.read_text() if doc.is_file() else ""
    block = f"{START}\n{body}{END}"
    if START in text and END in text and text.index(START) < text.index(END):
        i, j = text.index(START), text.index(END) + len(END)
        text = text[:i] + block + text[j:]
    else:
        text = text.rstrip() + f"\n\n## Results\n\n{block}\n"
    doc.write_text(text)


# ----------------------------------------------------------------------------------------------
# Plots
# ----------------------------------------------------------------------------------------------
def _op_label(name: str, others: tuple[tuple[str, str], ...]) -> str:
    fn = name.split(".")[-1].removeprefix("time_")
    extra = [v for n, v in others if n != "size"]
    return fn + (f" ({', '.join(extra)})" if extra else "")


#: The operations the speedup plot draws (bench_speedup's headline operations, by the name before
#: any parameter in brackets): one line each per machine keeps a panel's legend readable.
PLOTTED_OPS = ("rgb_to_gray", "histogram", "binarize_auto", "gaussian_blur", "box_blur", "median_filter",
               "sobel", "integral", "canny", "resize_half")


def plot_speedup(runs: list[Run], path: Path, plt) -> bool:
    from matplotlib import ticker

    series = defaultdict(dict)  # (backend, op label, machine) -> {pixels: speedup}
    size_names: dict[int, str] = {}
    for run in runs:
        for (name, others), cells in rows_by_op(run, "time_").items():
            size = dict(others).get("size")
            px = _pixels(size) if size else None
            ref = cells.get(REFERENCE)
            if px is None or ref is None:
                continue
            size_names[px] = size
            rest = tuple(o for o in others if o[0] != "size")
            label = _op_label(name, rest)
            if label.split(" (")[0] not in PLOTTED_OPS:
                continue
            for b, v in cells.items():
                if b != REFERENCE:
                    series[(b, label, run.machine)][px] = ref / v
    backends = _ordered_backends(b for b, _, _ in series)
    if not backends:
        return False
    ncols = min(2, len(backends))
    nrows = math.ceil(len(backends) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 4.2 * nrows), squeeze=False)
    ops = sorted({op for _, op, _ in series})
    machines = sorted({m for _, _, m in series})
    colors = plt.get_cmap("tab10" if len(ops) <= 10 else "tab20")
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D"]
    for ax, b in zip(axes.flat, backends):
        for (sb, op, m), points in sorted(series.items()):
            if sb != b:
                continue
            xs = sorted(points)
            mi = machines.index(m)
            ax.plot(xs, [points[x] for x in xs], styles[mi % 4], marker=markers[mi % 4],
                    color=colors(ops.index(op) % colors.N), label=f"{op} [{m}]" if len(machines) > 1 else op)
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sorted(size_names), [size_names[px] for px in sorted(size_names)])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(f"{b} vs NumPy")
        ax.set_xlabel("frame size (log of pixel count)")
        ax.set_ylabel("speedup over NumPy")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(backends):]:
        ax.set_visible(False)
    fig.suptitle("portcv: speedup over NumPy against frame size (asv medians)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_roofline(runs: list[Run], gpu_bench: dict | None, gpu_machine: str, path: Path, plt) -> bool:
    panels = []
    for run in runs:
        rows = {k: v for k, v in rows_by_op(run, "track_").items() if k[0].endswith("_bandwidth")}
        if not rows:
            continue
        # the largest frame of each benchmark (and the first value of any other parameter)
        best: dict[str, tuple[int, dict[str, float]]] = {}
        for (name, others), cells in rows.items():
            d = dict(others)
            px = _pixels(d.get("size", "")) or 0
            label = name.split(".")[-1].removeprefix("track_").removesuffix("_bandwidth")
            extra = [v for n, v in others if n != "size"]
            label += f" ({', '.join(extra)})" if extra else ""
            if label not in best or px > best[label][0]:
                best[label] = (px, cells)
        copy = gpu_bench.get("copy_GBps") if gpu_bench and run.machine == gpu_machine else None
        panels.append((run.machine, best, copy))
    if not panels and gpu_bench:
        # No asv track_ results yet: plot gpu_bench's kernel-only CuPy figures at the largest frame.
        best = {}
        for r in gpu_bench.get("ops", []):
            px = _pixels(r.get("size", "")) or 0
            if r["op"] not in best or px > best[r["op"]][0]:
                best[r["op"]] = (px, {"cupy (kernel, batch of 8)": r.get("cupy_GBps", 0.0)})
        panels.append((gpu_machine, best, gpu_bench.get("copy_GBps")))
        gpu_bench = None  # its stars would repeat the bars
    if not panels:
        return False
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 4.2 * len(panels)), squeeze=False)
    for ax, (machine, best, copy) in zip(axes[:, 0], panels):
        labels = sorted(best)
        backends = _ordered_backends(b for _, cells in best.values() for b in cells)
        width = 0.8 / max(1, len(backends))
        for bi, b in enumerate(backends):
            xs = [i + (bi - (len(backends) - 1) / 2) * width for i in range(len(labels))]
            ys = [best[lab][1].get(b, 0.0) for lab in labels]
            ax.bar(xs, ys, width, label=b)
        if copy:
            ax.axhline(copy, color="red", ls="--", label=f"measured copy bandwidth {copy:.0f} GB/s")
        if gpu_bench and machine == gpu_machine:
            kernel = {}
            for r in gpu_bench.get("ops", []):
                kernel.setdefault(r["op"], (0, 0.0))
                px = _pixels(r.get("size", "")) or 0
                if px >= kernel[r["op"]][0]:
                    kernel[r["op"]] = (px, r.get("cupy_GBps", 0.0))
            for i, lab in enumerate(labels):
                for op, (_, gbs) in kernel.items():
                    if op.split()[0] == lab.split()[0]:
                        ax.plot([i], [gbs], "k*", ms=9)
            ax.plot([], [], "k*", label="cupy kernel only, batch of 8 (gpu_bench)")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("achieved GB/s (largest frame)")
        ax.set_title(f"machine {machine}: achieved bandwidth" + (" vs the copy roofline" if copy else ""))
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(ROOT / "asv_bench" / "results"), help="asv results folder")
    parser.add_argument("--doc", default=str(ROOT / "docs" / "benchmarks.md"), help="markdown file with the markers")
    parser.add_argument("--img", default=str(ROOT / "docs" / "img"), help="folder for the PNG plots")
    parser.add_argument("--gpu-bench", default=str(ROOT / "asv_bench" / "measurements" / "gpu_bench_h100.json"),
                        help="tools/measurements/gpu_bench.py --json output (used if present)")
    parser.add_argument("--gpu-machine", default="h100", help="the asv machine the --gpu-bench figures belong to")
    parser.add_argument("--commit", default=None, help="use this commit (hash prefix) instead of each machine's newest")
    parser.add_argument("--machines", default=None, help="comma-separated machines (default: all)")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)

    results = Path(args.results)
    if not results.is_dir():
        print(f"benchmark_report: error: no results folder {results}", file=sys.stderr)
        return 1
    runs = load_runs(results, args.commit, args.machines.split(",") if args.machines else None)
    gpu_bench = load_gpu_bench(Path(args.gpu_bench)) if args.gpu_bench else None
    doc, img = Path(args.doc), Path(args.img)
    plots = False
    if runs and not args.no_plots:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("benchmark_report: matplotlib is not installed; no plots (pip install 'portcv[bench]')",
                  file=sys.stderr)
        else:
            img.mkdir(parents=True, exist_ok=True)
            made = [plot_speedup(runs, img / "speedup_vs_pixels.png", plt),
                    plot_roofline(runs, gpu_bench, args.gpu_machine, img / "roofline.png", plt)]
            plots = any(made)
            for name, ok in zip(["speedup_vs_pixels.png", "roofline.png"], made):
                print(f"benchmark_report: {'wrote' if ok else 'no data for'} {img / name}")
    img_rel = os.path.relpath(img, doc.parent).replace(os.sep, "/") if plots else None
    write_between_markers(doc, report_markdown(runs, gpu_bench, args.gpu_machine, img_rel))
    print(f"benchmark_report: {len(runs)} machine(s) ({', '.join(r.machine for r in runs) or 'none'}) -> {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
