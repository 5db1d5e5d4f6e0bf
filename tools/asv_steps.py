"""Print the steps of tools/gpu_asv.sh, one "label|regex" line per step.

One step is CHUNK benchmark classes, in the order of asv_bench/results/benchmarks.json, so a
step cut off by the device's deadline loses only its few classes (asv saves results only when a
run ends). Parameter combinations whose first value is in SKIP (comma-separated, e.g. "numpy":
the CPU machine records NumPy) are left out; the regex keeps every other combination and every
benchmark without parameters. A class whose first parameter takes only SKIP values (a NumPy-only
benchmark such as TrainMCT) keeps them: it would run nothing otherwise. With MISSING (a machine
name), only the classes that have no result yet in asv_bench/results/MISSING/ are listed: how a
later session fills the gaps.

    python tools/asv_steps.py CHUNK [SKIP [MISSING]]
"""

import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "asv_bench" / "results"
BENCHMARKS = RESULTS / "benchmarks.json"


def recorded(machine: str) -> set[str]:
    """Benchmarks with a result in any commit's file of `machine`."""
    names = set()
    for path in (RESULTS / machine).glob("*-*.json"):
        names.update(json.loads(path.read_text()).get("results", {}))
    return names


def steps(chunk: int, skip: list[str], missing_on: str = "") -> list[str]:
    suite = json.loads(BENCHMARKS.read_text())
    names = [name for name in suite if name != "version"]
    if missing_on:
        done = recorded(missing_on)
        names = [name for name in names if name not in done]
    classes = list(dict.fromkeys(name.rsplit(".", 1)[0] for name in names))
    # asv matches a parameterized benchmark as "module.Class.method('cupy', '640x480')"
    first_value = "" if not skip else "(?!%s)" % "|".join(re.escape(f"'{s}'") for s in skip)
    # The values of each class's first parameter (asv stores them as reprs, e.g. "'numpy'").
    firsts: dict[str, set] = {}
    for name in names:
        if suite[name].get("params"):
            firsts.setdefault(name.rsplit(".", 1)[0], set()).update(suite[name]["params"][0])
    skipped = {repr(s) for s in skip}
    only_skipped = lambda cls: bool(skip) and cls in firsts and firsts[cls] <= skipped  # noqa: E731

    lines = []
    for start in range(0, len(classes), chunk):
        part = classes[start:start + chunk]
        label = " ".join(c.split(".", 1)[1] for c in part)
        pieces = [f"{re.escape(c)}\\.[^(]+(\\({'' if only_skipped(c) else first_value}|$)" for c in part]
        lines.append(f"{label}|^(?:{'|'.join(pieces)})")
    return lines


if __name__ == "__main__":
    chunk = int(sys.argv[1])
    skip = [s for s in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if s]
    print("\n".join(steps(chunk, skip, sys.argv[3] if len(sys.argv) > 3 else "")))
