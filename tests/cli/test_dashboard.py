"""The published asv dashboard works offline: headless Chromium renders its benchmark graphs.

Needs a browser, so it is out of the default run (``-m "not browser"`` in pyproject.toml). Run::

    python -m pytest -m browser tests/cli/test_dashboard.py

What it does: takes the committed asv results (``asv_bench/results/``) or, when there are none,
makes some (``asv run -E existing --quick`` of ``GaussianBlur.time_gaussian_blur`` on a few
parameters, into a temporary results folder, labelled with this checkout's HEAD); runs
``asv publish`` and ``tools/asv_offline.py`` into a temporary folder; serves it on 127.0.0.1;
opens it in Debian's ``chromium`` (headless, no sandbox, no GPU, a fresh profile, every host name
but 127.0.0.1 unresolvable, so a CDN load can only fail) and checks the DOM and a screenshot.
Set ``PORTCV_DASHBOARD_FRESH=1`` to make fresh results even when some are committed.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ASV_DIR = ROOT / "asv_bench"
BENCH = "bench_filters.GaussianBlur.time_gaussian_blur"
# A few parameters: enough for a graph with several lines, quick on a 2-core machine.
BENCH_REGEX = r"GaussianBlur\.time_gaussian_blur\('(numpy|jax|opencv)', '(640x480|1920x1080)'"
ERROR_PAGE_TEXT = "continental origin"  # asv's error.html: a CDN asset failed to load


def _chromium() -> str | None:
    for candidate in (shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _committed_results() -> list[str]:
    """Result files tracked by git (untracked ones are leftovers of local runs)."""
    proc = subprocess.run(["git", "-C", str(ROOT), "ls-files", "asv_bench/results"], capture_output=True, text=True)
    files = proc.stdout.split() if proc.returncode == 0 else []
    return files if any(f.count("/") == 3 and not f.endswith("machine.json") for f in files) else []


def _load_tool(name: str):
    spec = importlib.util.spec_from_file_location(f"portcv_tools_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(cmd: list[str], *, env: dict | None = None, timeout: float = 900) -> str:
    proc = subprocess.run(cmd, cwd=ASV_DIR, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{output[-4000:]}")
    return output


@dataclass
class Site:
    url: str
    html_dir: Path
    tmp: Path
    requests: list[tuple[str, int]] = field(default_factory=list)  # (path, HTTP status)
    profiles: itertools.count = field(default_factory=itertools.count)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Site:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)")
    pytest.importorskip("asv", reason="needs asv (pip install 'portcv[bench]')")
    from asv import util

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("needs a git checkout (asv labels results with a commit of the repository)")
    tmp = tmp_path_factory.mktemp("dashboard")
    env = dict(os.environ, HOME=str(tmp / "home"))  # asv's machine file goes to $HOME; keep the user's
    (tmp / "home").mkdir()

    conf = util.load_json(str(ASV_DIR / "asv.conf.json"), js_comments=True)
    conf.update(repo=str(ROOT), benchmark_dir=str(ASV_DIR / "benchmarks"), html_dir=str(tmp / "html"),
                env_dir=str(tmp / "env"), results_dir=str(tmp / "results"))
    committed = [] if os.environ.get("PORTCV_DASHBOARD_FRESH") else _committed_results()
    for name in committed:  # the committed results only, as a clone would have them
        (tmp / "results" / Path(name).relative_to("asv_bench/results")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp / "results" / Path(name).relative_to("asv_bench/results"))
    if not committed:
        machine = ("import sys; from asv.machine import Machine, MachineCollection; d = Machine.get_defaults(); "
                   "d['machine'] = 'browser-test'; MachineCollection.save('browser-test', d)")
        _run([sys.executable, "-c", machine], env=env)
        util.write_json(str(tmp / "asv.conf.json"), conf)
        _run([sys.executable, "-m", "asv", "--config", str(tmp / "asv.conf.json"), "run",
              "-E", f"existing:{sys.executable}", "--quick", "--set-commit-hash", head.stdout.strip(),
              "--machine", "browser-test", "--bench", BENCH_REGEX, "--show-stderr"], env=env)
    util.write_json(str(tmp / "asv.conf.json"), conf)
    html = tmp / "html"
    _run([sys.executable, "-m", "asv", "--config", str(tmp / "asv.conf.json"), "publish", "--html-dir", str(html)],
         env=env)
    report = _load_tool("asv_offline").make_offline(html)
    assert report["rewritten"], "asv_offline rewrote no page"
    assert not report["remote"], report["remote"]
    from portcv.cli import _dashboard

    _dashboard.speedup_page(tmp / "results", html)  # the landing page, as `portcv bench --html` writes it

    requests: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"):
            requests.append((self.path, int(code) if str(code).isdigit() else 0))

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}/", html, tmp, requests)
    finally:
        server.shutdown()
        server.server_close()


def chromium(site: Site, page: str, *extra: str) -> tuple[str, str]:
    """Open ``page`` of the site in a fresh headless Chromium; return (stdout, stderr)."""
    profile = site.tmp / f"profile-{next(site.profiles)}"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--window-size=1280,900", "--virtual-time-budget=10000",
           "--enable-logging=stderr", "--v=0",
           # offline for real: every host but the local server is unresolvable
           "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
           *extra, site.url + page]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout, proc.stderr


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if ":CONSOLE" in line and ("Uncaught" in line or "Failed to load" in line or "Error" in line)]


def test_published_pages_load_nothing_from_the_network(site):
    for page in site.html_dir.glob("*.html"):
        text = page.read_text()
        for cdn in ("code.jquery.com", "cdnjs.cloudflare.com", "cdn.jsdelivr.net"):
            assert cdn not in text, f"{page.name} still refers to {cdn}"


def test_index_lists_the_benchmarks(site):
    dom, stderr = chromium(site, "index.html", "--dump-dom")
    assert ERROR_PAGE_TEXT not in dom, "asv's error page: a script failed to load"
    assert BENCH in dom, "the benchmark grid does not list our benchmark"
    assert "bench_filters" in dom and "bench_color" in dom
    assert 'class="flot-base"' in dom, "no flot canvas: the summary graphs did not render"
    assert not _console_errors(stderr), _console_errors(stderr)
    # asv's grid asks for graphs/summary/<name>.json of every benchmark, also of those without
    # results (404, drawn as empty); every other file (scripts, styles, vendored assets) must load.
    failed = [(path, code) for path, code in site.requests if code >= 400 and not path.startswith("/graphs/")]
    assert not failed, f"requests that failed: {failed}"
    assert any(path.startswith("/vendor/") and code == 200 for path, code in site.requests)


def test_benchmark_graph_renders(site):
    # one frame size on asv's log axis, as the landing page links: GPU and CPU times 100x apart
    # both stay readable, and the legend has one line per backend and machine
    page = f"index.html#{BENCH}?p-size=%27640x480%27&y-axis-scale=log"
    dom, stderr = chromium(site, page, "--dump-dom")
    assert ERROR_PAGE_TEXT not in dom
    assert not _console_errors(stderr), _console_errors(stderr)
    canvases = [c for c in dom.split("<canvas")[1:] if 'class="flot-base"' in c.split(">")[0]]
    widths = [int(c.split('width="')[1].split('"')[0]) for c in canvases if 'width="' in c]
    assert widths and max(widths) >= 500, f"no full-size graph canvas on {page}: {widths}"
    assert "backend-numpy" in dom, "the graph legend does not name the numpy backend"

    pixels = _screenshot(site, page, "gaussian-blur")
    assert pixels.shape[0] >= 800 and pixels.shape[1] >= 1200, pixels.shape
    assert pixels.std() > 10, "the screenshot is (nearly) blank"
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 50, f"only {len(colours)} colours in the screenshot"
    # the plotted series are drawn in saturated colours inside the plot area
    plot = pixels[100:800, 250:1240]
    saturated = (plot.max(axis=2) - plot.min(axis=2)) > 80
    assert saturated.sum() > 30, "no coloured data points in the plot area"


def _screenshot(site: Site, page: str, name: str) -> np.ndarray:
    """A 1280 x 900 screenshot of ``page`` as RGB pixels; kept in ``$PORTCV_DASHBOARD_SHOTS`` if set
    (how docs/img/dashboard-*.png were made)."""
    Image = pytest.importorskip("PIL.Image")
    shot = site.tmp / f"{name}.png"
    chromium(site, page, f"--screenshot={shot}")
    keep = os.environ.get("PORTCV_DASHBOARD_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / f"dashboard-{name}.png")
    return np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)


def _speedup_machines(site: Site) -> list[str]:
    from portcv.cli import _dashboard

    return [m.machine for m in _dashboard.read_speedups(site.tmp / "results")]


def test_speedup_landing_page_shows_tables_and_bars(site):
    """speedups.html: a table and a bar chart per machine and domain, links into asv's pages."""
    machines = _speedup_machines(site)
    if not machines:
        pytest.skip("no committed speedup results (bench_speedup) to show")
    dom, stderr = chromium(site, "speedups.html", "--dump-dom")
    assert not _console_errors(stderr), _console_errors(stderr)
    for machine in machines:
        assert f"<h2>{machine}</h2>" in dom
    assert dom.count("<svg") >= len(machines) and "index.html#bench_speedup.Speedup.track_speedup?" in dom
    pixels = _screenshot(site, "speedups.html", "speedups")
    assert pixels.std() > 10, "the landing page screenshot is (nearly) blank"
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    bars = ((green - red > 60) & (green - blue > 30)) | ((red - green > 80) & (red - blue > 40))
    assert bars.sum() > 500, "no green or red bars on the landing page"


