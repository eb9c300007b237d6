"""The timing shares (metrics.jsonl's timing_pct, the dashboard's bars, the summary) leave out
the time the engine was paused: a run paused in the middle of its update once reported
"learn 14102%" because the learn section's clock ran on through the pause while the epoch's
total did not."""

from __future__ import annotations

import time

import pytest
import torch

from puffer_tui.engine.algo import timing as timing_module
from tests.engine.algo.test_trainer import small_trainer

PAUSE_S = 1000.0  # on a fake clock: no test waits for it


@pytest.fixture
def clock(monkeypatch):
    """perf_counter as the engine reads it, plus PAUSE_S for every pause taken."""
    offset, real = [0.0], time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + offset[0])
    return offset


def test_paused_time_is_in_no_section(clock):
    with small_trainer(**{"train.minibatch_size": 16}) as trainer:  # pauses while learning
        def pause():
            clock[0] += PAUSE_S

        trainer.safe_point = pause
        row = trainer.run_epoch()
    seconds, shares = row["timing"], row["timing_pct"]
    assert all(0 <= s < PAUSE_S for s in seconds.values()), seconds
    assert all(0 <= p <= 100 for p in shares.values()), shares
    assert sum(shares.values()) == pytest.approx(100)
    assert trainer.uptime < PAUSE_S


def test_a_pause_is_taken_out_of_every_open_section(monkeypatch):
    timing = timing_module.Timing(torch.device("cpu"))
    fake = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: fake[0])
    with timing.section("learn"):
        fake[0] += 2.0
        timing.exclude(5.0)  # 5 s paused within these 7
        fake[0] += 5.0
    with timing.section("env"):
        fake[0] += 1.0
    assert timing.seconds["learn"] == pytest.approx(2.0)
    assert timing.seconds["env"] == pytest.approx(1.0)
    shares = timing.metrics(3.0)["timing_pct"]
    assert shares["learn"] == pytest.approx(200 / 3) and shares["misc"] == pytest.approx(0)
