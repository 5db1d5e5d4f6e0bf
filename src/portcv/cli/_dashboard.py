"""The landing page of ``portcv bench --html``: the speedups, per machine and domain, at a glance.

asv's own pages plot one benchmark at a time over commits. This page reads the newest results of
``bench_speedup.Speedup.track_speedup`` per machine from ``asv_bench/results/`` and writes
``speedups.html``: for each machine and domain a table (operations x pairs, the 16-frame-batch
mode, every cell a link into asv's page of that benchmark and parameters) and a bar chart on a
log axis (1x in the middle: a bar to the right means the first of the pair is faster). The page
is self-contained HTML and inline SVG: no script, no network.
"""

from __future__ import annotations

import html
import json
import math
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

#: The asv benchmark the page reads.
SPEEDUP = "bench_speedup.Speedup.track_speedup"
#: The mode shown first (GPU backends judged per frame in batches).
HEADLINE = "16-frame batch"
#: The chart's axis: 10^-3 .. 10^3.
LOG_RANGE = 3.0


@dataclass
class MachineSpeedups:
    """The speedups of one asv machine; ``commit``: the newest commit with any."""

    machine: str
    description: str
    commit: str
    date_ms: int
    values: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (op, pair, mode) -> x


def _unquote(value: str) -> str:
    """asv stores string parameters as their repr: ``"'numpy'"`` -> ``numpy``."""
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value


def read_speedups(results_dir: Path) -> list[MachineSpeedups]:
    """Per machine folder of ``results_dir``, every speedup it has measured, each from the newest
    commit that measured it (a commit may have run only some pairs); the machines that measured
    the most pairs first."""
    machines = []
    for folder in sorted(p for p in Path(results_dir).iterdir() if p.is_dir()):
        files = []
        for path in folder.glob("*.json"):
            if path.name == "machine.json":
                continue
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if data.get("results", {}).get(SPEEDUP):
                files.append(data)
        if not files:
            continue
        files.sort(key=lambda d: d.get("date", 0))
        newest = files[-1]
        p = newest.get("params", {})
        desc = ", ".join(f"{p[k]} CPUs" if k == "num_cpu" else str(p[k]) for k in ("cpu", "num_cpu", "os") if p.get(k))
        m = MachineSpeedups(folder.name, desc, newest.get("commit_hash", "")[:8], int(newest.get("date", 0)))
        for data in files:  # oldest first: a newer commit's value replaces an older one
            m.values.update(_speedup_values(data))
        if m.values:
            machines.append(m)
    return sorted(machines, key=lambda m: -len(m.values))  # the machine that measured most pairs (a GPU's) first


def _speedup_values(data: dict) -> dict[tuple[str, str, str], float]:
    """``{(op, pair, mode): x}`` of one asv result file (measured values only)."""
    entry = data["results"][SPEEDUP]
    columns = data.get("result_columns", ["result", "params"])
    values, params = entry[columns.index("result")], entry[columns.index("params")]
    names = [[_unquote(v) for v in p] for p in params]
    flat: dict[tuple[str, str, str], float] = {}
    keys = [(op, pair, mode) for op in names[0] for pair in names[1] for mode in names[2]]
    for key, v in zip(keys, values or []):
        if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
            flat[key] = float(v)
    return flat


def asv_link(op: str, pair: str, mode: str, machine: str) -> str:
    # one series (every parameter fixed) on asv's log axis: a readable legend, and commits whose
    # speedups differ by 10x stay on the same plot
    query = urllib.parse.urlencode({"machine": machine, "p-op": repr(op), "p-pair": repr(pair), "p-mode": repr(mode),
                                    "y-axis-scale": "log"}, quote_via=urllib.parse.quote)
    return f"index.html#{SPEEDUP}?{query}"


def _fmt(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 1:
        return f"{x:.1f}x"
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.3f}x" if x >= 0.001 else f"{x:.4f}x"


