"""Regenerate the committed files that a program writes, or check that they are current.

    python -m tools.regenerate --list                  # the targets, what each writes, what checking costs
    python -m tools.regenerate TARGET [TARGET ...]     # rewrites those targets' files
    python -m tools.regenerate --check [TARGET ...]    # exits 1 if one is stale; writes nothing
                                                       # (no TARGET: every cheap target)

Run from the repository root. Each generator is a module of ``tools/generators/`` (or, for the
figures, a script beside the image it draws in ``docs/img/``, and ``tools/benchmark_report.py``,
which ``portcv``'s tests load by that path), run in a child process with the command line it
always took. ``tests/test_tools.py`` runs ``--check`` of the cheap targets, and names the
others as skipped with the reason.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    """A generator: the command that writes its files, and how (whether) ``--check`` tests them."""

    writes: str
    command: tuple[str, ...]
    #: Why ``--check`` does not run it by default (slow, needs data); "" for a cheap target.
    check_cost: str = ""
    #: Why its output cannot be checked at all (not byte-reproducible); "" if it can.
    uncheckable: str = ""


def _module(name: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", f"tools.generators.{name}", *args)


def _figure(name: str) -> tuple[str, ...]:
    return (sys.executable, str(ROOT / "docs" / "img" / f"{name}_figure.py"))


_PNG = "a matplotlib PNG: its bytes change with matplotlib's and FreeType's versions"

TARGETS: dict[str, Target] = {
    "median-networks": Target("src/portcv/filters/_median.cu (its circuit blocks), _median_networks.py and "
                              "_median_tiles_numba.py",
                              _module("median_networks")),
    "support-table": Target("docs/backends.md (the backend support table)", _module("support_table")),
    "golden": Target("src/portcv/_golden.json (the SHA-256 of each golden case's output on NumPy: portcv verify)",
                     _module("golden")),
    "benchmark-report": Target("docs/benchmarks.md (between the benchmark-report markers), docs/img/speedup_vs_pixels.png "
                               "and docs/img/roofline.png, from asv_bench/results",
                               (sys.executable, str(ROOT / "tools" / "benchmark_report.py"))),
    "mct-cascade": Target("src/portcv/detect/data/mct_frontalface_24.npz (the bundled MCT face cascade)",
                          _module("train_mct"),
                          check_cost="retrains the cascade (tens of minutes on 2 cores) and needs the CSU ScrapShots "
                                     "and pyvision photos in the user cache (portcv.data fetches them); the meta records the "
                                     "package versions, so it matches only with the versions it names"),
    "depth-figure": Target("docs/img/depth-dcbf.png, docs/img/depth-propagation.png", _figure("depth"), uncheckable=_PNG),
    "lbp-figure": Target("docs/img/recognize-lbp.png", _figure("lbp"), uncheckable=_PNG),
    "volume-figure": Target("docs/img/volume-gabor.png", _figure("volume"), uncheckable=_PNG),
    "zoom-figure": Target("docs/img/zoom-bilinear-vs-bspline.png", _figure("zoom"), uncheckable=_PNG),
}


def _run(command: tuple[str, ...]) -> int:
    return subprocess.call(command, cwd=ROOT)


def _same_cascade(produced: Path, committed: Path) -> bool:
    """Whether two saved MCT cascades hold the same arrays and the same meta but its ``tool``."""
    import json

    import numpy as np

    with np.load(produced) as a, np.load(committed) as b:
        if sorted(a.files) != sorted(b.files):
            return False
        meta = [json.loads(str(z["meta"])) for z in (a, b)]
        for m in meta:
            m.pop("tool", None)
        return meta[0] == meta[1] and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype
                                          for k in a.files if k != "meta")


def check(name: str) -> tuple[bool, str]:
    """``(current, message)`` for one target, writing nothing into the repository."""
    target = TARGETS[name]
    if target.uncheckable:
        raise ValueError(f"{name} cannot be checked: {target.uncheckable}")
    if name in ("median-networks", "support-table", "golden"):  # their generators compare in place
        done = subprocess.run((*target.command, "--check"), cwd=ROOT, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            return False, f"{name}: the generator failed:\n{done.stdout}{done.stderr}"
        return done.returncode == 0, f"{name}: {'current' if done.returncode == 0 else 'stale'} ({target.writes})"
    with tempfile.TemporaryDirectory() as tmp:
        if name == "benchmark-report":  # a copy of the doc rewritten, the plots drawn beside it
            doc = Path(tmp) / "benchmarks.md"
            shutil.copyfile(ROOT / "docs" / "benchmarks.md", doc)
            done = subprocess.run((*target.command, "--doc", str(doc), "--img", str(Path(tmp) / "img")), cwd=ROOT,
                                  capture_output=True, text=True)
            produced, committed = doc, ROOT / "docs" / "benchmarks.md"
            what = "docs/benchmarks.md's tables (the plots are not compared: " + _PNG + ")"
        elif name == "mct-cascade":
            produced = Path(tmp) / "mct.npz"
            done = subprocess.run((*target.command, "--out", str(produced)), cwd=ROOT, capture_output=True, text=True)
            committed = ROOT / "src" / "portcv" / "detect" / "data" / "mct_frontalface_24.npz"
            what = target.writes
            if done.returncode == 0:  # the meta's "tool" records the command line, here with its --out
                current = _same_cascade(produced, committed)
                return current, f"{name}: {'current' if current else 'stale'} ({what}; meta['tool'] not compared)"
        else:
            raise AssertionError(name)
        if done.returncode != 0:
            return False, f"{name}: the generator failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        current = filecmp.cmp(produced, committed, shallow=False)
        return current, f"{name}: {'current' if current else 'stale'} ({what})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.regenerate", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET")
    parser.add_argument("--check", action="store_true", help="check instead of writing; exit 1 if one is stale")
    parser.add_argument("--list", action="store_true", help="list the targets")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; --list lists them")
    if args.list or not (args.targets or args.check):
        for name, target in TARGETS.items():
            cost = target.uncheckable and f"not checked: {target.uncheckable}" or target.check_cost and (
                f"--check only when named: {target.check_cost}") or "--check by default"
            print(f"{name:17s} writes {target.writes}\n{'':17s} {cost}")
        return 0
    if not args.check:
        return max(_run(TARGETS[name].command) for name in args.targets)
    names = args.targets or [n for n, t in TARGETS.items() if not (t.check_cost or t.uncheckable)]
    stale = False
    for name in names:
        if TARGETS[name].uncheckable:
            print(f"{name}: not checked ({TARGETS[name].uncheckable})")
            continue
        current, message = check(name)
        print(message)
        stale |= not current
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
