"""`puffer-tui bench envs` (benchmarks/env_speed.py): the actions it replays, what it counts
per second, and the input it refuses."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from puffer_tui.app.cli import main as cli_main
from puffer_tui.benchmarks import env_speed
from puffer_tui.envs import make


def test_random_actions_fit_the_env_and_repeat_with_the_seed():
    env = make("squared", num_envs=3, seed=0)
    try:
        actions = env_speed.random_actions(env, 40, seed=7)
        assert actions.shape == (40, *env.actions.shape)
        assert actions.dtype == env.actions.dtype
        assert all(env.action_space.contains(row) for row in actions)
        assert np.array_equal(actions, env_speed.random_actions(env, 40, seed=7))
        assert not np.array_equal(actions, env_speed.random_actions(env, 40, seed=8))
    finally:
        env.close()


def test_measure_counts_agent_steps_and_env_steps_per_second():
    result = env_speed.measure("squared", num_envs=4, seconds=0.05)
    assert result["num_envs"] == 4
    assert result["steps"] > 0 and result["steps"] % 64 == 0  # calls are counted in rounds of 64
    assert result["seconds"] >= 0.05
    assert result["sps"] == pytest.approx(
        result["steps"] * result["num_agents"] / result["seconds"])
    assert result["env_sps"] == pytest.approx(result["steps"] * 4 / result["seconds"])


def args(**given) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    env_speed.add_arguments(parser)
    return parser.parse_args([], argparse.Namespace(**given))


def test_an_unknown_env_is_refused_with_the_names_there_are():
    with pytest.raises(SystemExit, match=r"unknown env\(s\): nope; available: squared, "):
        env_speed.run(args(env=["squared", "nope"]))


@pytest.mark.parametrize("given", [{"num_envs": 0}, {"seconds": 0.0}])
def test_no_envs_or_no_time_is_refused(given):
    with pytest.raises(SystemExit, match="--num-envs must be >= 1 and --seconds > 0"):
        env_speed.run(args(env=["squared"], **given))


def test_bench_envs_on_the_command_line_runs_this_module(capsys):
    """The kind `envs` maps to this module, whose name is not the kind's (app/commands/bench.py)."""
    assert cli_main(["bench", "envs", "--json", "--env", "squared", "--num-envs", "2",
                     "--seconds", "0.05"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed["envs"]) == ["squared"]
    assert printed["envs"]["squared"]["num_envs"] == 2
    assert "machine" in printed


def test_a_refusal_on_the_command_line_is_one_line_and_exit_2(capsys):
    assert cli_main(["bench", "envs", "--env", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("unknown env(s): nope; available: "), err