def _chart(rows: list[tuple[str, str, float]]) -> str:
    """Horizontal bars on a log axis around 1x; ``rows``: (op, pair, value)."""
    width, left, bar_h, gap = 760, 330, 14, 3
    plot = width - left - 60
    height = 30 + len(rows) * (bar_h + gap)
    mid = left + plot / 2

    def x_of(v: float) -> float:
        lg = max(-LOG_RANGE, min(LOG_RANGE, math.log10(v)))
        return mid + lg / LOG_RANGE * plot / 2

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'font-family="sans-serif" font-size="11">']
    for e in range(-int(LOG_RANGE), int(LOG_RANGE) + 1):
        x = x_of(10.0**e)
        parts.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height}" stroke="{"#444" if e == 0 else "#ddd"}"/>')
        parts.append(f'<text x="{x:.1f}" y="10" text-anchor="middle" fill="#555">{_fmt(10.0**e)}</text>')
    y = 20
    last_op = None
    for op, pair, v in rows:
        label = f"{op.split('.', 1)[-1] if op != last_op else ''}  {pair}"
        last_op = op
        x = x_of(v)
        x0, x1 = sorted((mid, x))
        color = "#2a9d5c" if v >= 1 else "#d1495b"
        parts.append(f'<text x="{left - 6}" y="{y + bar_h - 3}" text-anchor="end">{html.escape(label)}</text>')
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar_h}" fill="{color}"/>')
        tx, anchor = (x1 + 4, "start") if v >= 1 else (x0 - 4, "end")
        if v < 1 and x0 - 4 < left:
            tx, anchor = x1 + 4, "start"
        parts.append(f'<text x="{tx:.1f}" y="{y + bar_h - 3}" text-anchor="{anchor}">{_fmt(v)}</text>')
        y += bar_h + gap
    parts.append("</svg>")
    return "".join(parts)


def _table(m: MachineSpeedups, ops: list[str], pairs: list[str], mode: str) -> str:
    head = "".join(f"<th>{html.escape(p)}</th>" for p in pairs)
    body = []
    for op in ops:
        cells = []
        for pair in pairs:
            v = m.values.get((op, pair, mode))
            if v is None:
                cells.append('<td class="na">n/a</td>')
            else:
                cls = "up" if v >= 1 else "down"
                cells.append(f'<td class="{cls}"><a href="{html.escape(asv_link(op, pair, mode, m.machine))}">'
                             f"{_fmt(v)}</a></td>")
        body.append(f"<tr><th>{html.escape(op.split('.', 1)[-1])}</th>{''.join(cells)}</tr>")
    return f'<table><tr><th>operation</th>{head}</tr>{"".join(body)}</table>'


STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; font-weight: normal; } tr th:first-child { text-align: left; }
td.up a { color: #176b3a; font-weight: bold; } td.down a { color: #b02a3c; } td.na { color: #aaa; }
a { text-decoration: none; } h2 { border-bottom: 2px solid #444; margin-top: 2em; }
.note { color: #555; max-width: 60em; }
"""


def speedup_page(results_dir: Path, html_dir: Path) -> Path | None:
    """Write ``html_dir/speedups.html`` from the results; ``None`` when no machine has speedups."""
    machines = read_speedups(results_dir)
    if not machines:
        return None
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>portcv speedups</title>"
           f"<style>{STYLE}</style></head><body><h1>portcv speedups</h1>"
           "<p class='note'>How many times faster the first of each pair is than the second, on one "
           "1920&times;1080 frame (green: faster, red: slower). GPU backends (CuPy, JAX, cupyx) are timed per "
           "frame in a batch of 16 frames per call; NumPy and OpenCV per single frame. "
           "&ldquo;opencv 1 thread&rdquo; runs <code>cv2.setNumThreads(1)</code>, &ldquo;opencv all "
           "threads&rdquo; OpenCV's default (every core of the machine). n/a: not measured on that machine "
           "(no GPU there, or no such peer). Every value links to asv's page of that benchmark; "
           "<a href='index.html'>all benchmarks</a>.</p>"]
    for m in machines:
        ops = sorted({op for op, _, _ in m.values})
        pairs = [p for p in dict.fromkeys(p for _, p, _ in m.values)]
        out.append(f"<h2>{html.escape(m.machine)}</h2><p class='note'>{html.escape(m.description)}; "
                   f"newest commit <code>{html.escape(m.commit)}</code> (each value from the newest commit "
                   "that measured it).</p>")
        for domain in sorted({op.split(".", 1)[0] for op in ops}):
            dops = [op for op in ops if op.startswith(domain + ".")]
            dpairs = [p for p in pairs if any((op, p, HEADLINE) in m.values for op in dops)]
            out.append(f"<h3>{html.escape(domain)}</h3>")
            out.append(_table(m, dops, dpairs, HEADLINE))
            rows = [(op, p, m.values[(op, p, HEADLINE)]) for op in dops for p in dpairs if (op, p, HEADLINE) in m.values]
            out.append(_chart(rows))
            single = [p for p in pairs if any((op, p, "single call") in m.values for op in dops)]
            if single:
                out.append("<details><summary>single synchronized call (dispatch included)</summary>"
                           + _table(m, dops, single, "single call") + "</details>")
    out.append("</body></html>")
    path = Path(html_dir) / "speedups.html"
    path.write_text("\n".join(out), encoding="utf-8")
    return path
