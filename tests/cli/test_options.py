"""Every command checks what it is given before any work: backends, numbers, per-detector defaults.

A typo (``--backends numpy,cuda``) or a value the command cannot use (a negative frame rate) is a
one-line ``portcv X: error: ...`` with exit code 2, found before a file is decoded, a port is
opened or a cluster is started.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import portcv
from portcv import cli
from portcv.cli import _faces, _stream

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv", [
    ["demo", "--backends", "numpy,cuda", "--size", "16x12", "--out", ""],
    ["demo", "--backends", "", "--size", "16x12", "--out", ""],
    ["bench", "--backends", "numpy,cuda", "--ops", "rgb_to_gray", "--size", "16x12"],
    ["bench", "--backends", ",", "--ops", "rgb_to_gray", "--size", "16x12"],
    ["motion", "synthetic", "--backend", "numpy,cuda", "--frames", "2", "--size", "16x12", "--no-progress"],
    ["motion", "a.mp4", "b.mp4", "--cluster", "local", "--backend", "cuda"],
    ["faces", "picture.png", "--backend", "cuda"],
    ["faces", "a.mp4", "b.mp4", "--cluster", "local", "--backend", "cuda"],
    ["stream", "serve", "--backend", "cuda", "--port", "1"],
], ids=lambda argv: " ".join(argv[:2]) + (" cluster" if "--cluster" in argv else "") + (" empty" if "" in argv[:4] or "," in argv else ""))
def test_unknown_backends_exit_2_listing_the_registered_ones(argv, capsys):
    """``demo --backends numpy,cuda`` ran numpy and exited 0; ``--cluster`` reported "Nanny failed to start"."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"portcv {argv[0]}: error:"), err
    assert "registered: numpy" in err and ("cuda" in err or "must name a backend" in err), err


def test_a_cluster_runs_one_backend(capsys):
    """It took the first of ``--backend numpy,jax`` and dropped the rest without a word."""
    assert cli.main(["motion", "a.mp4", "b.mp4", "--cluster", "local", "--backend", "numpy,jax"]) == 2
    assert "--backend with --cluster takes one backend" in capsys.readouterr().err


