"""The dashboard's landing page (``speedups.html``) from asv results, and ``portcv bench --serve``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from portcv.cli import _dashboard

ROOT = Path(__file__).resolve().parents[2]
OPS = ["'color.rgb_to_gray'", "'filters.gaussian_blur k5'"]
PAIRS = ["'cupy vs numpy'", "'numpy vs opencv 1 thread'"]
MODES = ["'16-frame batch'", "'single call'"]


def _write_result(folder: Path, commit: str, date: int, values: list, machine: str = "box") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    data = {
        "commit_hash": commit * 5, "env_name": "existing", "date": date, "version": 2,
        "params": {"machine": machine, "cpu": "Test CPU", "num_cpu": "2", "os": "Linux"},
        "result_columns": ["result", "params", "version"],
        "results": {_dashboard.SPEEDUP: [values, [OPS, PAIRS, MODES], "abc"]},
    }
    (folder / f"{commit}-existing.json").write_text(json.dumps(data))


def test_page_shows_the_newest_speedups_per_machine_and_domain(tmp_path):
    results, html_dir = tmp_path / "results", tmp_path / "html"
    html_dir.mkdir()
    # op x pair x mode, row-major: rgb_to_gray (cupy/numpy batch, single; numpy/opencv batch, single), ...
    _write_result(results / "gpu", "aaaaaaaa", 1, [1.0] * 8, "gpu")
    _write_result(results / "gpu", "bbbbbbbb", 2, [40.0, 7.5, None, None, 120.0, 11.0, 0.05, None], "gpu")
    _write_result(results / "cpu", "cccccccc", 3, [None, None, 0.09, None, None, None, float("nan"), None], "cpu")
    (results / "empty").mkdir()
    path = _dashboard.speedup_page(results, html_dir)
    page = path.read_text()
    assert path.name == "speedups.html" and "<script" not in page and not re.search(r'(src|href)="https?:', page)
    sections = {part.split("</h2>", 1)[0]: part for part in page.split("<h2>")[1:]}
    gpu, cpu = sections["gpu"], sections["cpu"]
    assert "bbbbbbbb" in page and "aaaaaaaa" not in page  # the newest commit of a machine
    assert "1.0x" in gpu  # a value only the older commit measured is still shown
    assert "<h2>empty</h2>" not in page
    assert page.count("<h3>color</h3>") == 2 and page.count("<h3>filters</h3>") == 1  # cpu: only color measured
    assert "40.0x" in gpu and "120x" in gpu and "0.05x" in gpu
    assert "7.5x" in gpu and "single synchronized call" in gpu
    assert "0.09x" in cpu and cpu.count("<svg") == 1
    assert gpu.count("<svg") == 2
    link = re.search(r'href="(index\.html#bench_speedup\.Speedup\.track_speedup\?[^"]+)"', gpu).group(1)
    assert "machine=gpu" in link and "y-axis-scale=log" in link and "p-op=%27color.rgb_to_gray%27" in link and "p-pair=%27cupy%20vs%20numpy%27" in link


def test_no_speedup_results_no_page(tmp_path):
    (tmp_path / "results" / "box").mkdir(parents=True)
    assert _dashboard.speedup_page(tmp_path / "results", tmp_path) is None


def test_serve_rejects_a_bad_port():
    out = subprocess.run([sys.executable, "-m", "portcv", "bench", "--serve", "--port", "70000"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--port" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_serve_publishes_and_serves_on_localhost(tmp_path):
    """``portcv bench --serve --port 0`` builds the dashboard from the committed results and serves
    it on 127.0.0.1: the printed URL answers with the landing page (or asv's index)."""
    pytest.importorskip("asv")
    if not (ROOT / ".git").exists():
        pytest.skip("asv publish needs the git history of the results' commits")
    proc = subprocess.Popen([sys.executable, "-m", "portcv", "bench", "--serve", "--port", "0", "--html",
                             str(tmp_path / "site"), "--asv-dir", str(ROOT / "asv_bench")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        url = None
        for _ in range(400):  # bounded: asv publish prints a few hundred lines at most
            line = proc.stdout.readline()
            if not line:
                break
            match = re.search(r"serving the dashboard at (http://127\.0\.0\.1:\d+/\S*)", line)
            if match:
                url = match.group(1)
                break
        assert url, "no URL printed"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode()
        assert response.status == 200 and ("portcv speedups" in body or "airspeed velocity" in body.lower())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


_SERVE_WITHOUT_ASV = """
import signal, sys
from pathlib import Path
import portcv.cli as cli
import portcv.cli._bench as bench_command

# As a terminal's foreground process has it (a backgrounded test runner ignores SIGINT, and its
# children inherit that).
signal.signal(signal.SIGINT, signal.default_int_handler)


def publish(args):  # the dashboard without asv: one page in the folder `bench --serve` made
    (Path(args.html) / "index.html").write_text("portcv")
    return 0


bench_command.bench_html = publish
sys.exit(cli.main(["bench", "--serve", "--port", "0"]))
"""


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_serve_removes_its_temporary_folder_when_stopped(signum, tmp_path):
    """A SIGTERM'd ``portcv bench --serve`` left its ``portcv-dashboard-*`` folder behind: the
    signal killed the process before the temporary folder's cleanup could run."""
    import os
    import signal

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _SERVE_WITHOUT_ASV], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, TMPDIR=str(tmp)))
    try:
        line = proc.stdout.readline()
        assert "serving the dashboard at http://127.0.0.1:" in line, line + proc.stdout.read()
        assert [p.name[:17] for p in tmp.iterdir()] == ["portcv-dashboard-"]
        proc.send_signal(getattr(signal, signum))
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
    assert "stopped" in proc.stdout.read()
    assert list(tmp.iterdir()) == []


def test_serve_into_a_given_folder_makes_no_temporary_one(tmp_path, monkeypatch):
    import tempfile

    from portcv import cli
    from portcv.cli import _bench as bench_command

    def publish(args):
        raise SystemExit(f"published into {args.html}")

    monkeypatch.setattr(bench_command, "bench_html", publish)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", None)  # would raise TypeError if called
    with pytest.raises(SystemExit, match=f"published into {tmp_path}"):
        cli.main(["bench", "--serve", "--html", str(tmp_path)])
