"""House conventions of every public function, found by walking the package (as dm_pix's
``get_public_functions`` does), not from a hand-kept list; and the layout rules of the package."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import portcv
from portcv import _kernel

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(portcv.__file__).parent
DOMAINS = [getattr(portcv, name) for name in portcv.DOMAINS]
#: Domains whose functions are image operations (everything but ``distributed``, whose functions
#: map other ops over dask arrays, stores, video files and clusters, with dask's call shapes).
OP_DOMAINS = [mod for mod in DOMAINS if mod.__name__ != "portcv.distributed"]
PUBLIC = [
    (mod.__name__, name, vars(mod)[name])  # vars: a name made on first use (an optional dependency) is no function
    for mod in OP_DOMAINS
    for name in getattr(mod, "__all__", [])
    if inspect.isfunction(vars(mod).get(name))
]
#: The rule for a function's first parameter: it is the image, called ``image``, unless the
#: function takes no image first; then the parameter is named for what it is, and that name is
#: one of these, each allowed only in the domains whose inputs it names. So a new image op in
#: ``filters`` whose first parameter is ``img``, ``src``, ``x`` or ``frame`` fails.
FIRST_INPUTS = {
    # sizes, options and parameters: the function makes an image, a table or a kernel
    "height": ("a frame size (height, width)", {"data", "stream"}),
    "frames": ("a frame count, or an iterable of frames of a video", {"data", "video"}),
    "seed": ("a random seed (generated scenes)", {"data"}),
    "size": ("a crop size", {"data"}),
    "split": ("which part of a data set", {"data"}),
    "ksize": ("a kernel size", {"filters", "volume"}),
    "sigma": ("a Gaussian's sigma", {"filters"}),
    "normalizer": ("a colour table's scale", {"draw"}),
    "shape": ("an image shape (its grid or its packets)", {"motion", "stream"}),
    "index": ("a stream's frame index", {"stream"}),
    "video_shape": ("a video's shape (an error bound)", {"volume"}),
    "kernel": ("a float kernel to quantize", {"volume"}),
    "eyes": ("eye coordinates", {"data"}),
    # files and bytes
    "path": ("a file", {"detect", "video"}),
    "path_or_name": ("a file or a bundled cascade's name", {"detect"}),
    "cache": ("a cache folder", {"data"}),
    "data": ("bytes of a stream", {"stream"}),
    "seconds": ("per-frame timings", {"video"}),
    # arrays that are not one image
    "frame": ("a frame against a reference (a codec's, a stream's)", {"codec", "stream"}),
    "reference": ("the reference frame a delta applies to", {"codec"}),
    "hist": ("a histogram", {"color"}),
    "nv12": ("a decoder's NV12 frame: luma rows, then interleaved chroma rows", {"color"}),
    "yuv": ("an I420 (yuv420p) frame: luma rows, then the chroma planes", {"color"}),
    "rects": ("rectangles", {"detect"}),
    "detector": ("a detector run over frames", {"detect"}),
    "cascade": ("a cascade to save", {"detect"}),
    "positives": ("training windows", {"detect"}),
    "F": ("a feature matrix", {"distance"}),
    "x": ("float features to quantize", {"distance"}),
    "query": ("query histograms", {"recognize"}),
    "previous": ("the previous of two frames", {"draw"}),
    "gx": ("a gradient pair (gx, gy)", {"edges"}),
    "joint": ("the guide image of a joint filter (OpenCV's jointBilateralFilter order)", {"filters"}),
    "e1": ("the first of two edge maps", {"motion"}),
    "d": ("a difference map", {"motion"}),
    "density": ("a density grid", {"motion"}),
    "video": ("a video, frames first", {"motion", "volume"}),
    "levels": ("a pyramid's levels", {"transform"}),
    "depth": ("a depth map", {"depth"}),
    "disparity": ("a disparity map", {"depth"}),
}
#: Optional parameters that may be positional: the issue's signature of Lin et al.'s DCBF
#: (``dcbf(depth, color, ksize=11, sigma_space=3.0, sigma_color=20.0, *, ...)``).
POSITIONAL_DEFAULTS = {"dcbf": ("ksize", "sigma_space", "sigma_color")}


def test_every_domain_is_walked():
    assert {m.__name__ for m in DOMAINS} >= {f"portcv.{d}" for d in ("color", "filters", "transform", "edges", "motion",
                                                                        "codec", "stream", "draw", "video", "detect", "distance", "volume")}
    assert len(PUBLIC) >= 50


@pytest.mark.parametrize("module, name, fn", PUBLIC, ids=[f"{m}.{n}" for m, n, _ in PUBLIC])
def test_public_function_conventions(module, name, fn):
    params = list(inspect.signature(fn).parameters.values())
    takes_image = bool(params) and params[0].name == "image"
    if not params:  # only a data loader takes nothing (its data set is fixed)
        assert module.split(".")[1] == "data", f"{module}.{name}: takes no input"
    elif not takes_image:
        first = params[0].name
        domain = module.split(".")[1]
        assert domain in FIRST_INPUTS.get(first, ("", ()))[1], (
            f"{module}.{name}: the image comes first and is called `image` (a first parameter that is no "
            f"image is named for what it is: {first!r} is not in FIRST_INPUTS for {domain})")
    assert "image" not in [p.name for p in params[1:]], f"{module}.{name}: the image comes first"
    for p in params:
        if (p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.KEYWORD_ONLY
                and p.name not in ("height", "width")  # sizes read like np.zeros's shape
                and p.name not in POSITIONAL_DEFAULTS.get(name, ())):
            pytest.fail(f"{module}.{name}: optional parameter {p.name!r} must be keyword-only")
    doc = inspect.getdoc(fn) or ""
    assert "Examples" in doc, f"{module}.{name}: docstring lacks Examples"
    if takes_image:
        assert "Parameters" in doc, f"{module}.{name}: docstring lacks Parameters"


def test_every_public_name_is_documented():
    text = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    missing = [f"{mod.__name__}.{n}" for mod in DOMAINS for n in getattr(mod, "__all__", [])
               if not re.search(rf"\b{re.escape(n)}\b", text)]
    assert not missing, f"not mentioned in docs/: {missing}"


def test_domain_packages_export_only_from_submodules():
    """Each domain's ``__init__`` re-exports names defined in its private modules (scikit-image's layout)."""
    for mod in DOMAINS:
        if not hasattr(mod, "__path__"):
            continue  # portcv.data is a module
        tree = ast.parse(Path(mod.__file__).read_text())
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                   and n.name not in ("__getattr__", "__dir__")]  # PEP 562 hooks: lazy names, defined elsewhere
        assert not defined, f"{mod.__name__}/__init__.py defines {defined}; define them in a submodule"
        for name in mod.__all__:
            try:
                present = hasattr(mod, name)
            except ImportError:  # made on first use from an optional dependency that is absent here
                present = True
            assert present, f"{mod.__name__}.__all__ names {name!r}, which is missing"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(absolute module, imported names)`` of every ``from ... import`` in ``path``."""
    package = ".".join(("portcv",) + path.relative_to(SRC).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            out.append((".".join(base + ([node.module] if node.module else [])), [a.name for a in node.names]))
    return out


def _domain(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_private_name_crosses_a_domain():
    """A domain may use another domain's public names and the internal API of its private
    modules (kernels, plans), but never an underscore name: shared helpers belong in the core
    (the package root's private modules, whose names every domain may use, and ``backends``)."""
    offences = []
    for path in SRC.rglob("*.py"):
        here = _domain(".".join(("portcv",) + path.relative_to(SRC).with_suffix("").parts))
        for module, names in _imports(path):
            there = _domain(module)
            if there in ("", "backends") or there.startswith("_") or there == here:
                continue
            bad = [n for n in names if n.startswith("_") and not (SRC / there / f"{n}.py").exists()]
            if bad:
                offences.append(f"{path.relative_to(SRC)}: from {module} import {bad}")
    assert not offences, offences


def test_top_level_holds_only_the_core():
    """Beside the package's own files and ``data.py``, the top level holds only private modules:
    the core every domain shares (``_kernel``, ``_validate``, ``_border``, helpers of two domains)."""
    modules = {p.name for p in SRC.glob("*.py")} - {"__init__.py", "__main__.py", "data.py"}
    assert all(name.startswith("_") for name in modules), sorted(n for n in modules if not n.startswith("_"))
    alone = [p.name for p in SRC.glob("*.cu") if not p.with_suffix(".py").is_file()]
    assert not alone, f"CUDA sources sit beside their launchers: {alone}"


#: Calls that may take a backend's name: the family an override registers for, and switching to a
#: backend (``using("numpy")``: run on the NumPy reference).
NAME_TAKING_CALLS = {"override", "using", "use"}


def _backend_name_uses(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """Where a backend's name is a value of the code, not a label: compared with (``==``, ``in``),
    a key of a table (``{"cupy": ...}``, ``COSTS["cupy"]``), a member of a tuple, list or set
    of names (``GPU_BACKENDS = ("cupy",)``), or an argument of a call other than
    :data:`NAME_TAKING_CALLS` (``get("jax")``, ``sys.modules.get("cupy")``)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and node.value in names):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Compare):
            out.append((node.lineno, "compared"))
        elif isinstance(parent, ast.Dict) and node in parent.keys:
            out.append((node.lineno, "a table key"))
        elif isinstance(parent, ast.Subscript) and parent.slice is node:
            out.append((node.lineno, "a table key"))
        elif isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
            out.append((node.lineno, "in a collection of names"))
        elif isinstance(parent, ast.Call) and node in parent.args:
            func = parent.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called not in NAME_TAKING_CALLS:
                out.append((node.lineno, f"passed to {called}()"))
    return out


def test_no_backend_name_comparison_outside_backends():
    """Backend policy is a property of the backend objects (``runs_on_host``, ``needs_gpu``,
    ``pallas_usable``, ``device_scope``, ...): outside ``backends/`` no code asks for a backend
    by its name, compares names, or keys a table by them."""
    names = {"numpy", "cupy", "jax"}
    hits = [f"{p.relative_to(SRC)}:{line}: {what}" for p in sorted(SRC.rglob("*.py")) if "backends" not in p.parts
            # _timing.py is no algorithm: it times each framework with its own clock (CUDA events on CuPy).
            and p.name != "_timing.py"
            for line, what in _backend_name_uses(ast.parse(p.read_text()), names)]
    assert not hits, "backend policy belongs on the backend objects:\n" + "\n".join(hits)


def test_the_backend_name_rule_catches_tables_and_tuples():
    code = ("a = b.name == 'cupy'\nCOSTS = {'cupy': 1}\nx = COSTS['jax']\nGPU = ('cupy',)\nget('jax')\n"
            "if name in ('numpy', 'jax'): pass\n"
            "@k.override('cupy')\ndef f(): pass\nwith using('numpy'): pass\n'cupy'\n")
    found = _backend_name_uses(ast.parse(code), {"numpy", "cupy", "jax"})
    assert [line for line, _ in found] == [1, 2, 3, 4, 5, 6, 6]


def test_import_portcv_is_light_and_domains_are_lazy():
    import subprocess
    import sys

    code = ("import sys, portcv; assert 'cupy' not in sys.modules and 'jax' not in sys.modules; "
            "assert 'portcv.detect' not in sys.modules; portcv.stream; portcv.detect; "
            "[getattr(portcv, d) for d in portcv.DOMAINS]; assert 'numba' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_backend_support_table_in_docs_is_current():
    """docs/backends.md carries the table :func:`portcv._kernel.support_table` makes from the
    overrides' declared capabilities; regenerate it with ``python -m tools.regenerate support-table``.
    (A fresh process: the table is made from the package as a user imports it.)"""
    import subprocess
    import sys

    tool = ROOT / "tools" / "generators" / "support_table.py"
    out = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"docs/backends.md's support table is stale: run python -m tools.regenerate support-table\n{out.stderr}"
    assert "| `portcv.filters.median_filter` | `median_filter` |" in (ROOT / "docs" / "backends.md").read_text()


def test_declined_overrides_are_counted_and_warned_once():
    k = _kernel.kernel("test_declines")(lambda xp, x, *, n: x + n)
    try:
        calls = []
        family = portcv.backend().family

        @k.override(family, supports="n < 3")
        def _maybe(x, *, n):
            calls.append(n)
            return x + n if n < 3 else NotImplemented

        assert k.has_override(portcv.backend())
        assert int(k(1, n=1)) == 2
        with pytest.warns(_kernel.PortableFallbackWarning, match="n < 3"):
            assert int(k(1, n=5)) == 6
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert int(k(1, n=7)) == 8  # warned once only
        assert _kernel.fallback_counts()[("test_declines", portcv.backend().name)] == 2
        assert calls == [1, 5, 7]
    finally:
        del _kernel.KERNELS["test_declines"]


def test_docs_and_docstrings_cite_what_users_have():
    """No reference to the project's internal notes (users do not have them), and every paper
    cited by its short name is defined in docs/references.md."""
    texts = {p: p.read_text() for p in list(SRC.rglob("*.py")) + list(SRC.rglob("*.cu"))
             + list((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]}
    bad = [str(p) for p, text in texts.items() if re.search(r"shared/|DESIGN\.md|\bDESIGN [A-Z]?\d|the Rice paper|webcam report\b", text)]
    assert not bad, bad
    references = (ROOT / "docs" / "references.md").read_text()
    for name in ("Del Vecchio et al.", "Webcam Streaming & Filters report", "Pertsau and Uvarov", "Tek's thesis", "Lin et al."):
        assert name in references
