"""``portcv.verify``: rerun the shipped golden cases here and certify which outputs are the same bits.

The golden table (``_golden.json``) holds the SHA-256 of every case's output on the NumPy
reference, made where the package was built. Verifying reruns each case on every backend asked
for (each device of a multi-device backend; the NumPy backend at each thread count, and with
``PORTCV_NUMBA`` 0 and 1 where numba is installed), and, for the ops where portcv claims
OpenCV's bits, OpenCV's own call on the same input. Every result is compared with the shipped
hash; the report says, per case and target, ``identical``, ``differs``, ``error`` (the call
raised) or ``not run`` (and why).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fnmatch
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

import portcv

from . import _golden as golden

IDENTICAL, DIFFERS, ERROR, NOT_RUN = "identical", "differs", "error", "not run"
#: The target label of OpenCV's outputs.
OPENCV = "opencv"


def _opencv_calls(cv2: Any) -> dict[str, Callable[[], Any]]:
    """Golden case -> the OpenCV call portcv claims to equal bit for bit, on the case's input."""
    g, big, rgb = golden.gray(), golden.gray(2, 520, 640), golden.rgb()
    nv12, i420 = golden.noise((54, 64), 11), golden.noise((54, 64), 12)

    def sobel_pair() -> tuple[Any, Any]:
        return cv2.Sobel(g, cv2.CV_16S, 1, 0, ksize=3), cv2.Sobel(g, cv2.CV_16S, 0, 1, ksize=3)

    calls = {
        "color.rgb_to_gray": lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY),
        "color.gray_to_rgb": lambda: cv2.cvtColor(g, cv2.COLOR_GRAY2RGB),
        "color.rgb_to_bgr": lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
        "color.bgr_to_rgb": lambda: cv2.cvtColor(rgb, cv2.COLOR_BGR2RGB),
        "color.nv12_to_rgb": lambda: cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12),
        "color.nv12_to_bgr": lambda: cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12),
        "color.i420_to_rgb": lambda: cv2.cvtColor(i420, cv2.COLOR_YUV2RGB_I420),
        "color.i420_to_bgr": lambda: cv2.cvtColor(i420, cv2.COLOR_YUV2BGR_I420),
        "filters.gaussian_blur[k5]": lambda: cv2.GaussianBlur(g, (5, 5), 1.2),
        "filters.gaussian_blur[rgb-k7]": lambda: cv2.GaussianBlur(rgb, (7, 7), 0),
        "filters.gaussian_blur[banded]": lambda: cv2.GaussianBlur(big, (5, 5), 1.2),
        "filters.box_blur": lambda: cv2.blur(g, (5, 5)),
        "filters.box_blur[banded]": lambda: cv2.blur(big, (5, 5)),
        "filters.median_filter[k3]": lambda: cv2.medianBlur(g, 3),
        "filters.median_filter[k5]": lambda: cv2.medianBlur(g, 5),
        "filters.median_filter[banded]": lambda: cv2.medianBlur(big, 3),
        "filters.sobel[dx]": lambda: cv2.Sobel(g, cv2.CV_16S, 1, 0, ksize=3),
        "filters.sobel[dy-k5]": lambda: cv2.Sobel(g, cv2.CV_16S, 0, 1, ksize=5),
        "filters.sobel[banded]": lambda: cv2.Sobel(big, cv2.CV_16S, 1, 0, ksize=3),
        "filters.gradients": sobel_pair,
        "edges.gradient": sobel_pair,
        "edges.canny": lambda: cv2.Canny(g, 50, 150),
        "edges.canny[k5-l2]": lambda: cv2.Canny(g, 400, 1200, apertureSize=5, L2gradient=True),
        "edges.canny[banded]": lambda: cv2.Canny(big, 50, 150),
        "transform.integral": lambda: cv2.integral(g),
        "transform.resize[nearest]": lambda: cv2.resize(rgb, None, fx=1.5, fy=1.5, interpolation=cv2.INTER_NEAREST),
    }
    if hasattr(cv2, "ximgproc"):  # the contrib build only
        calls["filters.joint_bilateral"] = lambda: cv2.ximgproc.jointBilateralFilter(golden.gray(3), g, 5, 20.0, 3.0)
    return calls


