"""Learning proof for Dict observations: MiniGrid-Empty-8x8 (its `image` + `direction` through
one encoder each, the `mission` text dropped with a warning) reaches mean return >= 0.9 with
its preset (envs/gym_presets/MiniGrid.toml) as a user gets it: only the process layout is set.
Marked `learning`: under 100k agent steps, well under a minute on 2 CPU cores."""

import warnings

import pytest

from puffer_tui.benchmarks.time_to_solve import train_until_solved
from puffer_tui.engine.shared.config import load_config

pytestmark = pytest.mark.learning
pytest.importorskip("minigrid", reason="minigrid not installed (pip install 'puffer-tui[minigrid]')")

OVERRIDES = {"train.torch_threads": 1, "vec.backend": "multiprocessing", "vec.num_workers": 2,
             "train.total_timesteps": 500_000}


def test_minigrid_empty_8x8_is_solved():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "observation subspaces dropped")
        config = load_config("gym:MiniGrid-Empty-8x8-v0", OVERRIDES)
        result = train_until_solved(config, "episode_return", 0.9, min_episodes=32)
    print(f"\nMiniGrid-Empty-8x8: solved={result.solved} return={result.value} at step "
          f"{result.global_step:,} uptime {result.uptime:.1f}s ({result.sps:,.0f} SPS)")
    assert result.solved, (
        f"not solved in {config.train.total_timesteps:,} steps: last return {result.value}, "
        f"history {[round(v, 3) for v in result.history if v is not None][-10:]}")
