"""portcv verify (issue 59): the golden table is current and complete, verify passes here, and it
fails (verdict and exit status) when a kernel's bits change; its arguments and its certificate."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys

import numpy as np
import pytest

import portcv
from portcv import _golden, _kernel
from portcv._verify import OPENCV_CASES
from portcv.cli import main
from portcv.color._gray import _rgb_to_gray_kernel

WALKED = [d for d in portcv.DOMAINS if d not in _golden.EXCLUDED_DOMAINS]


HAS_NUMBA = importlib.util.find_spec("numba") is not None


def numpy_targets(*threads: int) -> list[str]:
    """The NumPy backend's verify targets at these thread counts: with numba, each count twice
    (the vectorized overrides, numba=0, and the compiled ones, numba=1)."""
    builds = (",numba=0", ",numba=1") if HAS_NUMBA else ("",)
    return [f"numpy[threads={t}{b}]" for t in threads for b in builds]


def public_functions() -> list[str]:
    """``"<domain>.<name>"`` of every public function (plain or cached) of the walked domains."""
    out = []
    for domain in WALKED:
        module = getattr(portcv, domain)
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not inspect.isclass(obj):
                out.append(f"{domain}.{name}")
    return out


def test_the_committed_golden_table_is_what_the_code_makes():
    committed = _golden.TABLE_PATH.read_text()
    assert committed == _golden.render_table(_golden.compute_table()), (
        "the golden table is stale: run `python -m tools.regenerate golden` and say in the commit why the bits changed")
    assert len(committed) < 1 << 20


def test_every_public_array_function_has_a_golden_case():
    covered = {case.op for case in _golden.cases()}
    missing = [name for name in public_functions() if name not in covered and name not in _golden.EXCLUDED]
    assert not missing, f"public functions without a golden case (add one to _golden._cases, or to EXCLUDED with why): {missing}"
    stale = [name for name in _golden.EXCLUDED if name in covered or name not in public_functions()]
    assert not stale, f"EXCLUDED names a function that has a case or is not public: {stale}"
    assert set(_golden.EXCLUDED_DOMAINS) <= set(portcv.DOMAINS)
    assert set(OPENCV_CASES) <= {case.name for case in _golden.cases()}


def test_verify_passes_on_numpy():
    report = portcv.verify(backends="numpy", threads="1,2")
    assert report.ok, report.table()
    counts = report.counts()
    assert counts["differs"] == counts["error"] == 0
    assert counts["identical"] >= 2 * len(_golden.cases())
    assert report.targets[:len(numpy_targets(1, 2))] == numpy_targets(1, 2)


def test_threads_all_is_every_core():
    from portcv.backends.numpy import host_threads

    report = portcv.verify(backends="numpy", threads="all", ops="filters.box_blur[banded]", opencv=False)
    assert report.ok and report.targets == numpy_targets(host_threads())


@pytest.mark.slow  # JAX compiles every case's shape: about 40 s on 2 cores
def test_verify_passes_on_jax():
    if "jax" not in portcv.available_backends():
        pytest.skip("JAX is not installed")
    report = portcv.verify(backends="jax", opencv=False)
    assert report.ok, report.table()
    assert report.counts()["identical"] == len(_golden.cases())


@pytest.fixture
def flipped_gray(monkeypatch):
    """The NumPy override of the gray kernel with one bit of one pixel flipped."""
    original = _rgb_to_gray_kernel.overrides["numpy"]

    def flipped(*arrays, **params):
        out = np.array(original.fn(*arrays, **params))
        out.reshape(-1)[0] ^= 1
        return out

    monkeypatch.setitem(_rgb_to_gray_kernel.overrides, "numpy", _kernel.Override(flipped, original.supports))


def test_a_changed_kernel_makes_verify_fail(flipped_gray, capsys):
    report = portcv.verify(backends="numpy", threads=1, ops="color.rgb_to_gray")
    verdicts = {v.target: v for v in report.verdicts}
    for target in numpy_targets(1):  # the flipped bit shows on every NumPy path
        assert verdicts[target].verdict == "differs"
        assert verdicts[target].sha256 != verdicts[target].expected
    assert verdicts["opencv"].verdict == "identical"  # OpenCV still gives the shipped bits
    assert not report.ok and "FAIL" in report.table()
    assert main(["verify", "--backends", "numpy", "--threads", "1", "--ops", "color.rgb_to_gray", "--no-progress"]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_unavailable_backends_are_not_run_with_the_reason():
    missing = [n for n in portcv.backends.registered_backends() if n not in portcv.available_backends()]
    if not missing:
        pytest.skip("every registered backend runs here")
    report = portcv.verify(backends=missing[0], ops="color.*", opencv=False)
    assert report.ok and {v.verdict for v in report.verdicts} == {"not run"}
    assert all("unavailable" in v.reason for v in report.verdicts)


@pytest.mark.parametrize("kwargs, argument", [
    ({"backends": "nope"}, "backends"), ({"backends": ""}, "backends"),
    ({"threads": "0"}, "threads"), ({"threads": "two"}, "threads"), ({"threads": [1, -2]}, "threads"),
    ({"threads": "1.5"}, "threads"), ({"ops": "no.such.op*"}, "ops"),
])
def test_bad_arguments_are_value_errors_naming_the_argument(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        portcv.verify(**kwargs)


def test_the_cli_refuses_bad_arguments_with_exit_status_2(capsys):
    assert main(["verify", "--threads", "0"]) == 2
    assert "threads" in capsys.readouterr().err


def test_the_certificate_is_written_whole(tmp_path):
    path = tmp_path / "cert.json"
    assert main(["verify", "--backends", "numpy", "--threads", "1", "--ops", "filters.box_blur*", "--json", str(path),
                 "--no-progress"]) == 0
    cert = json.loads(path.read_text())
    assert cert["verdict"] == "pass" and cert["environment"]["portcv"] == portcv.__version__
    assert cert["environment"]["golden_table_sha256"]
    blur = cert["cases"]["filters.box_blur"]
    assert all(blur["results"][target]["sha256"] == blur["expected"] for target in numpy_targets(1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cert.json"]  # no temporary file left


def test_the_certificate_never_replaces_the_target_before_it_is_complete(tmp_path, monkeypatch):
    path = tmp_path / "cert.json"
    path.write_text("old")
    report = portcv.verify(backends="numpy", threads=1, ops="color.rgb_to_gray", opencv=False)
    seen = []
    real_replace = os.replace

    def replace(src, dst):  # at the rename the new text is whole and the old file untouched
        seen.append((json.loads(open(src).read())["verdict"], open(dst).read()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    report.write_json(path)
    assert seen == [("pass", "old")] and json.loads(path.read_text())["verdict"] == "pass"

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    path.write_text("old")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        report.write_json(path)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cert.json"]


def test_a_case_that_cannot_run_here_is_not_run_and_one_that_raises_is_an_error(monkeypatch):
    def no_file(name):
        raise OSError(f"cascade {name!r} not found")

    monkeypatch.setattr(portcv.detect, "load_cascade", no_file)
    report = portcv.verify(backends="numpy", threads=1, ops="detect.CascadeDetector", opencv=False)
    assert len(report.verdicts) == len(numpy_targets(1)) and report.ok
    for verdict in report.verdicts:
        assert verdict.verdict == "not run" and "cascade file is not installed" in verdict.reason

    def broken(*arrays, **params):
        raise RuntimeError("kernel exploded")

    original = _rgb_to_gray_kernel.overrides["numpy"]
    monkeypatch.setitem(_rgb_to_gray_kernel.overrides, "numpy", _kernel.Override(broken, original.supports))
    report = portcv.verify(backends="numpy", threads=1, ops="color.rgb_to_gray", opencv=False)
    assert {v.verdict for v in report.verdicts} == {"error"} and not report.ok
    assert "RuntimeError: kernel exploded" in report.table()


def test_a_numba_path_is_run_both_ways():
    """With numba installed, each thread count runs the NumPy overrides both ways: their
    vectorized path (PORTCV_NUMBA=0) and their compiled loops (PORTCV_NUMBA=1)."""
    if not HAS_NUMBA:
        pytest.skip("numba is not installed (pip install 'portcv[cpu]')")
    report = portcv.verify(backends="numpy", threads=1, ops="color.rgb_to_gray", opencv=False)
    assert report.ok and report.targets == ["numpy[threads=1,numba=0]", "numpy[threads=1,numba=1]"]


def test_package_versions_are_those_of_the_modules_that_ran(monkeypatch):
    """A machine can hold two distributions of one module (the H200: OpenCV 5's wheel beside the
    contrib 4.13 build on the path): the certificate gives the imported module's version."""
    import types

    from portcv import _verify

    fake = types.ModuleType("cv2")
    fake.__version__ = "4.13.0-imported"
    monkeypatch.setitem(sys.modules, "cv2", fake)
    assert _verify._version("cv2") == "4.13.0-imported"
