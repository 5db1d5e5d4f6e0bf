"""``portcv bench``: a quick timing table of ops on every backend and OpenCV, or the asv dashboard.

The timing and the registry of operations are in :mod:`._bench_ops`; ``--html`` publishes the
asv results (``asv_bench/``) with their assets vendored, ``--serve`` also serves them on
127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import sys
from pathlib import Path
from typing import Any

import portcv

from ..backends import REFERENCE
from ._common import backend_names, non_negative_float, parse_size, port_or_any, positive_int


def _add_bench_command(sub: Any) -> None:
    p = sub.add_parser("bench", help="time ops on every backend and OpenCV, print speedups over NumPy; "
                                     "--html DIR publishes the asv dashboard")
    p.add_argument("--size", type=parse_size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    p.add_argument("--backends", default=None, help="comma-separated (default: every registered backend that is available)")
    p.add_argument("--ops", default=None, help="comma-separated substrings of op names (default: all)")
    p.add_argument("--repeat", type=positive_int, default=10, help="at most this many timed calls per op and backend (default 10)")
    p.add_argument("--budget", type=non_negative_float, default=1.0, help="seconds of timed calls per op and backend, at least one call (default 1.0)")
    p.add_argument("--no-opencv", action="store_true", help="leave OpenCV out")
    p.add_argument("--plain", action="store_true", help="plain text table even when rich is installed")
    p.add_argument("--json", default=None, help="also write the results to this JSON file (default: none)")
    p.add_argument("--html", default=None, metavar="DIR",
                   help="instead of timing: asv publish the asv_bench results to DIR, with the CDN assets vendored (default: time)")
    p.add_argument("--serve", action="store_true",
                   help="instead of timing: build the dashboard (into --html DIR, or a temporary folder) and serve it "
                        "on 127.0.0.1, printing the URL (default: time)")
    p.add_argument("--port", type=port_or_any, default=8080, help="--serve's port on 127.0.0.1, 0 for any free one (default 8080)")
    p.add_argument("--asv-dir", default=None, help="the asv_bench folder (default: found from the current directory)")
    p.set_defaults(func=bench)


def _format_ms(ms: float) -> str:
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def _format_speedup(x: float) -> str:
    return f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def _find_asv_dir(given: str | None) -> Path:
    """``--asv-dir``, else the ``asv_bench/`` above the current directory, else the source checkout's."""
    if given:
        candidates = [Path(given)]
    else:
        cwd = Path.cwd().resolve()
        candidates = [d / "asv_bench" for d in (cwd, *cwd.parents)] + [cwd]
        candidates.append(Path(portcv.__file__).resolve().parents[2] / "asv_bench")
    for d in candidates:
        if (d / "asv.conf.json").is_file():
            return d
    raise SystemExit("portcv bench --html: no asv_bench/asv.conf.json found here or above; "
                     "run it inside a portcv checkout or pass --asv-dir")


