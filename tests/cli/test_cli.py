"""The command line as a user meets it: one-line errors with exit code 2, every option explained."""

from __future__ import annotations

import argparse

import pytest

from portcv import cli


@pytest.mark.parametrize("argv, message", [
    (["stream", "serve", "--port", "99999"], "portcv stream serve: error: argument --port: must be a TCP port in [1, 65535]"),
    (["stream", "view", "--port", "0"], "portcv stream view: error: argument --port"),
    (["demo", "--repeat", "0"], "portcv demo: error: argument --repeat: must be a whole number >= 1"),
    (["bench", "--repeat", "-1"], "portcv bench: error: argument --repeat"),
    (["motion", "synthetic", "--frames", "0"], "portcv motion: error: argument --frames"),
    (["demo", "--size", "big"], "portcv demo: error: argument --size"),
])
def test_argument_errors_are_one_line_with_exit_code_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def test_errors_while_running_are_one_line(capsys):
    """A user's mistake found while running (here a missing file) is one line too, not a traceback."""
    assert cli.main(["faces", "/nonexistent/picture.png"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("portcv faces: error:") and err.count("\n") == 1, err


def test_bench_refuses_unknown_backends_and_lists_unavailable_ones(capsys, monkeypatch):
    assert cli.main(["bench", "--backends", "foo"]) == 2
    assert "unknown backend(s) foo" in capsys.readouterr().err
    import portcv

    class Missing(portcv.backends.numpy.NumpyBackend):
        name = "missing-test"

        def _load(self):
            raise portcv.BackendUnavailableError("backend 'missing-test' needs the missing package; install it")

    portcv.backends.register(Missing(), replace=True)
    try:
        assert cli.main(["bench", "--backends", "missing-test", "--ops", "rgb_to_gray", "--repeat", "1",
                         "--budget", "0", "--no-opencv", "--plain", "--size", "64x48"]) == 0
    finally:
        portcv.backends._REGISTRY.pop("missing-test")
    assert "skipped backend missing-test: backend 'missing-test' needs the missing package" in capsys.readouterr().out


def _options(parser: argparse.ArgumentParser, prog: str = "portcv"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{prog} {name}")
        elif action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield prog, action


def test_every_option_has_a_help_line_with_its_default():
    missing = []
    for prog, action in _options(cli.build_parser()):
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if not action.help or (not flag and "default" not in action.help):
            missing.append(f"{prog} {action.option_strings[0]}")
    assert not missing, missing


@pytest.mark.slow
def test_motion_command_says_how_many_cells_moved(capsys):
    """It used to print only timings, so a run that found nothing looked like a run that worked."""
    assert cli.main(["motion", "synthetic", "--frames", "4", "--no-progress", "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    assert "motion cells per frame pair (of 60):" in out and "motion in 3 of 3 frame pairs" in out
    assert cli.main(["motion", "synthetic", "--frames", "3", "--size", "160x120", "--no-progress",
                     "--t-low", "5000", "--t-high", "6000"]) == 0
    assert "no motion detected in any of the 2 frame pairs" in capsys.readouterr().out
