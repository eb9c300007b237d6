"""The Python API (puffer_tui.train / load / evaluate, Run, Policy: _pkg/api.py), used as a
script uses it: real engines, real run directories."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

import puffer_tui
from puffer_tui import api
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import RunState

SMALL = {"vec": {"num_envs": 64}, "train": {"minibatch_size": 512}}  # 4,096 steps an epoch


def small_run(tmp_path, **kwargs):
    settings = {**SMALL, **kwargs.pop("sections", {})}
    return puffer_tui.train("squared", total_timesteps=kwargs.pop("total_timesteps", 16_384),
                            runs_dir=tmp_path, **settings, **kwargs)


def test_importing_puffer_tui_loads_neither_torch_nor_textual():
    code = ("import sys, puffer_tui; puffer_tui.__version__; "
            "print(json.dumps(sorted(m for m in ('torch', 'textual') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == []


def test_settings_come_as_sections_or_dotted_keys():
    assert api.settings_from({"train": {"learning_rate": 3e-4}, "vec.num_envs": 8,
                              "env": {"size": 9}}) == {
        "train.learning_rate": 3e-4, "vec.num_envs": 8, "env.size": 9}


def test_a_bare_setting_is_refused_with_the_section_it_belongs_in():
    with pytest.raises(puffer_tui.ConfigError, match=r'train=\{"learning_rate": 0.001\}'):
        api.settings_from({"learning_rate": 1e-3})
    with pytest.raises(puffer_tui.ConfigError, match="takes a dict of settings"):
        api.settings_from({"train": 3})
    with pytest.raises(puffer_tui.ConfigError, match="unknown section trian=.*did you mean train="):
        api.settings_from({"trian": {"learning_rate": 1e-3}})


def test_refusals_name_settings_as_a_script_writes_them(tmp_path):
    with pytest.raises(puffer_tui.ConfigError, match=r"did you mean train\.learning_rate\?"):
        puffer_tui.train("squared", train={"learning_rat": 1e-3}, runs_dir=tmp_path)
    with pytest.raises(puffer_tui.ConfigError) as refused:
        puffer_tui.train("squared", total_timesteps=1000, runs_dir=tmp_path)
    assert "train.total_timesteps=65536" in str(refused.value)
    assert "--" not in str(refused.value)
    with pytest.raises(puffer_tui.ConfigError, match="Stable-Baselines3's name; here it is "
                                                     "train.horizon"):
        puffer_tui.train("squared", train={"n_steps": 128}, runs_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_misspelled_setting_is_refused_before_any_run_dir_exists(tmp_path):
    with pytest.raises(puffer_tui.ConfigError, match="did you mean train.learning_rate"):
        puffer_tui.train("squared", train={"learning_rat": 1e-3}, runs_dir=tmp_path)
    with pytest.raises(puffer_tui.ConfigError):
        puffer_tui.train("squard", runs_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_train_blocks_until_the_run_finished_and_reads_back(tmp_path):
    run = small_run(tmp_path, seed=3)
    assert run.state == RunState.FINISHED
    rows = run.metrics()
    assert [row["epoch"] for row in rows] == [1, 2, 3, 4]
    assert rows[-1]["global_step"] == 16_384 == run.global_step
    assert all("policy_loss" in row for row in rows)
    assert run.checkpoints() and all(path.is_file() for path in run.checkpoints())
    assert api.Run(run.name, runs_dir=tmp_path).path == run.path  # opened by name
    policy = run.policy()
    single = np.zeros(policy.observation_space.shape, np.uint8)
    action = policy.act(single)
    assert isinstance(action, int) and 0 <= action < policy.action_space.n
    batch = np.zeros((5, *policy.observation_space.shape), np.uint8)
    assert policy.act(batch).shape == (5,)
    assert isinstance(policy.value(single), float) and policy.value(batch).shape == (5,)
    with pytest.raises(ValueError, match="takes"):
        policy.act(np.zeros(3))
    with pytest.raises(ValueError, match="pass the observation alone"):
        policy.act((single, {}))


def test_on_epoch_returning_stop_leaves_a_stopped_resumable_run(tmp_path):
    seen = []

    def on_epoch(row):
        seen.append(row["epoch"])
        return "stop" if row["epoch"] == 2 else None

    run = small_run(tmp_path, total_timesteps=400_000, on_epoch=on_epoch)
    assert run.state == RunState.STOPPED
    assert seen == [1, 2], seen  # never called again once it asked for the stop
    assert run.global_step < 400_000
    assert "on_epoch returned 'stop' at epoch 2" in (run.path / rd.EVENTS_FILE).read_text()
    assert run.checkpoints()
    resumed = puffer_tui.train(resume=run, total_timesteps=run.global_step + 8192,
                               runs_dir=tmp_path)
    assert resumed.path == run.path and resumed.state == RunState.FINISHED


def test_an_exception_in_on_epoch_stops_the_run_with_a_checkpoint_and_is_raised(tmp_path):
    class Mine(Exception):
        pass

    def on_epoch(row):
        raise Mine("from the script")

    with pytest.raises(Mine, match="from the script"):
        small_run(tmp_path, total_timesteps=400_000, on_epoch=on_epoch)
    (run_dir,) = rd.list_runs(tmp_path)
    assert rd.run_state(run_dir) == RunState.STOPPED
    assert rd.run_info(run_dir).last_checkpoint is not None


@pytest.mark.slow
def test_a_detached_run_takes_live_settings_and_stops_from_the_script(tmp_path):
    run = small_run(tmp_path, total_timesteps=50_000_000, detach=True)
    try:
        assert run.running
        assert run.set(learning_rate=0.0123) == {"train.learning_rate": 0.0123}
        with pytest.raises(puffer_tui.ConfigError, match="not a live setting"):
            run.set(horizon=4)
        with pytest.raises(puffer_tui.ConfigError):
            run.set(learning_rate=-1)
        assert run.stop() == RunState.STOPPED
    finally:
        if run.running:
            run.stop()
    assert run.checkpoints()


def test_inline_runs_raise_the_envs_own_exception_in_the_caller(tmp_path):
    from exploding_gym_env import EnvExploded

    with pytest.raises(EnvExploded, match="exploded on purpose") as caught:
        puffer_tui.train("exploding_gym_env:make", env={"explode_at": 40}, inline=True,
                         total_timesteps=100_000, runs_dir=tmp_path,
                         vec={"num_envs": 4}, train={"minibatch_size": 64})
    assert any(entry.name == "explode" for entry in caught.traceback)
    (run_dir,) = rd.list_runs(tmp_path)
    assert rd.run_state(run_dir) == RunState.ERROR


def test_inline_runs_call_on_epoch_with_the_metrics_row_and_stop_on_request(tmp_path):
    rows = []

    def on_epoch(row):
        rows.append(row)
        assert threading.current_thread() is threading.main_thread()
        return "stop" if len(rows) == 2 else None

    run = puffer_tui.train("exploding_gym_env:make", inline=True, total_timesteps=1_000_000,
                           runs_dir=tmp_path, vec={"num_envs": 4},
                           train={"minibatch_size": 64}, on_epoch=on_epoch)
    assert run.state == RunState.STOPPED and len(rows) == 2
    assert rows == run.metrics()[:2]  # the same dicts as metrics.jsonl
    assert puffer_tui.load(run).env_name == "exploding_gym_env:make"


def test_inline_refuses_another_backend(tmp_path):
    with pytest.raises(puffer_tui.ConfigError, match="inline=True"):
        puffer_tui.train("squared", inline=True, vec={"backend": "multiprocessing"},
                         runs_dir=tmp_path)


def test_evaluate_gives_the_numbers_eval_prints(tmp_path):
    run = small_run(tmp_path)
    ours = puffer_tui.evaluate(run.policy(), episodes=6, seed=5, num_envs=3)
    cli = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "eval", str(run.path), "--episodes", "6",
         "--seed", "5", "--num-envs", "3", "--json"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    theirs = json.loads(cli.stdout)
    for key in ("episodes", "score", "episode_return", "episode_length", "checkpoint"):
        assert ours[key] == theirs[key], key
    assert len(ours["episode_returns"]) == 6
    assert np.mean(ours["episode_returns"]) == pytest.approx(ours["episode_return"])
    with pytest.raises(TypeError, match="env is an env's name"):
        puffer_tui.evaluate(run.policy(), object())


def test_load_names_what_is_missing(tmp_path):
    run = small_run(tmp_path)
    with pytest.raises(puffer_tui.CheckpointError, match="has no best.pt"):
        puffer_tui.load(run, "best")
    with pytest.raises(puffer_tui.CheckpointError, match="no checkpoint nope.pt"):
        puffer_tui.load(run, "nope.pt")
    assert puffer_tui.load(run.checkpoints()[-1]).checkpoint == run.checkpoints()[-1]
