"""The engine's parts built from explicit inputs: RunControl, FrameSource, the command queue
that drives them, and Telemetry reading only what it was given."""

from __future__ import annotations

import os

import numpy as np

from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.runtime.telemetry import Telemetry, TrainerFeed
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import RunState


def test_state_pause_resume_and_stop_follow_the_rules():
    state = RunControl()
    assert state.run_state == RunState.STARTING and not state.paused
    assert not state.resume()  # nothing to resume
    state.enter(RunState.RUNNING)
    assert state.pause() and state.paused and state.run_state == RunState.PAUSED
    assert not state.pause()  # already paused
    assert state.resume() and not state.paused and state.run_state == RunState.RUNNING
    state.pause()
    state.request_stop(checkpoint=False)
    # a stop releases a paused run, and no pause holds it back afterwards
    assert not state.paused and state.stop_requested and not state.stop_checkpoint
    assert state.run_state == RunState.STOPPING
    assert not state.pause() and not state.paused
    state.withdraw_stop()
    assert not state.stop_requested


def test_frame_source_captures_only_wanted_envs_and_numbers_each_frame():
    grabbed = []

    def grab(env):
        grabbed.append(env)
        if env == 3:
            raise IndexError("no env 3")  # a bad index shows nothing, breaks nothing
        return np.full((2, 2), env, dtype=np.uint8)

    frames = FrameSource(grab)
    assert not frames.due()
    frames.want(frozenset({1, 3}))
    assert frames.due()
    frames.capture()
    assert sorted(grabbed) == [1, 3] and set(frames.frames) == {1}
    seq, tiles = frames.frames[1]
    assert tiles[0, 0] == 1
    frames.want(frozenset({1}))  # a new wish is served at once
    assert frames.due()
    frames.capture()
    assert frames.frames[1][0] > seq


def test_queue_drives_the_state_it_was_given():
    state = RunControl()
    state.enter(RunState.RUNNING)
    frames = FrameSource(lambda env: np.zeros((1, 1), dtype=np.uint8))
    commands = CommandQueue(state, frames)
    replies = []
    # paused, the safe point blocks on the queue until resume or stop: the stop is waiting
    commands.put(Command("pause", reply=replies.append))
    commands.put(Command("stop", {"checkpoint": False}, reply=replies.append))
    commands.safe_point()
    assert replies == [{"ok": True, "state": RunState.PAUSED},
                       {"ok": True, "state": RunState.STOPPING}]
    assert state.stop_requested and not state.stop_checkpoint and not state.paused


def test_paused_queue_is_woken_to_capture_a_wanted_frame():
    state = RunControl()
    grabbed_while_paused = []

    def grab(env):
        grabbed_while_paused.append(state.paused)
        return np.full((1, 1), env, dtype=np.uint8)

    frames = FrameSource(grab)
    commands = CommandQueue(state, frames)
    state.pause()
    commands.want_frames(frozenset({2}))
    commands.put(Command("resume"))  # a paused safe point waits for this one
    commands.safe_point()
    assert grabbed_while_paused[0] is True and 2 in frames.frames


class _Trainer:
    def __init__(self, config):
        self.config = config
        self.progress = {"global_step": 40, "epoch": 2, "sps": 1000.0, "uptime": 3.0}
        self.worker_pids = [11, 12]
        self.device = "cpu"


def test_telemetry_reads_only_its_inputs():
    config = load_config("squared", {"train.total_timesteps": 1040})
    state = RunControl()
    telemetry = Telemetry(config, "run-1", state)
    before = telemetry.snapshot()  # no trainer yet: the config answers
    assert before.state == RunState.STARTING and before.global_step == 0
    assert before.run == "run-1" and before.processes == [{"role": "engine", "pid": os.getpid()}]
    trainer = _Trainer(config)
    telemetry.attach(TrainerFeed.of(trainer), lambda: [{"rule": "plateau"}])
    state.enter(RunState.RUNNING)
    telemetry.record({"losses": {"policy_loss": 0.5}, "learning_rate": 0.01})
    now = telemetry.snapshot()
    assert now.global_step == 40 and now.sps == 1000.0 and now.eta == 1.0
    assert now.losses == {"policy_loss": 0.5} and now.learning_rate == 0.01
    assert [p.get("pid") for p in now.processes[1:]] == [11, 12]
    assert now.device == "cpu" and now.diagnoses == [{"rule": "plateau"}]
    trainer.progress = {**trainer.progress, "global_step": 80}  # the feed reads it live
    assert telemetry.snapshot().global_step == 80
    state.pause()
    assert telemetry.snapshot().sps == 0.0  # nothing steps while paused
