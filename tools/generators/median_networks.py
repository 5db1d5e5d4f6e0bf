"""Generate the min/max circuits of cuda/median.cu's tiled median kernel (k = 3, 5).

    python -m tools.regenerate median-networks          # rewrites the BEGIN/END blocks of median.cu
    python -m tools.regenerate median-networks --check  # exits 1 if median.cu is out of date

One circuit computes the k x k medians of a TX x TY tile of outputs (one channel) from its
(TX+k-1) x (TY+k-1) footprint, sharing work between the outputs as in A. Adams, "Fast median
filters using separable sorting networks" (SIGGRAPH 2021) and L. Sugy, "A fast parallel median
filtering algorithm using hierarchical tiling" (SIGGRAPH 2025): for a set of outputs, the
pixels common to all their windows (a rectangle, the "core") are sorted once by merging the
parent set's sorted core with the sorted columns it lacks (Batcher's odd-even merge), the set is
split in two along its longer side, and each single output finally selects rank k*k // 2 of
(core, rest of its window) with one min/max formula over two sorted lists. Column segments are
sorted by merging power-of-two-aligned halves, so overlapping segments share their parts.
Every gate is one min or one max; gates whose value no output needs are dropped (the "forgetful"
half of a compare-exchange). tests/filters/test_median.py proves the shipped circuits with the 0-1
principle.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FILTERS = Path(__file__).resolve().parents[2] / "src" / "portcv" / "filters"
MEDIAN_CU = FILTERS / "_median.cu"
MEDIAN_PY = FILTERS / "_median_networks.py"
MEDIAN_NUMBA_PY = FILTERS / "_median_tiles_numba.py"
#: Output rows per pass of the compiled circuits (a 1 x NUMBA_ROWS tile: two rows share their windows' common rows).
NUMBA_ROWS = 2
TILE_X, TILE_Y = 8, 2  # outputs per circuit; keep equal to median.cu's NETWORK_TX / NETWORK_TY


class Circuit:
    """Straight-line min/max gates over values 0 .. n_inputs-1 (inputs) and one value per gate."""

    def __init__(self, n_inputs: int):
        self.n_inputs = n_inputs
        self.gates: list[tuple[str, int, int]] = []
        self._index: dict[tuple[str, int, int], int] = {}

    def op(self, kind: str, a: int, b: int) -> int:
        if a == b:
            return a
        key = (kind, min(a, b), max(a, b))
        if key not in self._index:
            self._index[key] = self.n_inputs + len(self.gates)
            self.gates.append(key)
        return self._index[key]

    def exchange(self, a: int, b: int) -> tuple[int, int]:
        return self.op("min", a, b), self.op("max", a, b)


def merge(c: Circuit, a: list[int], b: list[int]) -> list[int]:
    """Batcher's odd-even merge of two sorted lists of any lengths (Knuth 5.3.4)."""
    if not a or not b:
        return list(a or b)
    if len(a) == 1 and len(b) == 1:
        return list(c.exchange(a[0], b[0]))
    v, w = merge(c, a[0::2], b[0::2]), merge(c, a[1::2], b[1::2])
    out, i = [v[0]], 0
    while i < len(w) and i + 1 < len(v):
        out += c.exchange(w[i], v[i + 1])
        i += 1
    return out + w[i:] + v[i + 1 :]


def select(c: Circuit, a: list[int], b: list[int], rank: int) -> int:
    """Element ``rank`` (0-based) of the union of sorted ``a`` and ``b``:
    min over i of max(a[i], b[rank-1-i]), where a[-1] = b[-1] = -inf and a term past either
    end (+inf) is left out."""
    terms = []
    for i in range(-1, rank + 1):
        j = rank - 1 - i
        if i >= len(a) or j >= len(b):
            continue
        terms.append(b[j] if i < 0 else a[i] if j < 0 else c.op("max", a[i], b[j]))
    out = terms[0]
    for t in terms[1:]:
        out = c.op("min", out, t)
    return out


