"""The repository's tools: ``tools/regenerate.py --check`` finds every cheap generated file
current (the slow or uncheckable targets are listed as skipped, with the reason), every
measurement of ``tools/measure.py`` compiles and is reachable, no tool edits ``sys.path``, and
tools/README.md names every entry point that tools/ holds."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"


def _load(name: str):
    """``tools.<name>`` without importing the measurements (a test must not need ``tools`` on the path)."""
    spec = importlib.util.spec_from_file_location(f"portcv_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


regenerate = _load("regenerate")
measure = _load("measure")


def _reason_not_checked(name: str) -> str:
    target = regenerate.TARGETS[name]
    if target.uncheckable:
        return f"{name}: not checkable, {target.uncheckable}"
    if target.check_cost:
        return f"{name}: too slow for the suite, {target.check_cost} (python -m tools.regenerate --check {name})"
    if name == "benchmark-report" and importlib.util.find_spec("matplotlib") is None:
        return "benchmark-report: its check draws the plots, which needs matplotlib"
    return ""


@pytest.mark.parametrize("name", list(regenerate.TARGETS))
def test_committed_generated_files_are_current(name):
    """What ``python -m tools.regenerate --check NAME`` checks, target by target."""
    reason = _reason_not_checked(name)
    if reason:
        pytest.skip(reason)
    done = subprocess.run([sys.executable, "-m", "tools.regenerate", "--check", name], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"stale: run python -m tools.regenerate {name}\n{done.stdout}{done.stderr}"
    assert "current" in done.stdout


def test_regenerate_check_without_targets_runs_exactly_the_cheap_ones():
    cheap = [n for n in regenerate.TARGETS if not _reason_not_checked(n)]
    slow = [n for n, t in regenerate.TARGETS.items() if t.check_cost]
    uncheckable = [n for n, t in regenerate.TARGETS.items() if t.uncheckable]
    assert {"median-networks", "support-table"} <= set(cheap)
    assert slow == ["mct-cascade"]
    assert set(uncheckable) == {"depth-figure", "lbp-figure", "volume-figure", "zoom-figure"}
    with pytest.raises(ValueError, match="cannot be checked"):
        regenerate.check("zoom-figure")


@pytest.mark.parametrize("name", list(measure.MEASUREMENTS))
def test_every_measurement_compiles_and_is_listed(name):
    """The moved measurements (most need CUDA, so nothing runs them here) at least parse, and import
    CuPy only where they say they need a GPU."""
    file, gpu = measure.MEASUREMENTS[name]
    path = TOOLS / "measurements" / file
    assert path.is_file()
    if path.suffix == ".sh":
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
        return
    tree = ast.parse(path.read_text(), str(path))
    compile(tree, str(path), "exec")
    top_level = {a.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for a in node.names}
    top_level |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    if "cupy" in top_level:
        assert gpu, f"{file} imports CuPy at import time but is not marked as a GPU measurement"
    assert measure.summary(file), f"{file} has no docstring line to list"


def test_measure_lists_every_measurement_module():
    on_disk = {p.name for p in (TOOLS / "measurements").iterdir() if p.suffix in (".py", ".sh") and p.name != "__init__.py"}
    assert on_disk == {file for file, _ in measure.MEASUREMENTS.values()}
    done = subprocess.run([sys.executable, "-m", "tools.measure"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for name in measure.MEASUREMENTS:
        assert f"  {name} " in done.stdout
    bad = subprocess.run([sys.executable, "-m", "tools.measure", "no-such"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "no measurement 'no-such'" in bad.stderr


def test_measure_runs_a_measurement_with_its_own_command_line():
    """The dispatcher runs the module as ``__main__`` with the arguments after NAME (a host one,
    tiny: 6 frames of 64 x 48)."""
    done = subprocess.run([sys.executable, "-m", "tools.measure", "stream-bandwidth", "--size", "64x48", "--frames", "6"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("64x48, noise sigma 4.0, 6 frames")
    from portcv import stream

    assert [line.split(" |")[0] for line in done.stdout.splitlines()[3:]] == [f"| {e}" for e in stream.ENCODINGS]
    as_file = subprocess.run([sys.executable, str(TOOLS / "measure.py"), "stream-bandwidth"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert as_file.returncode == 2 and "python -m tools.measure" in as_file.stderr


SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*(\+?=|\[)")


def test_no_tool_edits_sys_path():
    """Entry points run as ``python -m tools.x`` from the repository root (or, for the figures, as
    scripts importing only the installed package): none needs to edit the import path."""
    scripts = [*TOOLS.rglob("*.py"), *(ROOT / "docs" / "img").glob("*.py")]
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in scripts for i, line in enumerate(p.read_text().splitlines(), 1)
                 if SYS_PATH_EDIT.search(line)]
    assert not offenders, offenders


def test_readme_names_every_entry_point():
    """tools/README.md's table has one row per entry point left in tools/, and there are at most a
    dozen."""
    rows = [line.split("|")[1] for line in (TOOLS / "README.md").read_text().splitlines() if line.startswith("| `")]
    entries = sorted(p.name for p in TOOLS.iterdir()
                     if p.is_file() and p.suffix in (".py", ".sh") and p.name != "__init__.py")
    for entry in entries:
        spelled = (f"tools/{entry}", f"tools.{entry.removesuffix('.py')} ")
        assert sum(any(s in row for s in spelled) for row in rows) == 1, f"tools/README.md: one row for {entry}"
    assert len(rows) == len(entries) <= 12, (rows, entries)
