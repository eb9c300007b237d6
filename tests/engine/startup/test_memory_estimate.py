"""engine/startup/memory_estimate.py: sizes that cannot fit are refused with the figures."""

import pytest

from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.startup.memory_estimate import MemoryEstimateError, check_memory, estimate

GB = 1 << 30


def test_the_default_run_fits_in_a_gigabyte():
    need = check_memory(load_config("squared"), available=GB)
    assert need.total < GB


def test_a_million_envs_is_refused_with_the_figures_and_what_to_lower():
    config = load_config("squared", {"vec.num_envs": 1_000_000})
    with pytest.raises(MemoryEstimateError) as e:
        check_memory(config, available=8 * GB)
    text = str(e.value)
    assert isinstance(e.value, ConfigError)  # the CLI prints it as a one-line refusal
    assert "\n" not in text
    assert "need about" in text and "8.0 GB is available" in text
    assert "rollout" in text and "vec.num_envs (1000000)" in text


def test_the_estimate_grows_with_the_sizes():
    base = estimate(load_config("squared", {"vec.num_envs": 1000}))
    more_envs = estimate(load_config("squared", {"vec.num_envs": 2000}))
    assert more_envs.rollout == pytest.approx(2 * base.rollout, rel=0.01)
    assert more_envs.envs == pytest.approx(2 * base.envs, rel=0.01)
    lstm = estimate(load_config("squared", {"vec.num_envs": 1000, "train.policy": "lstm",
                                            "train.hidden_size": 1024}))
    assert lstm.model > 50 * base.model
    workers = estimate(load_config("squared", {"vec.num_envs": 1000,
                                               "vec.backend": "multiprocessing",
                                               "vec.num_workers": 4}))
    assert workers.envs > base.envs