#: Cases with an OpenCV counterpart (the keys of the table above, without importing cv2).
OPENCV_CASES = ("color.rgb_to_gray", "color.gray_to_rgb", "color.rgb_to_bgr", "color.bgr_to_rgb", "color.nv12_to_rgb",
                "color.nv12_to_bgr", "color.i420_to_rgb", "color.i420_to_bgr", "filters.gaussian_blur[k5]",
                "filters.gaussian_blur[rgb-k7]", "filters.gaussian_blur[banded]", "filters.box_blur",
                "filters.box_blur[banded]", "filters.median_filter[k3]", "filters.median_filter[k5]",
                "filters.median_filter[banded]", "filters.sobel[dx]", "filters.sobel[dy-k5]", "filters.sobel[banded]",
                "filters.gradients", "edges.gradient", "edges.canny", "edges.canny[k5-l2]", "edges.canny[banded]",
                "transform.integral",
                "transform.resize[nearest]", "filters.joint_bilateral")


@dataclass(frozen=True)
class Verdict:
    """One golden case on one target.

    Attributes
    ----------
    case, op : str
        The golden case and the public function it covers.
    target : str
        Where it ran: a backend's name, with ``[threads=..]``, ``[numba=..]`` or ``[device=..]``
        where those vary, or ``"opencv"``.
    verdict : str
        ``"identical"``, ``"differs"``, ``"error"`` or ``"not run"``.
    sha256, expected : str
        The output's hash here ("" if it did not run) and the shipped one.
    reason : str
        Why it did not run, the error, or a note (OpenCV changing with its thread count).
    """

    case: str
    op: str
    target: str
    verdict: str
    sha256: str
    expected: str
    reason: str = ""


@dataclass
class VerifyReport:
    """What :func:`portcv.verify` found: per-case verdicts and the machine they hold for.

    Attributes
    ----------
    verdicts : list of Verdict
    targets : list of str
        The targets, in the order they ran (the table's columns).
    environment : dict
        portcv's version and commit, the packages' versions, CPU, GPU, driver and CUDA.
    opencv : dict
        OpenCV's version, its parallel framework, and the cases whose OpenCV output changed
        between ``cv2.setNumThreads(1)`` and its default thread count.
    seconds : float
        Wall time of the run.
    """

    verdicts: list[Verdict]
    targets: list[str]
    environment: dict[str, Any]
    opencv: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether no output differed from the shipped hash and no case raised."""
        return not any(v.verdict in (DIFFERS, ERROR) for v in self.verdicts)

    def counts(self) -> dict[str, int]:
        """How many verdicts of each kind."""
        out = {IDENTICAL: 0, DIFFERS: 0, ERROR: 0, NOT_RUN: 0}
        for v in self.verdicts:
            out[v.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON certificate: environment, OpenCV, counts, and per case its hashes per target."""
        cases: dict[str, Any] = {}
        for v in self.verdicts:
            entry = cases.setdefault(v.case, {"op": v.op, "expected": v.expected, "results": {}})
            result = {"verdict": v.verdict, "sha256": v.sha256}
            if v.reason:
                result["reason"] = v.reason
            entry["results"][v.target] = result
        return {"portcv_verify": 1, "verdict": "pass" if self.ok else "fail", "counts": self.counts(),
                "seconds": round(self.seconds, 2), "targets": self.targets, "environment": self.environment,
                "opencv": self.opencv, "cases": cases}

    def write_json(self, path: str | os.PathLike) -> None:
        """Write the certificate to ``path`` whole or not at all.

        The text goes to a temporary file beside ``path``, synced, then renamed over it
        (``os.replace``): a crash or a full disk leaves the old file, never half a certificate.
        """
        path = Path(path)
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def table(self) -> str:
        """The verdicts as text: a row per case, a column per target, the reasons below."""
        short = {IDENTICAL: "identical", DIFFERS: "DIFFERS", ERROR: "ERROR", NOT_RUN: "not run"}
        cells: dict[str, dict[str, str]] = {}
        notes: dict[str, int] = {}
        for v in self.verdicts:
            text = short[v.verdict]
            if v.reason:
                mark = notes.setdefault(v.reason, len(notes) + 1)
                text += f" [{mark}]"
            cells.setdefault(v.case, {})[v.target] = text
        header = ["case", *self.targets]
        rows = [[case, *(row.get(t, "-") for t in self.targets)] for case, row in cells.items()]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
        lines += [f"[{n}] {reason}" for reason, n in notes.items()]
        counts = self.counts()
        lines.append(f"{'PASS' if self.ok else 'FAIL'}: " + ", ".join(f"{n} {k}" for k, n in counts.items())
                     + f" ({len(cells)} cases x {len(self.targets)} targets, {self.seconds:.1f} s)")
        return "\n".join(lines)


