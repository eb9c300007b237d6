"""Learning proof: each sanity env is solved with its preset (envs/NAME/config.toml) within the
preset's step budget. Marked `learning` (a minute or two on 2 CPU cores; deselect with
`-m "not learning"`). One torch thread: CI runners are shared, and oversubscribed threads cost
far more than they bring (see engine/algo/trainer.py auto_threads)."""

import pytest

from puffer_tui.benchmarks.time_to_solve import SOLVED, train_until_solved
from puffer_tui.engine.shared.config import load_config

pytestmark = pytest.mark.learning

# env -> (overrides, minimum episodes an epoch must finish to count)
CASES = {
    "bandit": ({}, 64),
    "stochastic": ({}, 64),
    "password": ({}, 64),
    "squared": ({}, 64),
    "cartpole": ({}, 16),
    # The preset's LSTM. That no memoryless policy can solve it is the env's own property,
    # proven without training in tests/envs/test_env_memory.py: the bits are hidden while they are
    # recited (test_observation_by_phase), so a memoryless policy scores about half
    # (test_memoryless_policy_scores_about_half). An MLP trained here for 300k steps showed
    # the same at the cost of a training run.
    "memory": ({}, 64),
}


@pytest.mark.parametrize("env", list(CASES))
def test_env_is_solved_with_its_preset(env):
    overrides, min_episodes = CASES[env]
    config = load_config(env, {"train.torch_threads": 1, **overrides})
    metric, threshold = SOLVED[env]
    result = train_until_solved(config, metric, threshold, min_episodes=min_episodes)
    print(f"\n{env}: solved={result.solved} {metric}={result.value} at step "
          f"{result.global_step:,} uptime {result.uptime:.1f}s ({result.sps:,.0f} SPS, "
          f"{result.parameters:,} parameters)")
    assert result.solved, (
        f"{env} not solved in {config.train.total_timesteps:,} steps: last {metric} "
        f"{result.value}, history {[round(v, 3) for v in result.history if v is not None][-10:]}")