def _split(lo: int, hi: int) -> int:
    """The boundary of the largest power-of-two-aligned block strictly inside (lo, hi)."""
    p = 1
    while 2 * p < hi - lo:
        p *= 2
    while not lo < (lo // p + 1) * p < hi:
        p //= 2
    return (lo // p + 1) * p


class TileCircuit:
    """Medians of outputs (x, y), x < tx, y < ty; input (row j, column f) of the footprint is
    value j * (tx + k - 1) + f; output (x, y) reads footprint columns x .. x+k-1, rows y .. y+k-1."""

    def __init__(self, k: int, tx: int, ty: int):
        self.k, self.tx, self.ty = k, tx, ty
        self.fw, self.fh = tx + k - 1, ty + k - 1
        self.c = Circuit(self.fw * self.fh)
        self._sorted: dict[tuple[int, int, int, int], list[int]] = {}
        self.outputs: dict[tuple[int, int], int] = {}
        self._solve(0, tx - 1, 0, ty - 1, None, None)

    def _rect(self, x0: int, x1: int, y0: int, y1: int) -> list[int]:
        """Sorted values of footprint columns [x0, x1) x rows [y0, y1)."""
        key = (x0, x1, y0, y1)
        if x0 >= x1 or y0 >= y1:
            return []
        if key not in self._sorted:
            if x1 - x0 == 1 and y1 - y0 == 1:
                res = [y0 * self.fw + x0]
            elif x1 - x0 == 1:
                s = _split(y0, y1)
                res = merge(self.c, self._rect(x0, x1, y0, s), self._rect(x0, x1, s, y1))
            else:
                s = _split(x0, x1)
                res = merge(self.c, self._rect(x0, s, y0, y1), self._rect(s, x1, y0, y1))
            self._sorted[key] = res
        return self._sorted[key]

    def _rest(self, rect, inner) -> list[int]:
        """Sorted values of ``rect`` minus ``inner`` (a sub-rectangle sharing its edges)."""
        if inner is None:
            return self._rect(*rect)
        x0, x1, y0, y1 = rect
        a0, a1, b0, b1 = inner
        res: list[int] = []
        for part in ((x0, a0, y0, y1), (a1, x1, y0, y1), (a0, a1, y0, b0), (a0, a1, b1, y1)):
            res = merge(self.c, res, self._rect(*part))
        return res

    def _solve(self, x0, x1, y0, y1, core, core_rect):
        k = self.k
        common = (x1, x0 + k, y1, y0 + k)  # pixels in every window of outputs [x0..x1] x [y0..y1]
        if x0 == x1 and y0 == y1:
            rest = self._rest(common, core_rect)
            rank = k * k // 2
            self.outputs[(x0, y0)] = rest[rank] if core is None else select(self.c, core, rest, rank)
            return
        if common[0] >= common[1] or common[2] >= common[3]:
            common = full = None
        elif core is None:
            full = self._rect(*common)
        else:
            full = merge(self.c, core, self._rest(common, core_rect))
        if x1 - x0 >= y1 - y0:
            m = (x0 + x1) // 2
            self._solve(x0, m, y0, y1, full, common)
            self._solve(m + 1, x1, y0, y1, full, common)
        else:
            m = (y0 + y1) // 2
            self._solve(x0, x1, y0, m, full, common)
            self._solve(x0, x1, m + 1, y1, full, common)

    def live_gates(self) -> list[tuple[str, int, int, int]]:
        """(kind, dst, a, b) of the gates some output needs, renumbered densely after the inputs."""
        n = self.c.n_inputs
        need = set(self.outputs.values())
        for i in range(len(self.c.gates) - 1, -1, -1):
            if n + i in need:
                need.update(self.c.gates[i][1:])
        renum = {v: v for v in range(n)}
        out = []
        for i, (kind, a, b) in enumerate(self.c.gates):
            if n + i in need:
                renum[n + i] = n + len(out)
                out.append((kind, renum[n + i], renum[a], renum[b]))
        self.renumbered_outputs = {xy: renum[v] for xy, v in self.outputs.items()}
        return out


def emit(k: int) -> str:
    t = TileCircuit(k, TILE_X, TILE_Y)
    gates = t.live_gates()
    items = [f"{kind.upper()}({d}, {a}, {b})" for kind, d, a, b in gates]
    items += [f"OUT({x}, {y}, {v})" for (x, y), v in sorted(t.renumbered_outputs.items(), key=lambda i: i[0][::-1])]
    lines, line = [], "   "
    for item in items:
        if len(line) + len(item) + 1 > 110:
            lines.append(line + " \\")
            line = "   "
        line += " " + item
    lines.append(line)
    values = t.c.n_inputs + len(gates)
    head = (f"// tile{k}: {len(gates)} gates for {TILE_X * TILE_Y} outputs ({len(gates) / (TILE_X * TILE_Y):.1f} per output),"
            f" {t.c.n_inputs} inputs, {values} values\n")
    return head + f"#define PORTCV_MEDIAN_TILE{k}_VALUES {values}\n" + \
        f"#define PORTCV_MEDIAN_TILE{k}(MIN, MAX, OUT) /* BEGIN tile{k} */ \\\n" + "\n".join(lines) + f" /* END tile{k} */\n"


def render(text: str) -> str:
    for k in (3, 5):
        block = emit(k)
        pattern = re.compile(rf"// tile{k}: .*?/\* END tile{k} \*/\n", re.S)
        if not pattern.search(text):
            raise SystemExit(f"median.cu has no tile{k} block")
        text = pattern.sub(lambda _: block, text)
    return text


def render_python() -> str:
    """``_median_networks.py``: per k, the live gates ``(kind, dst, a, b)`` and the output values."""
    # The header keeps the generator's former path: rewording it rewrites the committed
    # _median_networks.py, a source change left to the commit that touches src/portcv/filters.
    out = ['"""Generated by tools/median_networks.py (do not edit): the min/max circuits of the tiled median.',
           "",
           "``CIRCUITS[k] = (gates, outputs)``: each gate ``(kind, d, a, b)`` sets value ``d`` to the min or max",
           "of values ``a`` and ``b``, in order, after the inputs (footprint cell ``(j, f)`` is input",
           "``j * (TILE_X + k - 1) + f``); ``outputs[(x, y)]`` holds the median of output ``(x, y)``. The same",
           'circuits, as C macros, are in ``_median.cu``.', '"""', "",
           f"TILE_X, TILE_Y = {TILE_X}, {TILE_Y}", "", "CIRCUITS = {"]
    for k in (3, 5):
        t = TileCircuit(k, TILE_X, TILE_Y)
        gates = t.live_gates()
        out.append(f"    {k}: (")
        out.append("        (")
        line = "           "
        for kind, d, a, b in gates:
            item = f" ({kind.upper()!r}, {d}, {a}, {b}),"
            if len(line) + len(item) > 110:
                out.append(line)
                line = "           "
            line += item
        out.append(line)
        out.append("        ),")
        outs = sorted(t.renumbered_outputs.items(), key=lambda i: i[0][::-1])
        out.append("        {" + ", ".join(f"({x}, {y}): {v}" for (x, y), v in outs) + "},")
        out.append("    ),")
    out.append("}")
    return "\n".join(out) + "\n"


def render_numba() -> str:
    """``_median_tiles_numba.py``: a 1 x NUMBA_ROWS tile circuit per k as straight-line Numba code.

    ``rows_k{k}`` computes NUMBA_ROWS output rows at a time from padded rows: one loop along the
    row whose body is the whole circuit on local variables (the window's k * (k + 1) inputs read
    from k + 1 padded rows at constant offsets), which LLVM vectorizes whole (one SIMD min/max per
    gate, the values in registers). Measured on 1080p: faster than the 8 x 2 tile circuits run over
    deinterleaved planes (their transposes in and out cost more than the gates they save)."""
    ty = NUMBA_ROWS
    out = ['"""Generated by tools/generators/median_networks.py (do not edit): the median\'s compiled circuits.',
           "",
           f"``rows_k{{k}}(padded, out, y0, y1)``: output rows ``y0:y1`` (``y0`` and ``y1`` multiples of {ty}) of one",
           "plane's k x k median, ``out`` ``(rows, W)`` and ``padded`` ``(rows + k - 1, W + k - 1)`` (the plane",
           f"padded by the border rule). Each pass takes {ty} rows; its body is the circuit of a 1 x {ty} tile",
           "(``TileCircuit(k, 1, " + str(ty) + ")`` of the generator: the rows' common window rows sorted once), every",
           "gate a local variable of one loop along the row, which LLVM vectorizes whole.",
           '"""', "", "import numba", "import numpy as np", "",
           "from ..backends.numpy import NUMBA_OPTIONS", "", f"ROWS = {ty}"]
    for k in (3, 5):
        t = TileCircuit(k, 1, ty)
        gates = t.live_gates()
        outs = [v for _, v in sorted(t.renumbered_outputs.items(), key=lambda i: i[0][::-1])]
        out += ["", "", "@numba.njit(**NUMBA_OPTIONS)",
                f"def rows_k{k}(padded: np.ndarray, out: np.ndarray, y0: int, y1: int) -> None:",
                "    width = out.shape[1]",
                f"    for y in range(y0, y1, {ty}):"]
        out += [f"        r{j} = padded[y + {j}]" for j in range(ty + k - 1)]
        out += [f"        o{j} = out[y + {j}]" for j in range(ty)]
        out += ["        for x in range(width):"]
        out += [f"            v{j * k + f} = r{j}[x + {f}]" for j in range(ty + k - 1) for f in range(k)]
        out += [f"            v{d} = {kind.lower()}(v{a}, v{b})" for kind, d, a, b in gates]
        out += [f"            o{j}[x] = v{v}" for j, v in enumerate(outs)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    old = MEDIAN_CU.read_text()
    new = render(old)
    old_py = MEDIAN_PY.read_text() if MEDIAN_PY.exists() else ""
    new_py = render_python()
    old_numba = MEDIAN_NUMBA_PY.read_text() if MEDIAN_NUMBA_PY.exists() else ""
    new_numba = render_numba()
    if "--check" in sys.argv:
        sys.exit(0 if (new == old and new_py == old_py and new_numba == old_numba) else 1)
    MEDIAN_CU.write_text(new)
    MEDIAN_PY.write_text(new_py)
    MEDIAN_NUMBA_PY.write_text(new_numba)