# -- arguments ---------------------------------------------------------------------------------
def _names(value: str | Sequence[Any] | None) -> list[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def _parse_backends(value: str | Sequence[str] | None) -> list[str]:
    registered = portcv.backends.registered_backends()
    names = _names(value)
    if names is None:
        return registered
    if not names:
        raise ValueError(f"backends must name at least one backend, got {value!r}; registered: {', '.join(registered)}")
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise ValueError(f"backends: unknown backend(s) {', '.join(map(repr, unknown))}; registered: {', '.join(registered)}")
    return list(dict.fromkeys(names))


def _parse_threads(value: str | int | Sequence[Any] | None) -> list[int]:
    from .backends.numpy import host_threads

    if value is None:
        with _env("PORTCV_NUMPY_THREADS", None):
            return sorted({1, host_threads()})
    items = _names([value] if isinstance(value, int) else value)
    out = []
    for item in items or [""]:
        if item == "all":  # every core this process may use
            with _env("PORTCV_NUMPY_THREADS", None):
                out.append(host_threads())
            continue
        try:
            n = int(item)
        except ValueError:
            n = 0
        if n < 1 or str(n) != item:
            raise ValueError(f"threads must be whole numbers >= 1 or 'all', comma-separated, got {value!r}")
        out.append(n)
    return list(dict.fromkeys(out))


def _select(ops: str | Sequence[str] | None) -> list[golden.GoldenCase]:
    every = list(golden.cases())
    patterns = _names(ops)
    if patterns is None:
        return every
    # A case's own name matches as written: its "[variant]" would be a character class to fnmatch.
    chosen = [c for c in every if any(p in (c.name, c.op) or fnmatch.fnmatchcase(c.name, p) or fnmatch.fnmatchcase(c.op, p)
                                      for p in patterns)]
    if not chosen:
        raise ValueError(f"ops: {ops!r} matches no golden case (patterns like 'filters.*' or '*blur*' "
                         f"match case names such as {every[0].name!r})")
    return chosen


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """``os.environ[name] = value`` (``None``: unset) for the block, restored after."""
    saved = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


# -- the machine -------------------------------------------------------------------------------
def _version(module: str) -> str | None:
    """The installed version of the distribution that provides top-level module ``module``
    (``cv2`` is one of OpenCV's four wheels, a GPU array package one wheel per CUDA version)."""
    from importlib import metadata

    loaded = sys.modules.get(module)
    if isinstance(getattr(loaded, "__version__", None), str):
        # the module that ran: a second distribution of it can sit on the path (the H200's
        # OpenCV 5 wheel beside the contrib 4.13 build portcv's checks imported)
        return loaded.__version__
    for dist in metadata.packages_distributions().get(module, []) or [module]:
        with contextlib.suppress(metadata.PackageNotFoundError):
            return metadata.version(dist)
    return None


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() + ("+local-changes" if dirty else "")


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _backends_here(checked: Sequence[str]) -> dict[str, Any]:
    """Per registered backend: its package's version and, for those in ``checked`` (loaded to
    find out), whether it runs here, its devices and, for a GPU backend, the CUDA driver and
    runtime versions its module reports."""
    out: dict[str, Any] = {}
    for name in portcv.backends.registered_backends():
        b = portcv.backends.registered(name)
        entry: dict[str, Any] = {"package": b.module_name, "version": _version(b.module_name.split(".")[0]),
                                 "available": b.is_available() if name in checked else "not checked"}
        if entry["available"] is True:
            try:
                devices = []
                for d in range(b.device_count()):
                    with b.device_scope(d if b.device_count() > 1 else None):
                        devices.append(b.device)
                entry["devices"] = devices
                if b.needs_gpu:
                    runtime = sys.modules[b.module_name].cuda.runtime
                    entry["cuda_driver"], entry["cuda_runtime"] = runtime.driverGetVersion(), runtime.runtimeGetVersion()
            except Exception as exc:  # noqa: BLE001 - what a device cannot report is recorded, not fatal
                entry["device_error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out[name] = entry
    return out


def environment(backends: Sequence[str] = ()) -> dict[str, Any]:
    """The machine and packages a certificate holds for; ``backends`` are loaded to list their devices.

    Examples
    --------
    >>> import portcv
    >>> from portcv._verify import environment
    >>> environment()["portcv"] == portcv.__version__
    True
    """
    from .backends.numpy import host_threads

    env = {"portcv": portcv.__version__, "portcv_commit": _git_commit(), "python": platform.python_version(),
           "platform": platform.platform(), "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
           "host_threads": host_threads(),
           "golden_table_sha256": hashlib.sha256(golden.TABLE_PATH.read_bytes()).hexdigest()
           if golden.TABLE_PATH.is_file() else None,
           "backends": _backends_here(backends),
           "packages": {m: _version(m) for m in _OTHER_PACKAGES},
           "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return env


#: Packages whose versions a certificate records besides the backends' own (array-api-compat and
#: SciPy run in the NumPy paths, jaxlib is JAX's compiler, cv2 the OpenCV peer, numba the
#: compiled NumPy overrides).
_OTHER_PACKAGES = ("scipy", "array_api_compat", "jaxlib", "cv2", "numba")


# -- running -----------------------------------------------------------------------------------
def _variants(b: Any, threads: list[int]) -> list[tuple[str, dict[str, str | None], int | None]]:
    """``(label, environment, device)`` of each way a backend runs here."""
    devices = b.device_count()
    per_device = [(f"[device={d}]" if devices > 1 else "", d if devices > 1 else None) for d in range(devices)]
    # The NumPy overrides spread row bands over a thread pool (and may compile with numba): the
    # host backend that compiles nothing of its own runs once per thread count and build.
    if b.runs_on_host and not b.compiles_programs:
        numba = ["0", "1"] if _has_numba_path(b) else [None]
        out = []
        for t in threads:
            for n in numba:
                label = f"{b.name}[threads={t}" + (f",numba={n}" if n is not None else "") + "]"
                out.append((label, {"PORTCV_NUMPY_THREADS": str(t), "PORTCV_NUMBA": n}, None))
        return out
    return [(f"{b.name}{suffix}", {}, device) for suffix, device in per_device]


def _has_numba_path(b: Any) -> bool:
    """Whether the backend's overrides have a numba-compiled path (its module's ``compiled()``,
    switched by ``PORTCV_NUMBA``) and numba is installed to run it."""
    switch = getattr(sys.modules.get(type(b).__module__), "compiled", None)
    return callable(switch) and importlib.util.find_spec("numba") is not None


def _run_case(case: golden.GoldenCase) -> tuple[str, str]:
    """``(sha256, "")``, or ``("", error)`` if the case raised, or ``("", "unavailable: why")``."""
    try:
        return golden.digest(case.run()), ""
    except golden.CaseUnavailable as exc:
        return "", f"unavailable: {exc}"
    except Exception as exc:  # noqa: BLE001 - a case that raises is a verdict, not the end of the run
        return "", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _progress(total: int, enabled: bool) -> Any:
    """A tqdm bar when tqdm is installed, else a line on stderr at every tenth."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc="portcv verify", unit="case", leave=False)
    except ImportError:
        return _PlainProgress(total)


class _PlainProgress:
    def __init__(self, total: int) -> None:
        self.total, self.done, self.shown = total, 0, -1

    def update(self, n: int = 1) -> None:
        self.done += n
        tenth = 10 * self.done // max(1, self.total)
        if tenth != self.shown:
            self.shown = tenth
            print(f"portcv verify: {self.done}/{self.total}", file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def verify(*, backends: str | Sequence[str] | None = None, threads: str | int | Sequence[int] | None = None,
           ops: str | Sequence[str] | None = None, opencv: bool = True, json_path: str | os.PathLike | None = None,
           progress: bool = False) -> VerifyReport:
    """Rerun the shipped golden cases here; compare every output's SHA-256 with the shipped one.

    Parameters
    ----------
    backends : str or sequence of str, optional
        Backends to run, comma-separated or a list (default: every registered one; those that
        cannot run here are reported ``not run`` with the reason). Each device of a
        multi-device backend is a target of its own.
    threads : str, int or sequence of int, optional
        Thread counts of the NumPy backend's overrides (``PORTCV_NUMPY_THREADS``), e.g.
        ``"1,2,8"``; ``"all"`` is every core this process may use (default: ``"1,all"``).
    ops : str or sequence of str, optional
        Shell-style patterns (``fnmatch``) of case names or ops, e.g. ``"filters.*"`` (default:
        every case).
    opencv : bool, optional
        Also compare OpenCV's output where portcv claims its bits (when ``cv2`` is installed).
    json_path : str or path-like, optional
        Write the JSON certificate there (whole or not at all).
    progress : bool, optional
        Show a progress bar on stderr.

    Returns
    -------
    VerifyReport
        ``.ok`` is False if any output differs or any case raised; ``.table()`` is the text
        table, ``.to_dict()`` the certificate.

    Raises
    ------
    ValueError
        An unknown backend, a thread count that is not a whole number >= 1, or ``ops`` that
        match no case; each message names the argument.

    Examples
    --------
    >>> import portcv
    >>> report = portcv.verify(backends="numpy", threads=1, ops="color.rgb_to_gray", opencv=False)
    >>> report.ok, report.counts()["differs"]   # its two cases (weighted, average) on each NumPy path
    (True, 0)
    >>> len(report.verdicts) == 2 * len(report.targets)
    True
    """
    names, thread_counts, chosen = _parse_backends(backends), _parse_threads(threads), _select(ops)
    expected = golden.load_table()
    start = time.perf_counter()
    plans: list[tuple[str, Any, dict[str, str | None], int | None]] = []
    verdicts: list[Verdict] = []
    targets: list[str] = []
    for name in names:
        b = portcv.backends.registered(name)
        if not b.is_available():
            try:
                b.load()
                reason = "unavailable"
            except portcv.BackendUnavailableError as exc:
                reason = (str(exc).splitlines() or ["unavailable"])[0]
            targets.append(name)
            verdicts += [Verdict(c.name, c.op, name, NOT_RUN, "", expected.get(c.name, ""), f"backend unavailable: {reason}")
                         for c in chosen]
            continue
        for label, env, device in _variants(b, thread_counts):
            plans.append((label, b, env, device))
            targets.append(label)
    opencv_cases = [c for c in chosen if c.name in OPENCV_CASES] if opencv else []
    bar = _progress(len(plans) * len(chosen) + len(opencv_cases), progress)
    try:
        for label, b, env, device in plans:
            if bar is not None:
                bar.set_postfix_str(label)
            with contextlib.ExitStack() as stack:
                for key, value in env.items():
                    stack.enter_context(_env(key, value))
                stack.enter_context(portcv.using(b.name))
                stack.enter_context(b.device_scope(device))
                for case in chosen:
                    verdicts.append(_judge(case, label, *_run_case(case), expected.get(case.name, "")))
                    if bar is not None:
                        bar.update()
        cv_info: dict[str, Any] = {}
        if opencv_cases:
            targets.append(OPENCV)
            cv_verdicts, cv_info = _against_opencv(opencv_cases, expected, bar)
            verdicts += cv_verdicts
    finally:
        if bar is not None:
            bar.close()
    report = VerifyReport(verdicts, targets, environment(names), cv_info, time.perf_counter() - start)
    if json_path is not None:
        report.write_json(json_path)
    return report


def _judge(case: golden.GoldenCase, target: str, sha: str, error: str, expected: str, note: str = "") -> Verdict:
    if error.startswith("unavailable: "):
        return Verdict(case.name, case.op, target, NOT_RUN, "", expected, error.removeprefix("unavailable: "))
    if error:
        return Verdict(case.name, case.op, target, ERROR, "", expected, error)
    if not expected:
        return Verdict(case.name, case.op, target, NOT_RUN, sha, "", "no shipped hash: the golden table predates this case")
    return Verdict(case.name, case.op, target, IDENTICAL if sha == expected else DIFFERS, sha, expected, note)


def _against_opencv(cases: list[golden.GoldenCase], expected: dict[str, str], bar: Any) -> tuple[list[Verdict], dict[str, Any]]:
    """OpenCV's outputs on one thread (the verdict) and on its default count (a note if they differ)."""
    try:
        import cv2
    except ImportError:
        return [Verdict(c.name, c.op, OPENCV, NOT_RUN, "", expected.get(c.name, ""), "OpenCV (cv2) is not installed")
                for c in cases], {"version": None}
    calls = _opencv_calls(cv2)
    default_threads = cv2.getNumThreads()
    build = cv2.getBuildInformation()
    framework = next((line.split(":", 1)[1].strip() for line in build.splitlines() if "Parallel framework" in line), "")
    info: dict[str, Any] = {"version": cv2.__version__, "parallel_framework": framework, "default_threads": default_threads,
                            "changes_with_threads": []}
    out = []
    try:
        for case in cases:
            if case.name not in calls:
                out.append(Verdict(case.name, case.op, OPENCV, NOT_RUN, "", expected.get(case.name, ""),
                                   "this OpenCV build lacks the call (cv2.ximgproc: the contrib build)"))
            else:
                cv2.setNumThreads(1)
                one = _run_case(golden.GoldenCase(case.name, case.op, calls[case.name]))
                cv2.setNumThreads(default_threads)
                every = _run_case(golden.GoldenCase(case.name, case.op, calls[case.name]))
                note = ""
                if one[0] and every[0] and one[0] != every[0]:
                    info["changes_with_threads"].append(case.name)
                    note = f"OpenCV's own output changes with its thread count (1 vs {default_threads})"
                out.append(_judge(case, OPENCV, *one, expected.get(case.name, ""), note))
            if bar is not None:
                bar.update()
    finally:
        cv2.setNumThreads(default_threads)
    return out, info
