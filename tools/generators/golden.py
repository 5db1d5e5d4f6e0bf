"""Write the golden table, ``src/portcv/_golden.json``: the SHA-256 of every golden case's output.

    python -m tools.regenerate golden          # rewrites the table
    python -m tools.regenerate --check golden  # exits 1 if the committed table and the code disagree

The cases are defined in ``src/portcv/_golden.py`` and run here on the NumPy reference, one
thread. A changed hash is a change of portcv's bits: commit the new table with the reason.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from portcv import _golden

    new = _golden.render_table(_golden.compute_table())
    old = _golden.TABLE_PATH.read_text() if _golden.TABLE_PATH.is_file() else ""
    if "--check" in sys.argv:
        sys.exit(0 if new == old else 1)
    _golden.TABLE_PATH.write_text(new)
