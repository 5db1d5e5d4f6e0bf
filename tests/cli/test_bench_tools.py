"""The benchmark tooling without a browser: vendored dashboard assets, the offline rewrite,
``portcv bench``, and tools/benchmark_report.py on made-up asv results."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import portcv
from portcv import cli
from portcv.cli import _bench_ops as _benchmarks

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "asv_bench" / "vendor"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(f"portcv_tools_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _manifest() -> list[dict]:
    return json.loads((VENDOR / "manifest.json").read_text())["assets"]


def _asv_www() -> Path:
    asv = pytest.importorskip("asv")
    return Path(asv.__file__).parent / "www"


# --------------------------------------------------------------------------------------------
# Vendored assets and tools/asv_offline.py
# --------------------------------------------------------------------------------------------
def test_vendored_assets_exist_with_their_licenses():
    for asset in _manifest():
        assert (VENDOR / asset["local"]).is_file(), asset["local"]
        assert (VENDOR / asset["license_file"]).is_file(), asset["license_file"]
        assert asset["license"] == "MIT"


def test_manifest_covers_every_cdn_asset_of_the_installed_asv():
    """A new asv with a new CDN file fails here, naming it (asv_bench/vendor/README.md, Updating)."""
    index = (_asv_www() / "index.html").read_text()
    cdn = dict(re.findall(r'(?:src|href)="(https?://[^"]+)"[^>]*?integrity="([^"]+)"', index))
    assert cdn, "found no CDN assets in asv's index.html"
    listed = {a["cdn_url"]: a for a in _manifest()}
    assert set(cdn) <= set(listed), f"not vendored: {sorted(set(cdn) - set(listed))}"
    for url, integrity in cdn.items():
        asset = listed[url]
        algo, expected = integrity.split("-", 1)
        digest = base64.b64encode(hashlib.new(algo, (VENDOR / asset["local"]).read_bytes()).digest()).decode()
        assert (digest == expected) == asset["identical_to_cdn"], (url, asset["local"])


def test_asv_offline_rewrites_the_published_pages(tmp_path):
    site = tmp_path / "html"
    shutil.copytree(_asv_www(), site)
    offline = _tool("asv_offline")
    report = offline.make_offline(site)
    assert report["rewritten"] == [str(site / "index.html")]
    assert report["remote"] == []
    index = (site / "index.html").read_text()
    assert "integrity=" not in index and "cdnjs" not in index and "jsdelivr" not in index
    local = [u for u in re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', index) if u.startswith("vendor/")]
    assert len(local) == len(_manifest())
    for src in local:
        assert (site / src).is_file(), src
    assert offline.make_offline(site)["rewritten"] == []  # a second run changes nothing
    assert offline.main([str(site)]) == 0


def test_asv_offline_reports_unknown_remote_assets(tmp_path):
    offline = _tool("asv_offline")
    text = ('<script src="https://example.org/x.js"></script><link rel="stylesheet" href="//e.org/y.css">'
            '<a href="https://github.com/">ok</a>')
    new, replaced, remote = offline.rewrite_html(text, offline.load_manifest(), "vendor/")
    assert new == text and replaced == []
    assert remote == ["https://example.org/x.js", "//e.org/y.css"]
    (tmp_path / "index.html").write_text(text)
    assert offline.main([str(tmp_path)]) == 1
    assert offline.main([str(tmp_path / "missing")]) == 1


# --------------------------------------------------------------------------------------------
# portcv bench
# --------------------------------------------------------------------------------------------
def test_every_registered_operation_runs_on_numpy_and_opencv():
    rgb = portcv.data.synthetic_rgb(24, 32, seed=1)
    with portcv.using("numpy"):
        gray = portcv.to_numpy(portcv.color.rgb_to_gray(rgb))
        ops = _benchmarks.operations()
        names = [op.name for op in ops]
        assert {"rgb_to_gray", "gaussian_blur k5", "box_blur k5"} <= set(names)
        assert len(names) == len(set(names))
        try:
            import cv2
        except ImportError:
            cv2 = None
        for op in ops:
            x = rgb if op.kind == "rgb" else gray
            op.call(x)
            if op.opencv is not None and cv2 is not None:
                op.opencv(cv2, x)


def test_bench_prints_a_table(capsys, tmp_path):
    out = tmp_path / "bench.json"
    rc = cli.main(["bench", "--size", "64x48", "--backends", "numpy", "--ops", "gaussian_blur,rgb_to_gray",
                   "--repeat", "2", "--plain", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "gaussian_blur k5" in text and "rgb_to_gray" in text and "numpy ms" in text
    data = json.loads(out.read_text())
    assert data["size"] == "64x48"
    numpy_rows = [r for r in data["results"] if r["backend"] == "numpy"]
    assert numpy_rows and all(r["median_ms"] > 0 for r in numpy_rows)


def test_bench_compares_backends_bit_for_bit():
    ops = [op for op in _benchmarks.operations(["gaussian_blur k5"])]
    columns, results = _benchmarks.compare(ops, ["numpy", "jax"], width=40, height=30, repeat=1, opencv=False)
    assert columns[0] == "numpy"
    for r in results:
        assert r.error == "" and r.median_ms > 0
        if r.backend != "numpy":
            assert r.same_as_numpy is True
    speed = _benchmarks.speedups(results)
    assert speed[("gaussian_blur k5", "numpy")] == pytest.approx(1.0)


def test_bench_rejects_unknown_ops(capsys):
    assert cli.main(["bench", "--ops", "no-such-op", "--plain"]) == 2
    assert "no operation matches" in capsys.readouterr().err


def test_bench_html_needs_an_asv_folder(tmp_path):
    pytest.importorskip("asv")
    with pytest.raises(SystemExit, match="asv.conf.json"):
        cli.main(["bench", "--html", str(tmp_path / "site"), "--asv-dir", str(tmp_path)])


# --------------------------------------------------------------------------------------------
# tools/benchmark_report.py
# --------------------------------------------------------------------------------------------
BACKENDS = ["'numpy'", "'jax'", "'cupy'", "'opencv'", "'cupyx'"]
SIZES = ["'640x480'", "'1920x1080'", "'3840x2160'"]


def _write_results(results: Path, machine: str, commit: str, times: dict[str, list], gbs: dict[str, list]):
    (results / machine).mkdir(parents=True)
    benchmarks = {"version": 2}
    rows = {}
    for name, values in times.items():
        benchmarks[name] = {"param_names": ["backend", "size"], "type": "time"}
        rows[name] = [values, [BACKENDS, SIZES], "v", 0, 1.0]
    for name, values in gbs.items():
        benchmarks[name] = {"param_names": ["backend", "size"], "type": "track"}
        rows[name] = [values, [BACKENDS, SIZES], "v", 0, 1.0]
    (results / "benchmarks.json").write_text(json.dumps(benchmarks))
    (results / machine / "machine.json").write_text(json.dumps({"machine": machine, "cpu": "test cpu", "version": 1}))
    data = {"commit_hash": commit, "env_name": "existing-py", "date": 1700000000000, "params": {}, "python": "3.12",
            "requirements": {}, "env_vars": {}, "result_columns": ["result", "params", "version", "started_at",
                                                                    "duration"],
            "results": rows, "durations": {}, "version": 2}
    (results / machine / f"{commit[:8]}-existing-py.json").write_text(json.dumps(data))


def test_benchmark_report_tables_and_plots(tmp_path):
    report = _tool("benchmark_report")
    results = tmp_path / "results"
    nan = float("nan")
    # per backend (numpy, jax, cupy, opencv, cupyx) x size (640x480, 1920x1080, 3840x2160)
    times = [0.010, 0.040, 0.160, 0.005, 0.010, 0.020, 0.0001, 0.0002, 0.0004, 0.002, 0.008, 0.032,
             0.0002, None, nan]
    gbs = [0.1, 0.1, 0.1, 0.2, 0.4, 0.8, 100.0, 800.0, 1600.0, 1.0, 1.0, 1.0, nan, nan, nan]
    per_frame = [80.0, 300.0, 1200.0, 0.4, 1.2, 5.0, 0.2, 0.7, 2.5, None, None, None, None, None, None]
    _write_results(results, "h100", "abcdef0123456789", {"bench_filters.GaussianBlur.time_gaussian_blur": times},
                   {"bench_filters.GaussianBlur.track_gaussian_blur_bandwidth": gbs,
                    "bench_detect.MCTBatch.track_detect_ms_per_frame": per_frame})
    gpu_bench = tmp_path / "gpu_bench.json"
    gpu_bench.write_text(json.dumps({"device": "test GPU", "copy_GBps": 3200.0, "ops": [
        {"op": "gaussian_blur k5", "size": "3840x2160", "bytes": 16588800, "cupy_batch8_ms_per_frame": 0.01,
         "cupy_GBps": 1658.9, "roofline_fraction": 0.518}]}))
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nprose\n\n{report.START}\nold\n{report.END}\n\nmore prose\n")
    img = tmp_path / "img"
    args = ["--results", str(results), "--doc", str(doc), "--img", str(img), "--gpu-bench", str(gpu_bench)]
    assert report.main(args) == 0
    text = doc.read_text()
    assert "old" not in text and "more prose" in text and text.count(report.START) == 1
    assert "### Machine `h100`" in text and "commit `abcdef01`" in text
    assert "| `GaussianBlur.time_gaussian_blur` | 3840x2160 | 160 ms | 20.00 ms (8.0x) | 400 µs (400x) |" in text
    # The per-frame table, in the benchmark's unit (ms) read as time, beside NumPy's one frame a call.
    assert "| `MCTBatch.track_detect_ms_per_frame` | 1920x1080 | 300 ms | 1.20 ms (250x) | 700 µs (429x) |" in text
    assert "MCTBatch" not in text.split("Achieved bandwidth")[1]  # not read as a bandwidth
    assert "1600.0 (50%)" in text  # cupy GB/s and its fraction of the 3200 GB/s copy bandwidth
    assert "| gaussian_blur k5 | 3840x2160 |" in text
    assert report.main(args) == 0  # idempotent
    assert doc.read_text() == text
    if importlib.util.find_spec("matplotlib") is not None:
        for name in ("speedup_vs_pixels.png", "roofline.png"):
            assert (img / name).stat().st_size > 10_000
        assert "(img/speedup_vs_pixels.png)" in text


def test_benchmark_report_merges_partial_runs(tmp_path):
    """A newer run that measured only some benchmarks (a GPU run cut to fit its budget) replaces
    those values and keeps the older commit's for the rest; --commit reads one commit only."""
    report = _tool("benchmark_report")
    results = tmp_path / "results"
    old = [0.010, 0.040, 0.160] + [0.001] * 12
    _write_results(results, "h100", "aaaaaaaa11111111", {"bench_a.A.time_a": old, "bench_b.B.time_b": old}, {})
    data = json.loads((results / "h100" / "aaaaaaaa-existing-py.json").read_text())
    newer = [None] * 6 + [0.0005, 0.0005, 0.0005] + [None] * 6  # cupy only, bench_b only
    data.update(commit_hash="bbbbbbbb22222222", date=data["date"] + 1,
                results={"bench_b.B.time_b": [newer, [BACKENDS, SIZES], "v", 0, 1.0]})
    (results / "h100" / "bbbbbbbb-existing-py.json").write_text(json.dumps(data))
    (run,) = report.load_runs(results)
    assert run.commits == ["aaaaaaaa11111111", "bbbbbbbb22222222"] and run.commit == "bbbbbbbb22222222"
    assert run.values["bench_b.B.time_b"][1][("cupy", "640x480")] == 0.0005  # the newer value
    assert run.values["bench_b.B.time_b"][1][("numpy", "640x480")] == 0.010  # kept from the older run
    assert run.values["bench_a.A.time_a"][1][("cupy", "640x480")] == 0.001
    (only,) = report.load_runs(results, commit="aaaaaaaa")
    assert only.commits == ["aaaaaaaa11111111"] and only.values["bench_b.B.time_b"][1][("cupy", "640x480")] == 0.001


def test_benchmark_report_without_markers_appends_a_section(tmp_path):
    report = _tool("benchmark_report")
    results = tmp_path / "results"
    results.mkdir()
    doc = tmp_path / "b.md"
    doc.write_text("# B\n")
    assert report.main(["--results", str(results), "--doc", str(doc), "--no-plots"]) == 0
    text = doc.read_text()
    assert text.startswith("# B\n") and report.START in text and "No results committed yet." in text
    assert report.main(["--results", str(tmp_path / "none"), "--doc", str(doc)]) == 1


def test_benchmark_report_reads_asv_nan_and_null():
    report = _tool("benchmark_report")
    assert report._finite(1.0) and not report._finite(float("nan")) and not report._finite(None)
    assert report._pixels("1920x1080") == 1920 * 1080 and report._pixels("big") is None
    assert np.isclose(report._pixels("640x480"), 307200)
