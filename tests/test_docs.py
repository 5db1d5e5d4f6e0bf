"""The documentation as a reader meets it: README.md and docs/*.md.

- **Every fenced ``python`` block runs**, on any machine (CPU only too). A page's blocks run in
  order in one namespace, as a reader follows the page top to bottom (a later block may use what
  an earlier one defined, never what a block of another page did), in a fresh temporary working
  directory, so files an example writes land there. A block of ``>>>`` lines is a doctest: its
  outputs are compared. Each block is one test item (``tests/test_docs.py::test_block[docs/x.md:12]``);
  an item selected alone runs its page's earlier blocks first.
- Blocks that need a GPU pick the best available backend as the README does (``best = "cupy" if
  "cupy" in portcv.available_backends() else "numpy"``); one that cannot is marked with an HTML
  comment on the line before its fence, ``<!-- gpu-only: why -->``, and is skipped with that
  reason. A block that imports an optional package that is missing here (or switches to JAX
  without it) is skipped naming the package, and one whose data loader can neither find its
  archive in the cache nor download it (no network) is skipped with the loader's message. Skips
  are visible, never passes.
- **Every repository path the prose cites exists** (``src/...``, ``tests/...``, ``tools/...``,
  ``asv_bench/...``, ``docs/...``, and file names ending .py/.cu/.cuh/...; a bare or partial name
  must be the end of a tracked path).
- **docs/index.md's "What exists today" names every public name** of every domain's ``__all__``.
"""

from __future__ import annotations

import contextlib
import doctest
import fnmatch
import importlib
import importlib.util
import io
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: A fenced block: its indentation, its language, its body (up to the fence at the same indentation).
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
GPU_ONLY = re.compile(r"<!--\s*gpu-only:\s*(?P<reason>.*?)\s*-->\s*$")
#: Packages an example may import that portcv does not require (the extras).
#: CuPy is not among them: a block that needs a GPU is marked gpu-only, or it fails here.
OPTIONAL = ("jax", "dask", "distributed", "zarr", "tifffile", "xarray", "cv2", "imageio", "av",
            "skimage", "tqdm", "rich", "matplotlib", "asv")


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    gpu_only: str | None  # the reason, where the block is marked

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def is_doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        if match.group("lang") != "python":
            continue
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = GPU_ONLY.search(before)
        indent = match.group("indent")
        body = "".join(row[len(indent):] if row.startswith(indent) else row
                       for row in match.group("body").splitlines(keepends=True))
        blocks.append(Block(page, line, body, marked.group("reason") if marked else None))
    return blocks


BLOCKS = [block for page in PAGES for block in python_blocks(page)]


#: What a block needs without importing it: a switch to JAX, OpenCV's cascade files, video files.
IMPLIED = {r"""\.using\(\s*["']jax["']|\.use\(\s*["']jax["']""": ("jax",), r"haarcascade_": ("cv2",),
           r"portcv\.video\.(?:iter_frames|read_video|write_video|VideoWriter)": ("av", "imageio")}


def _missing_packages(code: str) -> list[str]:
    code = re.sub(r"#.*", "", code)  # comments mention backends a reader may switch to
    wanted = set(re.findall(r"^\s*(?:>>>\s*)?(?:import|from)\s+(\w+)", code, re.M))
    wanted |= {name for pattern, names in IMPLIED.items() if re.search(pattern, code) for name in names}
    return sorted(name for name in wanted & set(OPTIONAL) if importlib.util.find_spec(name) is None)


