"""The shape of the package's import graph: imports run one way, and a domain reaches another
domain only through its public names.

The graph is read from the sources (no import runs): its nodes are the modules of
``src/portcv`` (a package is its ``__init__.py``), its edges every ``import`` and ``from ...
import`` statement of a module, at module level or inside a function (a function-level import
is a dependency too, only a later one), relative ones resolved. ``from package import name``
points at the submodule ``package.name`` where one exists, else at ``package`` itself.

A **circle** is a cycle of these edges: module A imports B, B imports (through any chain) A.
Then whichever of them is imported first runs while the other is half-initialized, and one of
the two can only work because of the order they happen to be imported in (the trap the
``# noqa: E402`` imports at a module's end used to paper over). What is *not* an edge, so not a
circle by itself: Python importing a submodule's parent packages first. A package ``__init__``
that imports its submodules (the domain ``__init__`` importing the portable modules and their
CUDA/Pallas twins) therefore forms no circle; it does when one of those submodules imports
back a name the ``__init__`` defines (``from . import name`` of a non-module), or a module that
leads there.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import portcv

SRC = Path(portcv.__file__).parent


def _module_name(path: Path) -> str:
    parts = ("portcv",) + path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of portcv that one import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:  # import portcv.filters.x.y: the deepest module it names
            name = name.rpartition(".")[0]
        if name.split(".")[0] == "portcv":
            out.append(name)
    return out


@functools.lru_cache(maxsize=None)
def _graph() -> dict[str, dict[str, list[str]]]:
    """``{module: {imported module: ["path:line: statement", ...]}}``."""
    graph: dict[str, dict[str, list[str]]] = {name: {} for name in MODULES}
    for name, path in MODULES.items():
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                statement = " ".join(str(ast.get_source_segment(text, node)).split()).replace("( ", "(")
                where = f"{path.relative_to(SRC.parent)}:{node.lineno}: {statement}"
                for target in dict.fromkeys(_targets(name, node)):
                    graph[name].setdefault(target, []).append(where)
    return graph


def _circles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing
    itself): every module of one reaches every other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    out.append(sorted(component))
    return out


def test_the_import_graph_has_no_circle():
    graph = _graph()
    report = []
    for component in _circles(graph):
        members = set(component)
        lines = [line for m in component for target, where in sorted(graph[m].items()) if target in members
                 for line in where]
        report.append(" <-> ".join(component) + "\n    " + "\n    ".join(lines))
    assert not report, "import circles (each with the imports that close it):\n" + "\n".join(report)


def test_the_graph_sees_function_level_and_relative_imports():
    graph = _graph()
    assert "portcv.backends" in graph["portcv.depth._propagate"]  # from ..backends import ...
    assert "portcv._validate" in graph["portcv.depth._propagate"]  # from .. import _validate
    assert "portcv.backends.jax" in graph["portcv.depth._propagate"]  # inside a function
    assert "portcv.transform._zoom_cuda" in graph["portcv.transform"]  # from . import twin
    assert "portcv._bilateral_cuda" in graph["portcv.filters"]  # from .. import core twin
    assert _circles({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}) == [["a", "b", "c"]]


def _domain(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _is_private_module_of_a_domain(module: str) -> bool:
    """``portcv.<domain>.<...>._name``: private to its domain (``portcv._name``, the top-level
    core, is every domain's)."""
    return any(part.startswith("_") for part in module.split(".")[2:])


def test_no_domain_imports_another_domains_private_module():
    """A domain reaches another through its public names; a helper two domains share lives in a
    top-level private module (``portcv/_<name>.py``, the core)."""
    offences = []
    for name, targets in _graph().items():
        for target, where in sorted(targets.items()):
            if _is_private_module_of_a_domain(target) and _domain(target) != _domain(name):
                offences += where
    assert not offences, "imports of another domain's private module:\n" + "\n".join(sorted(offences))


def test_private_module_rule():
    assert _is_private_module_of_a_domain("portcv.filters._separable")
    assert _is_private_module_of_a_domain("portcv.detect.mct._train")
    assert not _is_private_module_of_a_domain("portcv._kernel")
    assert not _is_private_module_of_a_domain("portcv.backends.jax")


@functools.lru_cache(maxsize=None)
def _top_level_names(path: Path) -> frozenset[str]:
    """Names a module binds at its top level (definitions, assignments, imports), read from its source."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.If, ast.Try)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update((alias.asname or alias.name).split(".")[0] for alias in sub.names)
    return frozenset(names)


def test_every_imported_name_exists():
    """Each ``from portcv... import name`` names a submodule or something the module binds: a
    function-level import on a GPU-only path (a CuPy launcher) fails only when it runs, so a moved
    helper whose importer was not updated is caught here, on any machine."""
    missing = []
    for name, path in MODULES.items():
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom):
                continue
            targets = _targets(name, node)
            if not targets:
                continue
            for alias, target in zip(node.names, targets):
                if target.endswith(f".{alias.name}"):  # a submodule
                    continue
                bound = _top_level_names(MODULES[target])
                if alias.name not in bound and "__getattr__" not in bound:
                    missing.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {alias.name} is not in {target}")
    assert not missing, "imports of names their module does not have:\n" + "\n".join(missing)


def test_every_global_a_function_reads_is_defined():
    """Every global name a function of a portcv module reads is bound in that module (or a
    builtin): code moved between modules (a CuPy override into its twin) that still names a
    helper of its old module fails here, not on the first GPU run."""
    import builtins
    import dis
    import importlib
    import types

    def code_objects(code: types.CodeType):
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                yield const
                yield from code_objects(const)

    unbound = []
    for name, path in MODULES.items():
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        for code in code_objects(compile(path.read_text(), str(path), "exec")):
            for instruction in dis.get_instructions(code):
                if instruction.opname == "LOAD_GLOBAL":
                    glob = instruction.argval
                    if glob not in vars(module) and not hasattr(builtins, glob):
                        unbound.append(f"{path.relative_to(SRC.parent)}: {code.co_name} reads {glob}")
    assert not unbound, "globals no module binds:\n" + "\n".join(sorted(set(unbound)))
