"""Evaluation during training (engine/evaluation/periodic_eval.py): eval metrics in the epoch rows, the
training untouched by it, checkpoints/best.pt kept, periodic recordings in the run dir."""

from __future__ import annotations

import json

import pytest
import torch
from engine_harness import make_run

from puffer_tui.engine.evaluation.periodic_eval import (
    BEST_CHECKPOINT,
    BEST_SCORE,
    PeriodicEval,
    criterion,
    read_best,
)
from puffer_tui.engine.runtime.metrics import grouped, read_metrics
from puffer_tui.engine.runtime.process import main as engine_main
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load
from puffer_tui.engine.shared.protocol import EVAL, EVAL_KEYS

STEPS_PER_EPOCH = 64 * 16  # engine_harness.TINY: 64 envs x horizon 16
EPOCHS = 3
TRAINING_COLUMNS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
                    "explained_variance", "learning_rate", "global_step", "score",
                    "episode_return", "episode_length", "episodes")


def _run(root, **overrides):
    """A finished tiny squared run of EPOCHS epochs, trained in this process."""
    run = make_run(root, **{"vec.backend": "serial",
                            "train.total_timesteps": EPOCHS * STEPS_PER_EPOCH, **overrides})
    assert engine_main([str(run)]) == 0
    return run