@pytest.mark.parametrize("argv, option", [
    (["demo", "--seed", "-1"], "--seed"),
    (["bench", "--budget", "-1"], "--budget"),
    (["bench", "--budget", "nan"], "--budget"),
    (["motion", "synthetic", "--fps", "0"], "--fps"),
    (["motion", "synthetic", "--fps", "-3"], "--fps"),
    (["motion", "synthetic", "--seed", "-2"], "--seed"),
    (["motion", "a.mp4", "--cluster", "local", "--segment-frames", "0"], "--segment-frames"),
    (["faces", "clip.mp4", "--fps", "inf"], "--fps"),
    (["stream", "serve", "--fps", "-1"], "--fps"),
    (["stream", "serve", "--fps", "nan"], "--fps"),
    (["stream", "serve", "--frames", "-1"], "--frames"),
    (["stream", "view", "--frames", "-2"], "--frames"),
    (["stream", "view", "--timeout", "-1"], "--timeout"),
    (["stream", "view", "--fps", "0"], "--fps"),
])
def test_numbers_a_command_cannot_use_exit_2_naming_the_option(argv, option, capsys):
    """Each was accepted: a negative pace served unpaced, ``view --timeout -1`` gave up at once
    with exit code 1, ``bench --budget nan`` timed one call, ``stream serve --frames -1`` never ended."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {option}:" in err, err


def test_motion_parameters_are_checked_before_a_cluster_starts(capsys):
    assert cli.main(["motion", "a.mp4", "b.mp4", "--cluster", "local", "--gamma", "nan"]) == 2
    assert "gamma" in capsys.readouterr().err


def _parsed(*argv: str):
    return cli.build_parser().parse_args(["faces", "picture.png", *argv])


def test_faces_defaults_follow_the_detector():
    """``--detector mct`` ran with the Haar defaults (min neighbours 5, min size 30), not the MCT
    detector's own (3 and 24 x 24, from :meth:`MCTDetector.detect`'s signature)."""
    signature = inspect.signature(portcv.detect.MCTDetector.detect).parameters
    args = _parsed("--detector", "mct")
    assert _faces._detector_defaults(args)
    assert (args.scale_factor, args.min_neighbors, args.min_size) == (
        signature["scale_factor"].default, signature["min_neighbors"].default, signature["min_size"].default)
    assert (args.min_neighbors, tuple(args.min_size)) == (3, (24, 24))
    assert args.cascade == "mct_frontalface_24.npz"
    args = _parsed()
    assert not _faces._detector_defaults(args)
    assert (args.cascade, args.scale_factor, args.min_neighbors, args.min_size) == (
        "haarcascade_frontalface_default.xml", 1.1, 5, (30, 30))


def test_faces_options_given_win_over_the_detectors_defaults():
    args = _parsed("--detector", "mct", "--min-neighbors", "7", "--min-size", "40", "--scale-factor", "1.3")
    _faces._detector_defaults(args)
    assert (args.scale_factor, args.min_neighbors, args.min_size) == (1.3, 7, (40, 40))


def test_faces_help_states_both_detectors_defaults():
    helps = {a.dest: a.help for a in _faces_parser()._actions}
    assert "default 5; 3 with --detector mct" in helps["min_neighbors"]
    assert "default 30; 24 with --detector mct" in helps["min_size"]
    assert "default 1.1; 1.15 with --detector mct" in helps["scale_factor"]


def _faces_parser():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["faces"]


def test_faces_with_mct_prints_the_mct_defaults(tmp_path, capsys):
    iio = pytest.importorskip("imageio.v3")
    path = tmp_path / "flat.png"
    iio.imwrite(path, np.full((30, 40), 90, np.uint8))
    assert cli.main(["faces", str(path), "--detector", "mct"]) == 0
    out = capsys.readouterr().out
    assert "scale 1.15, min neighbours 3, min size 24x24" in out, out


# --------------------------------------------------------------------------------------------
# `stream serve --fps`: the code, its --help and docs/stream.md say the same
# --------------------------------------------------------------------------------------------
class _Started(Exception):
    """Raised by the stand-in server: the options have been turned into its arguments."""


@pytest.mark.parametrize("argv, fps", [([], 30.0), (["--fps", "0"], 0.0), (["--fps", "12.5"], 12.5)])
def test_stream_serve_paces_synthetic_at_30_fps_unless_told(argv, fps, monkeypatch):
    seen = {}

    def server(source, **kwargs):
        seen.update(kwargs)
        raise _Started

    monkeypatch.setattr(_stream, "StreamServer", server)
    with pytest.raises(_Started):
        cli.main(["stream", "serve", "--size", "16x12", *argv])
    assert seen["fps"] == fps


def test_stream_fps_default_agrees_in_help_and_docs():
    """docs/stream.md said the default 0 means unpaced; the command paces at the source's rate."""
    parser = cli.build_parser()
    stream = next(a for a in parser._actions if a.dest == "command").choices["stream"]
    serve = next(a for a in stream._actions if a.dest == "stream_command").choices["serve"]
    help_text = next(a.help for a in serve._actions if a.dest == "fps")
    docs = " ".join((ROOT / "docs" / "stream.md").read_text().split())
    documented = re.search(r"`--fps F` \(([^)]*)\)", docs)
    assert documented, "docs/stream.md no longer describes --fps F"
    for claim in ("0 for as fast as possible", "default: the source's", "30 for synthetic"):
        assert claim in help_text and claim in documented.group(1), (claim, help_text, documented.group(1))


def test_demo_where_no_backend_can_run_is_an_error(capsys):
    """``demo --backends cupy`` on a machine without CuPy printed "skipped" and exited 0."""
    class Missing(portcv.backends.numpy.NumpyBackend):
        name = "missing-demo-test"

        def _load(self):
            raise portcv.BackendUnavailableError("backend 'missing-demo-test' needs a missing package; install it")

    portcv.backends.register(Missing(), replace=True)
    try:
        assert cli.main(["demo", "--backends", "missing-demo-test", "--size", "16x12", "--out", ""]) == 2
    finally:
        portcv.backends._REGISTRY.pop("missing-demo-test")
    captured = capsys.readouterr()
    assert "skipped: backend 'missing-demo-test' needs a missing package" in captured.out
    assert "none of the backends asked for can run here (missing-demo-test)" in captured.err
