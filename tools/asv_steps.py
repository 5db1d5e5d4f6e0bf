"""Print the steps of tools/gpu_asv.sh, one "label|regex" line per step.

One step is CHUNK benchmark classes, in the order of asv_bench/results/benchmarks.json, so a
step cut off by the device's deadline loses only its few classes (asv saves results only when a
run ends). Parameter combinations whose first value is in SKIP (comma-separated, e.g. "numpy":
the CPU machine records NumPy) are left out; the regex keeps every other combination and every
benchmark without parameters.

    python tools/asv_steps.py CHUNK [SKIP]
"""

import json
import re
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "asv_bench" / "results" / "benchmarks.json"


def steps(chunk: int, skip: list[str]) -> list[str]:
    names = [name for name in json.loads(BENCHMARKS.read_text()) if name != "version"]
    classes = list(dict.fromkeys(name.rsplit(".", 1)[0] for name in names))
    # asv matches a parameterized benchmark as "module.Class.method('cupy', '640x480')"
    first_value = "" if not skip else "(?!%s)" % "|".join(re.escape(f"'{s}'") for s in skip)
    lines = []
    for start in range(0, len(classes), chunk):
        part = classes[start:start + chunk]
        label = " ".join(c.split(".", 1)[1] for c in part)
        alternatives = "|".join(re.escape(c) for c in part)
        lines.append(f"{label}|^({alternatives})\\.[^(]+(\\({first_value}|$)")
    return lines


if __name__ == "__main__":
    chunk = int(sys.argv[1])
    skip = [s for s in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if s]
    print("\n".join(steps(chunk, skip)))