def _eval_group(row: dict) -> dict:
    """The row's evaluation: metrics.jsonl's eval/<name> columns, regrouped."""
    assert "eval" not in row  # columns, not a nested object
    return grouped(row).get(EVAL, {})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same seeded run without and with evaluation (sampled actions, every epoch,
    recorded every second evaluation)."""
    plain = _run(tmp_path_factory.mktemp("plain"))
    evaluated = _run(tmp_path_factory.mktemp("evaluated"), **{
        "eval.interval": 1, "eval.episodes": 3, "eval.num_envs": 2,
        "eval.deterministic": False, "eval.record_every": 2})
    return plain, evaluated


def test_evaluation_leaves_the_training_batches_and_weights_alone(runs):
    plain, evaluated = runs
    rows_plain, rows_eval = read_metrics(plain), read_metrics(evaluated)
    assert [r["epoch"] for r in rows_plain] == [r["epoch"] for r in rows_eval] == [1, 2, 3]
    for a, b in zip(rows_plain, rows_eval):
        assert {k: a.get(k) for k in TRAINING_COLUMNS} == {k: b.get(k) for k in TRAINING_COLUMNS}
        assert not _eval_group(a)
    last = {run: ckpt.load_checkpoint(ckpt.latest_checkpoint(run)) for run in runs}
    for name, weights in last[plain]["policy"].items():
        assert torch.equal(weights, last[evaluated]["policy"][name]), name
    # the training RNG streams carried on exactly as without evaluation
    assert torch.equal(last[plain]["rng"]["torch"], last[evaluated]["rng"]["torch"])
    assert torch.equal(last[plain]["rng"]["numpy"]["keys"], last[evaluated]["rng"]["numpy"]["keys"])


def test_every_epoch_row_carries_its_evaluation(runs):
    _, evaluated = runs
    for row in read_metrics(evaluated):
        assert {f"eval/{k}" for k in EVAL_KEYS} <= set(row)
        group = _eval_group(row)
        assert set(group) == set(EVAL_KEYS)
        assert group["episodes"] == 3 and group["seconds"] > 0
        assert 0 <= group["score"] <= 1 and group["episode_length"] > 0


def test_the_best_evaluation_keeps_a_loadable_checkpoint(runs, capsys):
    _, evaluated = runs
    best_path = ckpt.checkpoint_dir(evaluated) / BEST_CHECKPOINT
    best = read_best(evaluated)
    values = [criterion(_eval_group(row)) for row in read_metrics(evaluated)]
    assert best["value"] == max(values)
    first_best = values.index(max(values)) + 1
    assert best["epoch"] == first_best and best["global_step"] == first_best * STEPS_PER_EPOCH
    state = ckpt.load_checkpoint(best_path)  # checksum verified
    assert state["epoch"] == first_best
    # not mistaken for the latest checkpoint: resume still takes the newest step-*.pt
    assert ckpt.latest_checkpoint(evaluated).name.startswith("step-")
    # a trainer resumes from it
    from puffer_tui.engine.algo.trainer import Trainer

    with Trainer(load(evaluated / rd.CONFIG_FILE)) as trainer:
        trainer.load_state_dict(state)
        assert trainer.global_step == best["global_step"]
        trainer.run_epoch()
    # and `puffer-tui eval` plays it
    from puffer_tui.app.cli import main as cli_main

    assert cli_main(["eval", str(best_path), "--episodes", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["checkpoint"] == str(best_path) and result["episodes"] == 2


def test_recordings_every_second_evaluation_are_announced(runs):
    pytest.importorskip("imageio", reason='the record extra is not installed: pip install "puffer-tui[record]"')
    from puffer_tui.engine.evaluation.recording import (
        default_scale,
        periodic_recording_path,
        read_recording,
    )

    _, evaluated = runs
    made = sorted(p.name for p in (evaluated / "recordings").iterdir())
    assert made == [periodic_recording_path(evaluated, 2 * STEPS_PER_EPOCH).name]
    path = evaluated / "recordings" / made[0]
    frames = read_recording(path)
    log = (evaluated / rd.EVENTS_FILE).read_text()
    assert f"recording saved: recordings/{made[0]} ({len(frames)} frames" in log
    # squared's 11x11 tiles at the size eval --record makes: about 400 px wide
    scale = default_scale(11)
    assert frames[0].shape == (11 * scale, 11 * scale, 3) and 350 <= 11 * scale <= 450


def test_without_imageio_one_warning_and_training_goes_on(tmp_path, monkeypatch):
    from puffer_tui.engine.evaluation import recording

    def missing(suffix):
        raise recording.RecordingError(f"recording needs imageio: {recording.INSTALL_HINT}")

    monkeypatch.setattr(recording, "encoder", missing)
    run = _run(tmp_path, **{"eval.interval": 1, "eval.episodes": 1, "eval.num_envs": 1,
                            "eval.record_every": 1})
    log = (run / rd.EVENTS_FILE).read_text()
    assert log.count("periodic recordings are off") == 1
    assert 'pip install "puffer-tui[record]"' in log
    assert rd.run_state(run) == "finished"
    assert all(_eval_group(row)["episodes"] == 1 for row in read_metrics(run))
    assert not (run / "recordings").exists()


def test_a_failing_evaluation_is_reported_once_and_training_goes_on(tmp_path, monkeypatch):
    from puffer_tui.engine.evaluation import evaluate

    def broken(self):
        raise RuntimeError("env exploded")

    monkeypatch.setattr(evaluate.Evaluator, "step", broken)
    run = _run(tmp_path, **{"eval.interval": 1, "eval.episodes": 1, "eval.num_envs": 1})
    log = (run / rd.EVENTS_FILE).read_text()
    assert log.count("evaluation failed, training goes on without it") == 1
    assert "env exploded" in log
    assert rd.run_state(run) == "finished" and len(read_metrics(run)) == EPOCHS
    assert not any(_eval_group(row) for row in read_metrics(run))


def test_an_interrupted_evaluation_gives_no_numbers_and_restores_the_generators(tmp_path):
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config
    from puffer_tui.engine.shared.events import EventLog

    config = load_config("squared", {"vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 16, "train.hidden_size": 16,
                                     "train.torch_threads": 1, "eval.interval": 1,
                                     "eval.deterministic": False, "eval.num_envs": 2})
    with Trainer(config) as trainer:
        trainer.run_epoch()
        evaluation = PeriodicEval(config, tmp_path, EventLog(tmp_path), interrupted=lambda: True)
        before = torch.get_rng_state()
        try:
            assert evaluation.due(trainer.epoch)
            assert evaluation.run(trainer) is None
        finally:
            evaluation.close()
        assert torch.equal(torch.get_rng_state(), before)
    assert not (tmp_path / "checkpoints" / BEST_SCORE).exists()


def test_commands_are_applied_between_evaluation_steps(tmp_path):
    """Every step of an evaluation is preceded by `interrupted()` (the engine's safe point:
    a pause waits there, a stop or eval.interval 0 ends it); the evaluation after a late
    answer of True gives no numbers."""
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config
    from puffer_tui.engine.shared.events import EventLog

    config = load_config("squared", {"vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 16, "train.hidden_size": 16,
                                     "train.torch_threads": 1, "eval.interval": 1,
                                     "eval.num_envs": 1, "eval.episodes": 2})
    calls = []

    def interrupted():
        calls.append(evaluation.evaluator.steps)
        return len(calls) > 30

    with Trainer(config) as trainer:
        trainer.run_epoch()
        evaluation = PeriodicEval(config, tmp_path, EventLog(tmp_path), interrupted)
        try:
            group = evaluation.run(trainer)
        finally:
            evaluation.close()
    assert calls[:3] == [0, 1, 2]  # before each step
    if group is None:
        assert len(calls) == 31  # cut short on the 31st
    else:
        assert group["episodes"] == 2 and len(calls) == group["episode_length"] * 2


def test_a_resumed_run_compares_with_the_best_it_kept(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / BEST_SCORE).write_text(json.dumps({"value": 0.75, "epoch": 3}))
    assert read_best(tmp_path)["value"] == 0.75
    (tmp_path / "checkpoints" / BEST_SCORE).write_text("{torn")
    assert read_best(tmp_path) is None
    assert criterion({"score": None, "episode_return": 2.5}) == 2.5
    assert criterion({"score": float("nan"), "episode_return": None}) is None


def test_the_evaluator_samples_from_its_own_stream_and_restarts_alike():
    """Sampled actions draw from the Evaluator's own torch stream: the process's generator is
    left where it was, and the same seed plays the same episodes again (restart or new)."""
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.evaluation.evaluate import Evaluator
    from puffer_tui.engine.shared.config import load_config

    config = load_config("squared", {"vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 16, "train.hidden_size": 16,
                                     "train.torch_threads": 1})
    with Trainer(config) as trainer:
        policy = trainer.policy
        torch.manual_seed(123)
        before = torch.get_rng_state()

        def play(evaluator):
            while not evaluator.finished:
                evaluator.step()
            return evaluator.done_returns, evaluator.done_lengths

        evaluator = Evaluator(policy, config, None, 3, 7, False, 6)
        try:
            first = play(evaluator)
            assert torch.equal(torch.get_rng_state(), before)
            evaluator.restart(8)
            other = play(evaluator)
            evaluator.restart(7)
            assert play(evaluator) == first != other
        finally:
            evaluator.close()
        again = Evaluator(policy, config, None, 3, 7, False, 6)
        try:
            assert play(again) == first
        finally:
            again.close()
        assert torch.equal(torch.get_rng_state(), before)


def test_the_evaluation_envs_take_their_own_settings(tmp_path):
    run = _run(tmp_path, **{"eval.interval": 1, "eval.episodes": 4, "eval.num_envs": 2,
                            "eval.env_overrides": "{max_ticks = 3}"})
    groups = [_eval_group(row) for row in read_metrics(run)]
    assert len(groups) == EPOCHS
    assert all(0 < group["episode_length"] <= 3 for group in groups), groups
    assert load(run / rd.CONFIG_FILE).env.get("max_ticks") != 3  # training kept its own


@pytest.mark.parametrize("text, message", [
    ("max_ticks = 3", "not a TOML inline table"),
    ("{max_ticks = -2}", "eval.env_overrides"),
    ("{size = 9}", "changes what the policy sees"),
])
def test_evaluation_settings_that_cannot_work_are_refused_before_the_run(text, message):
    from puffer_tui.engine.shared.config import ConfigError, load_config
    from puffer_tui.engine.startup.preflight import check_start

    with pytest.raises(ConfigError, match=message):
        check_start(load_config("squared", {"eval.env_overrides": text}))
