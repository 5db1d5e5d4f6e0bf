"""The commands' progress bars: a rate that leaves the warm-up out, and a total where the file has one."""

from __future__ import annotations

import re

import numpy as np
import pytest

import portcv
from portcv import cli
from portcv.cli import _common

tqdm_std = pytest.importorskip("tqdm.std")


class _Clock:
    """tqdm's clock, moved by hand: a frame's processing takes exactly the seconds the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(tqdm_std, "time", fake)  # tqdm reads it when a bar is made
    monkeypatch.setattr(tqdm_std.tqdm, "monitor_interval", 0)  # no monitor thread on the real clock
    return fake


def _rates(text: str) -> list[tuple[int, float]]:
    """(frames done, frames per second) of every bar line tqdm printed (below 1, tqdm shows s/frame)."""
    found = re.findall(r"(\d+)/\d+ \[[^\]]*?([\d.]+)(frame/s|s/frame)\]", text)
    return [(int(n), float(v) if unit == "frame/s" else 1 / float(v)) for n, v, unit in found]


def test_the_rate_leaves_the_first_frames_warm_up_out(clock, capsys):
    """JAX compiling during the first frame made the bar's rate the compiler's: after a 100 s first
    frame, frames of 1 s each showed 0.01 frame/s, and still 0.15 five frames on (ETA: minutes)."""
    for index, _ in enumerate(_common.with_progress(range(12), total=12, desc="motion [jax]")):
        clock.now += 100.0 if index == 0 else 1.0
    rates = _rates(capsys.readouterr().err)
    assert rates and rates[-1][0] == 12, rates
    assert all(rate == pytest.approx(1.0, rel=0.01) for done, rate in rates if done >= 3), rates


def test_the_bar_counts_every_frame_and_closes(clock, capsys):
    frames = list(_common.with_progress(iter(range(5)), total=5, desc="x"))
    assert frames == [0, 1, 2, 3, 4]
    assert list(_common.with_progress([], total=0, desc="x")) == []
    assert list(_common.with_progress(range(3), total=3, desc="x", enabled=False)) == [0, 1, 2]


def test_the_total_is_the_containers_frame_count_capped_by_frames(tmp_path):
    pytest.importorskip("av")
    path = tmp_path / "clip.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(5, 32, 48))
    assert _common.container_frame_count(path) == 5
    assert _common.progress_total(path, None) == 5
    assert _common.progress_total(path, 3) == 3
    assert _common.progress_total(path, 50) == 5
    (tmp_path / "notes.txt").write_text("not a video")
    assert _common.container_frame_count(tmp_path / "notes.txt") is None
    assert _common.progress_total(tmp_path / "notes.txt", 7) == 7


@pytest.mark.parametrize("command", ["faces", "motion"])
def test_the_video_commands_bars_know_the_frame_count(command, tmp_path, capsys):
    """``portcv faces clip.mp4`` showed a bar without a total (``4frame [...]``)."""
    pytest.importorskip("av")
    pytest.importorskip("cv2")  # the faces command's cascade ships with OpenCV
    path = tmp_path / "clip.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(4, 32, 48))
    extra = ["--min-size", "32"] if command == "faces" else ["--grid", "2x2"]
    assert cli.main([command, str(path), *extra]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"\b1/4 \[", err), err
    assert "CPU (PyAV)" in out  # which decoder ran: numpy's "auto" is the CPU
