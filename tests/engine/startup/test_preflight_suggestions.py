"""Every fix a refusal suggests is then accepted: the flags it names, added to the refused
ones, pass the config's rules and the checks before a run starts (a suggestion that led
to the next refusal, e.g. fewer envs whose batch the minibatch no longer fits, is never
shown)."""

from __future__ import annotations

import pytest

from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.startup.preflight import check_start


def _check(env: str, flags: dict) -> None:
    check_start(load_config(env, flags))


def _suggestions(text: str) -> list[dict]:
    """The flag groups after "; use " or "; e.g. ", each as {"section.name": "value"}."""
    marker = "; use " if "; use " in text else "; e.g. "
    assert marker in text, f"no fix suggested: {text}"
    groups = []
    for group in text.split(marker, 1)[1].split(" or "):
        words = group.split()
        assert len(words) % 2 == 0 and all(w.startswith("--") for w in words[::2]), group
        groups.append({flag[2:].replace("-", "_"): value
                       for flag, value in zip(words[::2], words[1::2])})
    return groups


REFUSED = [
    # one epoch over the budget: fewer envs also needs a smaller minibatch
    ("squared", {"train.total_timesteps": 1000}),
    # a Python env's two workers: the envs a multiple of them, then one worker
    ("gym:MountainCar-v0", {"train.total_timesteps": 1000}),
    ("gym:MountainCar-v0", {"train.total_timesteps": 100}),
    ("squared", {"train.minibatch_size": 8192, "vec.num_envs": 64}),
    ("squared", {"train.batch_size": 100, "vec.num_envs": 8}),
    ("squared", {"train.minibatch_size": 100}),
    ("squared", {"vec.backend": "multiprocessing", "vec.num_envs": 10, "vec.num_workers": 4}),
    ("squared", {"train.policy": "lstm", "train.shuffle_steps": True,
                 "train.minibatch_size": 100}),
    ("squared", {"train.exploration": "gsde"}),  # Discrete actions
]


@pytest.mark.parametrize(("env", "flags"), REFUSED)
def test_each_suggested_fix_is_accepted(env, flags):
    with pytest.raises(ConfigError) as refused:
        _check(env, flags)
    text = str(refused.value)
    for fix in _suggestions(text):
        _check(env, {**flags, **fix})  # accepted: raises nothing


def test_fewer_envs_for_a_small_budget_comes_with_the_minibatch_they_fit():
    with pytest.raises(ConfigError) as refused:
        _check("squared", {"train.total_timesteps": 1000})
    assert "--vec.num-envs 15 --train.minibatch-size 960" in str(refused.value)
