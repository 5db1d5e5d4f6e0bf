"""portcv._timing, the package's one timer: its host paths, on a fake clock.

What it guarantees: ``synced_s`` makes at least ``min_calls`` calls and more (up to
``max_calls``) while their sum is under ``budget_s``; ``warm_then_synced_s`` reports the first
call apart and waits for every call; ``queued_s`` waits once, for the last call of each round;
``per_frame_s`` divides a batch's median by its frames; importing the module imports neither
CuPy nor JAX. The clock is faked (each call advances it by a set amount), so nothing here
depends on how fast this machine is.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from portcv import _timing as timing


class FakeClock:
    """A clock that only moves when a fake call runs: ``call()`` advances it by the next step."""

    def __init__(self, steps):
        self.now = 0.0
        self.steps = list(steps)
        self.calls = 0
        self.waited = []

    def __call__(self) -> float:
        return self.now

    def call(self):
        self.now += self.steps[self.calls % len(self.steps)]
        self.calls += 1
        return self.calls

    def wait(self, out):
        self.waited.append(out)
        return out


@pytest.fixture
def clock(monkeypatch):
    def make(*steps):
        fake = FakeClock(steps)
        monkeypatch.setattr(timing, "_clock", fake)
        return fake
    return make


def test_synced_s_makes_min_calls_then_fills_the_budget(clock):
    fake = clock(0.25)
    assert timing.synced_s(fake.call, min_calls=2, max_calls=100, budget_s=1.0) == [0.25] * 4
    fake = clock(0.25)
    assert timing.synced_s(fake.call, min_calls=3, max_calls=100, budget_s=0.0) == [0.25] * 3


def test_synced_s_stops_at_max_calls(clock):
    fake = clock(0.001)
    assert len(timing.synced_s(fake.call, min_calls=1, max_calls=7, budget_s=10.0)) == 7
    assert fake.calls == 7


def test_warm_then_synced_s_reports_the_first_call_apart_and_waits_for_each(clock):
    fake = clock(5.0, 1.0, 2.0, 3.0)
    first, times, out = timing.warm_then_synced_s(fake.call, fake.wait, min_calls=3, max_calls=3)
    assert first == 5.0
    assert times == [1.0, 2.0, 3.0]
    assert out == 4  # the last call's output
    assert fake.waited == [1, 2, 3, 4]


def test_warm_then_synced_s_within_budget_makes_one_call_at_least(clock):
    """``portcv bench``'s rule: at least one timed call, up to ``repeat`` while under the budget."""
    fake = clock(2.0)
    _, times, _ = timing.warm_then_synced_s(fake.call, min_calls=1, max_calls=10, budget_s=1.0)
    assert times == [2.0]
    fake = clock(0.1)
    _, times, _ = timing.warm_then_synced_s(fake.call, min_calls=1, max_calls=10, budget_s=0.35)
    assert len(times) == 4


def test_queued_s_waits_once_per_round_for_the_last_call(clock):
    fake = clock(1.0, 1.0, 1.0, 4.0, 4.0, 4.0, 2.0, 2.0, 2.0)
    per_call = timing.queued_s(fake.call, fake.wait, calls=3, rounds=3)
    assert per_call == 2.0  # rounds of 1, 4 and 2 s per call: the median
    assert fake.waited == [3, 6, 9]


def test_per_frame_s_divides_the_median_by_the_frames(clock):
    fake = clock(0.8, 0.4, 1.6)
    assert timing.per_frame_s(fake.call, 4, min_calls=3, max_calls=3) == pytest.approx(0.2)


def test_host_time_ms_is_the_median_after_one_warm_up(clock):
    fake = clock(9.0, 0.001, 0.003, 0.002)
    assert timing.host_time_ms(fake.call, repeat=3) == pytest.approx(2.0)
    assert fake.calls == 4


def test_interleaved_ms_times_every_side_in_each_round(clock):
    fake = clock(0.001, 0.002)
    order = []

    def side(name):
        def fn():
            order.append(name)
            fake.call()
        return fn

    result = timing.interleaved_ms({"a": side("a"), "b": side("b")}, rounds=3, warmup=0)
    assert order == ["a", "b", "b", "a", "a", "b"]  # every side each round, each round one side later
    assert result == pytest.approx({"a": 1.0, "b": 2.0})


def test_real_clock_tiny_calls():
    """The real clock: the numbers are seconds, not asserted beyond their count and sign."""
    times = timing.synced_s(lambda: None, min_calls=3, max_calls=3)
    assert len(times) == 3 and all(t >= 0 for t in times)


def test_importing_the_timer_imports_no_gpu_framework():
    code = ("import sys, portcv, portcv._timing; "
            "print(sorted(m for m in ('cupy', 'jax', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_import_portcv_does_not_import_the_timer():
    code = "import sys, portcv; print('portcv._timing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