def test_speedup_graph_renders_for_every_machine(site):
    """asv's page of one speedup per machine (the landing page's links) draws its graph."""
    machines = _speedup_machines(site)
    if not machines:
        pytest.skip("no committed speedup results (bench_speedup) to show")
    from portcv.cli import _dashboard

    for machine in machines:
        page = _dashboard.asv_link("filters.gaussian_blur k5", "jax vs numpy", _dashboard.HEADLINE, machine)
        dom, stderr = chromium(site, page, "--dump-dom")
        assert ERROR_PAGE_TEXT not in dom, f"asv's error page on {page}"
        assert not _console_errors(stderr), _console_errors(stderr)
        canvases = [c for c in dom.split("<canvas")[1:] if 'class="flot-base"' in c.split(">")[0]]
        assert canvases, f"no graph on {page}"
        pixels = _screenshot(site, page, f"speedup-{machine}")
        plot = pixels[100:800, 250:1240]
        assert ((plot.max(axis=2) - plot.min(axis=2)) > 80).sum() > 30, f"no coloured data points on {page}"


def test_summary_list_sorts(site):
    """The benchmark list is sorted by the vendored stupidtable (1.1.3 instead of asv's 1.0.1)."""
    dom, stderr = chromium(site, "index.html#summarylist?sort=1&dir=desc", "--dump-dom")
    assert ERROR_PAGE_TEXT not in dom
    assert not _console_errors(stderr), _console_errors(stderr)
    assert BENCH in dom
    assert "sorting-desc" in dom, "stupidtable did not sort the table"
