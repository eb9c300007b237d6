"""The hang limit comes from what the workers were measured to take: a slow env that keeps
sending signs of progress trains, a hung one still ends in a clear error naming the measured
times and the flag that raises the floor."""

from __future__ import annotations

import numpy as np
import pytest
from slow_env import make_env

from puffer_tui.engine.vec import WorkerError, make
from puffer_tui.engine.vec.errors import WorkerHung
from puffer_tui.engine.vec.mp.hang_limit import MARGIN, HangLimit, heartbeat_interval
from puffer_tui.envs.gym_emulation import from_gymnasium

FLOOR_S = 1.0  # the floor these tests set: a block's whole reset takes several times longer
RESET_S = 0.25  # one env's reset; 16 of them make a 4 s block reset, 4x the floor


def _vec(**env):
    return make(from_gymnasium(make_env, reset_seconds=RESET_S, **env), num_envs=16,
                backend="multiprocessing", num_workers=1, timeout=FLOOR_S)


def test_a_block_whose_reset_outlasts_the_floor_is_not_called_hung_while_it_progresses():
    vec = _vec()
    try:
        vec.async_reset(0)
        vec.recv()  # 16 resets of RESET_S each: several floors long in all
        vec.send(np.zeros(16, np.int32))
        vec.recv()
        measured = vec.hang_limit.measured
    finally:
        vec.close()
    # one env's reset apart between signs of life, not the block's whole reset
    assert RESET_S <= measured["reset"] < 16 * RESET_S, measured
    assert "build" in measured, measured


def test_a_real_hang_ends_in_an_error_naming_the_measured_times_and_the_flag():
    vec = _vec(hang_at_step=1)
    try:
        vec.async_reset(0)
        vec.recv()
        vec.send(np.zeros(16, np.int32))
        with pytest.raises(WorkerError) as caught:
            vec.recv()
        measured = dict(vec.hang_limit.measured)
    finally:
        vec.close()
    error = caught.value
    assert isinstance(error, WorkerHung) and error.worker == 0
    # the limit is the measured one: MARGIN times the slowest healthy wait, above the floor
    assert error.limit == max(FLOOR_S, MARGIN * max(measured.values()))
    assert error.limit > FLOOR_S and error.silent_for >= error.limit
    message = str(error)
    assert f"no answer within {error.limit:.3g} s (is the env hung?)" in message
    assert "--vec.worker-timeout" in message
    assert f"resets {measured['reset'] * 1000:.3g} ms" in message
    assert "the vec env was closed" in message
    assert "slow_env.py" in error.traceback and "in step" in error.traceback  # where it hangs


def test_a_hang_in_the_inline_block_is_interrupted_in_the_callers_thread():
    # the block the caller steps itself has no process waiting on it: a watchdog thread
    # raises in the caller's thread, blocked in the env's sleep
    vec = make(from_gymnasium(make_env, reset_seconds=RESET_S, hang_at_step=1), num_envs=8,
               backend="multiprocessing", num_workers=2, timeout=FLOOR_S, inline=True)
    try:
        vec.async_reset(0)
        vec.recv()
        with pytest.raises(WorkerError) as caught:
            vec.send(np.zeros(8, np.int32))  # the inline block steps (and hangs) in send()
    finally:
        vec.close()
    error = caught.value
    assert isinstance(error, WorkerHung) and error.worker == 0
    assert "from the inline block, in the caller (is the env hung?)" in str(error)
    assert "--vec.worker-timeout" in str(error)
    assert error.limit == max(FLOOR_S, MARGIN * max(error.measured.values()))
    assert "slow_env.py" in error.traceback and "in step" in error.traceback
    # the vec's own thread is gone, and nothing is left pending in this one
    import threading
    assert not [t for t in threading.enumerate() if t.name == "puffer-vec-inline-watch"]


def test_the_limit_is_the_floor_until_something_slower_is_measured():
    limit = HangLimit(15.0)
    assert limit.seconds() == 15.0
    assert "--vec.worker-timeout (15 s), nothing measured yet" in limit.describe(15.0)
    limit.note("step", 0.01)
    limit.note("reset", 2.0)
    limit.note("reset", 1.0)  # the longest is kept
    assert limit.seconds() == 15.0  # 5 x 2 s is under the floor
    limit.note("reset", 4.0)
    assert limit.seconds() == MARGIN * 4.0
    text = limit.describe(20.0)
    assert text.startswith("no answer within 20 s (is the env hung?)")
    assert "resets 4 s, steps 10 ms" in text
    assert "--vec.worker-timeout 50" in text  # a value above twice the wait
    # heartbeats come several times within the smallest limit a worker can have
    assert heartbeat_interval(0.5) * MARGIN <= 0.5 and heartbeat_interval(15.0) == 1.0
