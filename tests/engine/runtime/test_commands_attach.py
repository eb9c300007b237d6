"""The command queue is handed the trainer once it is built (`CommandQueue.attach`, as
Telemetry.attach is), instead of reaching it through a getter: a `set` before then is refused
with a reply that says why, and the engine attaches the trainer it builds."""

from __future__ import annotations

from types import SimpleNamespace

from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import LiveChange, RunState


def stand_in_trainer(applied: list):
    return SimpleNamespace(config=load_config("squared"), global_step=64,
                           apply_live=lambda c: applied.append(c) or (c.value, "now"))


def test_a_set_before_the_trainer_is_attached_is_refused_and_after_it_applies():
    state = RunControl()
    state.enter(RunState.RUNNING)
    queue = CommandQueue(state, FrameSource(lambda env: None))
    change = LiveChange("train.learning_rate", 0.002)
    replies, applied = [], []
    queue.put(Command("set", {"change": change}, replies.append))
    queue.safe_point()  # the Trainer's constructor may reach a safe point before attach
    assert replies == [{"ok": False, "error": "train.learning_rate cannot be set yet: the "
                                              "trainer is still being built; try again"}]
    trainer = stand_in_trainer(applied)
    queue.attach(trainer)
    assert queue.trainer is trainer
    queue.put(Command("set", {"change": change}, replies.append))
    queue.put(Command("pause", reply=replies.append))
    queue.put(Command("resume", reply=replies.append))
    queue.safe_point()
    assert applied == [change]
    assert replies[1:] == [{"ok": True, "key": "train.learning_rate", "value": 0.002,
                            "applies": "now"},
                           {"ok": True, "state": RunState.PAUSED},
                           {"ok": True, "state": RunState.RUNNING}]


def test_the_engine_attaches_the_trainer_it_builds(tmp_path, monkeypatch):
    """Engine._train hands its Trainer to the queue as soon as it is built (the run's first
    step stands in: no envs, no learning)."""
    from engine_harness import make_run

    from puffer_tui.engine.algo import trainer as trainer_module
    from puffer_tui.engine.runtime.process import Engine

    seen = {}

    class Built(Exception):
        pass

    class StandIn:
        def __init__(self, config, safe_point, world):
            seen["safe_point"] = safe_point
            self.config, self.global_step = config, 0

        @property
        def torch_threads(self):  # the first thing _train reads after the attach
            seen["attached"] = engine.commands.trainer
            raise Built

    run = make_run(tmp_path)
    engine = Engine(run)
    engine.config = load_config("squared")
    monkeypatch.setattr(trainer_module, "Trainer", StandIn)
    try:
        engine._train()
    except Built:
        pass
    assert seen["safe_point"] == engine.commands.safe_point
    assert isinstance(seen["attached"], StandIn)