@dataclass
class PageRun:
    """One page's namespace and the blocks of it that have run."""

    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__main__"})
    done: set[int] = field(default_factory=set)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Page runs for this module; afterwards, the registries as they were (examples register a
    backend and a kernel of their own) and the process-wide backend."""
    import portcv
    from portcv import _kernel
    from portcv.backends import _REGISTRY

    backends, kernels, active = dict(_REGISTRY), dict(_kernel.KERNELS), portcv.backend().name
    runs: dict[Path, PageRun] = {}
    with contextlib.ExitStack() as scratch:
        if importlib.util.find_spec("dask") is not None:  # a cluster's scratch space, not the user's temp folder
            import dask

            scratch.enter_context(dask.config.set({"temporary-directory": str(tmp_path_factory.mktemp("dask"))}))
        yield runs, tmp_path_factory
    _REGISTRY.clear()
    _REGISTRY.update(backends)
    _kernel.KERNELS.clear()
    _kernel.KERNELS.update(kernels)
    portcv.use(active)


def _run(block: Block, namespace: dict[str, Any]) -> None:
    if block.is_doctest:
        test = doctest.DocTestParser().get_doctest(block.code, namespace, block.name, str(block.page), block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        report = io.StringIO()
        runner.run(test, out=report.write, clear_globs=False)
        namespace.update(test.globs)  # a DocTest runs in a copy: later blocks of the page see its names
        if runner.failures:
            pytest.fail(f"{block.name}: doctest failed\n{report.getvalue()}", pytrace=False)
    else:
        exec(compile(block.code, block.name, "exec"), namespace)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_block(block: Block, pages, monkeypatch):
    import portcv

    runs, tmp_factory = pages
    page_blocks = [b for b in BLOCKS if b.page == block.page]
    if block.page not in runs:
        runs[block.page] = PageRun()
        runs[block.page].namespace["__file__"] = str(tmp_factory.mktemp("docs") / "example.py")
    run = runs[block.page]
    monkeypatch.chdir(Path(run.namespace["__file__"]).parent)
    active = portcv.backend().name
    try:
        for earlier in page_blocks[:page_blocks.index(block)]:  # when this item was selected alone
            if earlier.line not in run.done and not earlier.gpu_only and not _missing_packages(earlier.code):
                run.done.add(earlier.line)
                _run(earlier, run.namespace)
        run.done.add(block.line)
        if block.gpu_only:
            pytest.skip(f"{block.name}: gpu-only: {block.gpu_only}")
        missing = _missing_packages(block.code)
        if missing:
            pytest.skip(f"{block.name} needs {', '.join(missing)} (not installed here)")
        _run(block, run.namespace)
    except portcv.data.DataUnavailableError as exc:  # a loader with no network and nothing cached
        pytest.skip(f"{block.name} needs data this machine has not cached: {exc}")
    finally:
        portcv.use(active)


def test_the_pages_have_python_examples():
    assert len(BLOCKS) >= 25
    assert any(b.page.name == "README.md" for b in BLOCKS)


def test_gpu_only_blocks_give_a_reason():
    for block in BLOCKS:
        assert block.gpu_only is None or block.gpu_only.strip(), block.name


# --------------------------------------------------------------------------------------------
# Cited repository paths exist
# --------------------------------------------------------------------------------------------
#: Mentions that look like paths but are not the repository's, each with why.
NOT_REPOSITORY_PATHS = {
    "_pba_2d.py": "cupyx.scipy.ndimage's file, cited as the model",
    "asv_bench/env/": "made by asv run (git-ignored)",
}
TOP_FOLDERS = ("src", "tests", "tools", "asv_bench", "docs")
PATH = re.compile(
    r"(?<![\w./~:-])(?P<path>(?:\.\./)*(?:" + "|".join(TOP_FOLDERS) + r")/[\w./*<>-]*"
    r"|[\w./<>*-]*[\w>*]\.(?:py|cu|cuh|h|toml|cfg|sh|json)(?![\w]))")  # not the bare extension ".cu"


def _tracked() -> list[str]:
    # Tracked files plus the untracked ones git does not ignore: a copy of the working tree whose
    # git index is older than its files (the GPU machine's) still lists every file it holds.
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("needs the git checkout (git ls-files)")
    files = sorted(set(listed.stdout.split()))
    folders = {"/".join(f.split("/")[:k]) + "/" for f in files for k in range(1, f.count("/") + 1)}
    return files + sorted(folders)


def _prose_paths(page: Path) -> list[tuple[int, str]]:
    """Path-like mentions outside code blocks, and repository paths inside non-Python code blocks
    (shell lines name output files of their own, ``bench.json``, that need not exist)."""
    text = page.read_text()
    found = []
    spans = [(m.start(), m.end(), m.group("lang")) for m in FENCE.finditer(text)]
    for match in PATH.finditer(text):
        path = match.group("path").rstrip(".")
        inside = next((lang for start, end, lang in spans if start <= match.start() < end), None)
        if inside is not None and (inside == "python" or not path.lstrip("./").startswith(TOP_FOLDERS)):
            continue
        if path.startswith(("http", "/")) or "://" in text[max(0, match.start() - 12):match.start()]:
            continue
        found.append((text.count("\n", 0, match.start()) + 1, path))
    return found


def _resolves(path: str, page: Path, tracked: list[str]) -> bool:
    if path in NOT_REPOSITORY_PATHS:
        return True
    if path.startswith("../") or page.parent != ROOT and (page.parent / path).exists():
        path = os.path.relpath(os.path.normpath(page.parent / path), ROOT)
    pattern = re.sub(r"<[^>]+>", "*", path)
    candidates = (pattern, pattern + "/") if not pattern.endswith("/") else (pattern,)
    rooted = pattern.startswith(TOP_FOLDERS)
    return any(fnmatch.fnmatch(t, c) or (not rooted and fnmatch.fnmatch(t, "*/" + c))
               for t in tracked for c in candidates)


def test_every_cited_repository_path_exists():
    """The docs cited nine files that do not exist (``cuda/filters.cu``, ``oracles/color.py``, ...)."""
    tracked = _tracked()
    stale = [f"{page.relative_to(ROOT)}:{line}: {path}" for page in PAGES for line, path in _prose_paths(page)
             if not _resolves(path, page, tracked)]
    assert not stale, "paths cited in the docs that are not in the repository:\n" + "\n".join(stale)


def test_every_relative_link_points_at_a_file():
    broken = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text())
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_path_check_finds_stale_paths(tmp_path):
    tracked = ["src/portcv/filters/_separable.cu", "src/portcv/_border.py", "tests/filters/test_median.py",
               "src/", "src/portcv/", "src/portcv/filters/", "tests/", "tests/filters/"]  # as _tracked lists them
    page = tmp_path / "x.md"
    for good in ("src/portcv/filters/_separable.cu", "filters/_separable.cu", "_border.py",
                 "tests/<domain>/test_<algo>.py", "tests/filters", "src/portcv/<domain>/"):
        assert _resolves(good, page, tracked), good
    for bad in ("cuda/filters.cu", "src/portcv/filters/_median.cu", "oracles/color.py", "tools/x.py",
                "_separable.py"):
        assert not _resolves(bad, page, tracked), bad
    page.write_text("The kernel (`cuda/filters.cu`) and `src/portcv/_border.py`; `pip install x.py`.\n"
                    "```bash\npython tools/gpu.py --json out.json\n```\n")
    assert [p for _, p in _prose_paths(page)] == ["cuda/filters.cu", "src/portcv/_border.py", "x.py", "tools/gpu.py"]


# --------------------------------------------------------------------------------------------
# docs/index.md lists everything public
# --------------------------------------------------------------------------------------------
def _exists_today() -> str:
    text = (ROOT / "docs" / "index.md").read_text()
    start = text.index("What exists today")
    return text[start:text.index("\n## ", start)]


def _domains() -> dict[str, Any]:
    import portcv

    names = [n for n in portcv.__all__ if not callable(getattr(portcv, n, None))]
    return {f"portcv.{n}": importlib.import_module(f"portcv.{n}") for n in names}


def test_index_names_every_public_name_of_every_domain():
    """"What exists today" left out motion, video, detect and seven filters."""
    import portcv

    section = _exists_today()
    bullets = [b for b in re.split(r"\n(?=- )", section) if b.startswith("- ")]
    missing = []
    for prefix, module in {"portcv": portcv, **_domains()}.items():
        own = [b for b in bullets if b.startswith(f"- `{prefix}`")]
        if not own:
            missing.append(f"{prefix}: no bullet starting with `{prefix}`")
            continue
        for name in module.__all__:
            if prefix == "portcv" and f"portcv.{name}" in _domains():
                continue
            if not any(f"`{name}`" in b or f"`{name}(" in b for b in own) and f"`{prefix}.{name}`" not in section:
                missing.append(f"{prefix}.{name}")
    assert not missing, "docs/index.md's 'What exists today' leaves out:\n" + "\n".join(missing)


def test_index_names_every_command():
    from portcv import cli

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    section = _exists_today()
    assert not [c for c in commands if f"portcv {c}" not in section]