def bench_html(args: argparse.Namespace) -> int:
    """``asv publish`` of the asv_bench results into ``args.html``, then the offline assets."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("asv") is None:
        print("portcv bench --html: error: needs asv (pip install 'portcv[bench]')", file=sys.stderr)
        return 2
    asv_dir = _find_asv_dir(args.asv_dir)
    html_dir = Path(args.html).resolve()
    cmd = [sys.executable, "-m", "asv", "publish", "--html-dir", str(html_dir)]
    print(f"portcv bench --html: {' '.join(cmd[2:])}  (in {asv_dir})")
    if subprocess.run(cmd, cwd=asv_dir).returncode != 0:
        print("portcv bench --html: error: asv publish failed (no results in asv_bench/results/, "
              "or a recorded commit missing from the git history?)", file=sys.stderr)
        return 1
    tool = asv_dir.parent / "tools" / "asv_offline.py"
    spec = importlib.util.spec_from_file_location("portcv_asv_offline", tool)
    if spec is None or spec.loader is None or not tool.is_file():
        print(f"portcv bench --html: error: {tool} not found", file=sys.stderr)
        return 1
    offline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(offline)
    report = offline.make_offline(html_dir, asv_dir / "vendor")
    if report["remote"]:
        print("portcv bench --html: error: pages still load from the network: " + ", ".join(report["remote"]),
              file=sys.stderr)
        return 1
    from ._dashboard import speedup_page

    landing = speedup_page(asv_dir / "results", html_dir)
    page = landing.name if landing else ""
    if landing is None:
        print("portcv bench --html: no speedup results (asv_bench/results/*/ has no "
              "bench_speedup.Speedup.track_speedup): the landing page speedups.html was not written")
    print(f"wrote the dashboard (no network needed) to {html_dir}")
    if not args.serve:
        print(f"serve it on this machine only: portcv bench --serve --html {html_dir}  (or: python -m http.server "
              f"--bind 127.0.0.1 8080 --directory {html_dir}), then open http://127.0.0.1:8080/{page}")
    return 0


def bench_serve(args: argparse.Namespace) -> int:
    """Build the dashboard (into ``--html`` or a temporary folder) and serve it on 127.0.0.1.

    SIGTERM (and SIGHUP) stop it as Ctrl-C does, so the temporary folder is removed whichever
    way the server is stopped.
    """
    import functools
    import tempfile

    with _signals_interrupt(), contextlib.ExitStack() as cleanup:
        if not args.html:  # a folder of the user's is theirs to keep; only our own one is removed
            args.html = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="portcv-dashboard-"))
        status = bench_html(args)
        if status != 0:
            return status
        handler = functools.partial(_QuietHandler, directory=str(Path(args.html).resolve()))
        try:
            server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
        except OSError as exc:
            print(f"portcv bench --serve: error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
            return 2
        page = "speedups.html" if (Path(args.html) / "speedups.html").is_file() else ""
        try:  # from the line on: a signal right after it stops the server as one during serving does
            print(f"serving the dashboard at http://127.0.0.1:{server.server_address[1]}/{page}  (Ctrl-C stops)",
                  flush=True)
            server.serve_forever()
        except KeyboardInterrupt:
            print("portcv bench --serve: stopped", flush=True)
        finally:
            server.server_close()
    return 0


@contextlib.contextmanager
def _signals_interrupt() -> Any:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` here, as SIGINT does, while the block runs.

    Their default action kills the process on the spot, skipping every ``finally`` and ``with``
    exit (the temporary dashboard folder stayed behind); an exception unwinds them. A signal the
    process was started ignoring (``nohup``) stays ignored. Signal handlers can only be set from
    the main thread: elsewhere nothing changes.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    names = [n for n in ("SIGTERM", "SIGHUP")
             if hasattr(signal, n) and signal.getsignal(getattr(signal, n)) is not signal.SIG_IGN]
    previous = {n: signal.signal(getattr(signal, n), interrupt) for n in names}
    try:
        yield
    finally:
        for n, handler in previous.items():
            signal.signal(getattr(signal, n), handler)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Static files without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def bench(args: argparse.Namespace) -> int:
    """Time a representative set of ops on every available backend and OpenCV; print a table."""
    if args.serve:
        return bench_serve(args)
    if args.html:
        return bench_html(args)
    from . import _bench_ops
    width, height = args.size
    names = backend_names(args.backends, "--backends")  # a typo: exit 2, listing the registered names
    if REFERENCE not in names:
        names = [REFERENCE, *names]  # the reference for speedups and the bit check
    for name in names:  # say which backends cannot run here, and why, instead of dropping them
        try:
            portcv.backends.get(name)
        except portcv.BackendUnavailableError as exc:
            print(f"skipped backend {name}: {str(exc).split(';')[0]}")
    ops = _bench_ops.operations(args.ops.split(",") if args.ops else None)
    if not ops:
        print(f"portcv bench: error: no operation matches --ops {args.ops!r}", file=sys.stderr)
        return 2
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = Table = None  # noqa: N806

    title = (f"portcv {portcv.__version__} bench: {width}x{height} frames, median of up to {args.repeat} "
             f"synchronized calls after a warm-up")
    if Console is not None and not args.plain:
        console = Console(stderr=True)
        with console.status("timing") as status:
            columns, results = _bench_ops.compare(
                ops, names, width=width, height=height, repeat=args.repeat, budget_s=args.budget,
                opencv=not args.no_opencv, progress=lambda msg: status.update(f"timing {msg}"))
    else:
        columns, results = _bench_ops.compare(ops, names, width=width, height=height, repeat=args.repeat,
                                               budget_s=args.budget, opencv=not args.no_opencv)
    speed = _bench_ops.speedups(results)
    by_key = {(r.op, r.backend): r for r in results}
    devices = {r.backend: r.device for r in results}
    header = ["op", "input"]
    for name in columns:
        header += [f"{name} ms"] if name == REFERENCE else [f"{name} ms", f"{name} x"]
    rows, notes = [], []
    for op in ops:
        row = [op.name, op.kind]
        for name in columns:
            r = by_key.get((op.name, name))
            ms = _format_ms(r.median_ms) if r is not None and r.median_ms is not None else "-"
            if r is not None and r.same_as_numpy is False:
                ms += " (!)"
                notes.append(f"{op.name} on {name} DIFFERS from NumPy")
            if r is not None and r.error and name != _bench_ops.OPENCV:
                notes.append(f"{op.name} on {name}: {r.error}")
            row.append(ms)
            if name != REFERENCE:
                x = speed.get((op.name, name))
                row.append(_format_speedup(x) if x is not None else "-")
        rows.append(row)
    device_line = "devices: " + ", ".join(f"{n} = {devices.get(n, '')}" for n in columns)
    if Console is not None and not args.plain:
        table = Table(title=title, caption=device_line + "; x = speedup over numpy")
        for i, h in enumerate(header):
            table.add_column(h, justify="left" if i < 2 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        out = Console()
        if not out.is_terminal:  # a pipe or file: do not squeeze the table into 80 columns
            out = Console(width=200)
        out.print(table)
    else:
        print(title)
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for row in [header] + rows:
            print("  ".join(str(v).rjust(w) if i >= 2 else str(v).ljust(w)
                            for i, (v, w) in enumerate(zip(row, widths))).rstrip())
        print(device_line + "; x = speedup over numpy")
    for note in notes:
        print(f"note: {note}")
    if args.json:
        import dataclasses
        import json

        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"size": f"{width}x{height}", "columns": columns,
                       "results": [dataclasses.asdict(r) for r in results]}, f, indent=1)
        print(f"wrote {args.json}")
    return 1 if any(r.same_as_numpy is False for r in results) else 0
