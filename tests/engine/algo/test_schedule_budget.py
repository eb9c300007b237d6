"""engine/algo/schedule.py's budget_moved: a new total_timesteps (live, or on a resume) moves the
end of the lr schedule without a jump; a finished run that is extended learns on (rate > 0)."""

import math
from types import SimpleNamespace

import pytest

from puffer_tui.engine.algo.schedule import (
    START,
    Anchor,
    budget_moved,
    learning_rate,
    progress,
    resumed_anchor,
)

M = 1_000_000


def train(total, lr=0.01):
    return SimpleNamespace(total_timesteps=total, learning_rate=lr, anneal_lr=True)


def test_a_longer_budget_keeps_the_rate_and_ends_at_the_new_total():
    old, new = train(20 * M), train(40 * M)
    before = learning_rate(old, 10 * M, START)
    anchor = budget_moved(START, 20 * M, 40 * M, 10 * M)
    assert learning_rate(new, 10 * M, anchor) == pytest.approx(before, rel=1e-12)
    # half of the remaining 30M steps: half of the remaining cosine
    assert progress(new, 25 * M, anchor) == pytest.approx(0.75)
    assert learning_rate(new, 40 * M, anchor) == 0.0
    assert learning_rate(new, 39 * M, anchor) > 0.0  # not over at the old end


def test_moving_the_budget_twice_stays_continuous():
    a = budget_moved(START, 20 * M, 40 * M, 10 * M)
    lr_at_15 = learning_rate(train(40 * M), 15 * M, a)
    b = budget_moved(a, 40 * M, 16 * M, 15 * M)
    assert learning_rate(train(16 * M), 15 * M, b) == pytest.approx(lr_at_15, rel=1e-12)
    assert progress(train(16 * M), 16 * M, b) == 1.0


def test_an_unchanged_budget_keeps_the_anchor_and_a_passed_one_ends_the_schedule():
    anchor = Anchor(5 * M, 0.3)
    assert budget_moved(anchor, 20 * M, 20 * M, 9 * M) is anchor
    assert budget_moved(anchor, 20 * M, 8 * M, 9 * M) == Anchor(9 * M, 1.0)


def test_an_extended_finished_run_goes_on_where_a_longer_plan_would_be():
    # finished at 8192 of 8192 steps: the old schedule is at its end (rate 0)
    assert learning_rate(train(8192), 8192, START) == 0.0
    saved = {"total_timesteps": 8192, **START.as_dict()}
    anchor = resumed_anchor(saved, train(16384), 8192)
    assert anchor == Anchor(8192, 0.5)
    assert learning_rate(train(16384), 8192, anchor) == pytest.approx(
        0.01 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert learning_rate(train(16384), 16384, anchor) == 0.0
