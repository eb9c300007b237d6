"""`train.shuffle_steps`: an MLP policy's minibatches are single steps from the whole batch,
each epoch one permutation of it (standard PPO), rather than whole segments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo import ppo as ppo_module
from puffer_tui.engine.algo.minibatch_loss import AutogradLoss
from puffer_tui.engine.algo.policy import Policy
from puffer_tui.engine.algo.ppo import PPO
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.shared.config_fields import TrainConfig

SEGMENTS, HORIZON = 6, 8


def _train(**changes) -> TrainConfig:
    base = dict(minibatch_size=12, update_epochs=3, shuffle_steps=True, prio_alpha=0.0,
                refresh_advantages=False, learning_rate=1e-3, anneal_lr=False,
                vf_clip_coef=0.0, total_timesteps=1000)
    return TrainConfig(**{**base, **changes})


def _data(seed: int = 0) -> dict:
    """A batch whose observation at (segment s, step t) is its own id s * HORIZON + t."""
    rng = np.random.default_rng(seed)
    shape = (SEGMENTS, HORIZON)
    ids = torch.arange(SEGMENTS * HORIZON, dtype=torch.float32).view(*shape, 1)
    terminals = torch.from_numpy((rng.random(shape) < 0.1).astype(np.float32))
    return {
        "observations": ids, "actions": torch.from_numpy(rng.normal(size=(*shape, 1))
                                                         .astype(np.float32)),
        "logprobs": torch.full(shape, -1.0), "values": torch.from_numpy(
            rng.normal(size=shape).astype(np.float32)),
        "rewards": torch.from_numpy(rng.normal(size=shape).astype(np.float32)),
        "terminals": terminals, "truncations": torch.zeros(shape),
        "masks": torch.ones(shape),
    }


def _learner(record: list) -> PPO:
    torch.manual_seed(0)
    box = spaces.Box(-1e6, 1e6, (1,), np.float32)
    policy = Policy(box, spaces.Box(-1.0, 1.0, (1,), np.float32), hidden_size=8,
                    separate_critic=True, activation="tanh")

    def forward(obs, state, starts):
        record.append((tuple(obs.shape), obs.reshape(-1).long().tolist(), starts.shape))
        return policy.forward_sequence(obs, state, starts)

    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    return PPO(optimizer, AutogradLoss(policy, optimizer, forward))


def test_each_epoch_is_one_permutation_of_the_batchs_steps():
    seen: list = []
    train = _train()
    row = _learner(seen).update(_data(), lambda: train, 0, lambda: None)
    steps = SEGMENTS * HORIZON
    per_epoch = steps // train.minibatch_size
    assert row["minibatches"] == train.update_epochs * per_epoch == len(seen)
    for shape, _, starts_shape in seen:
        assert shape == (train.minibatch_size, 1, 1) and tuple(starts_shape) == (12, 1)
    for epoch in range(train.update_epochs):
        ids = [i for _, batch, _ in seen[epoch * per_epoch:(epoch + 1) * per_epoch]
               for i in batch]
        assert sorted(ids) == list(range(steps)), epoch
    # steps from every part of the batch mix in a minibatch: not one segment's run of steps
    first = seen[0][1]
    assert len({i // HORIZON for i in first}) > 2


def test_segment_minibatches_stay_the_default():
    seen: list = []
    train = _train(shuffle_steps=False, minibatch_size=2 * HORIZON)
    _learner(seen).update(_data(), lambda: train, 0, lambda: None)
    for shape, ids, _ in seen:
        assert shape == (2, HORIZON, 1)
        assert ids[1] - ids[0] == 1  # consecutive steps of a segment


def test_refreshed_values_land_on_the_steps_they_were_computed_for(monkeypatch):
    """With refresh_advantages the next minibatch's advantages read the values the previous
    minibatch wrote back: exactly its own (shuffled) steps changed."""
    calls = []
    real = ppo_module.compute_advantage

    def spy(values, *args, **kwargs):
        calls.append(values.clone())
        return real(values, *args, **kwargs)

    monkeypatch.setattr(ppo_module, "compute_advantage", spy)
    seen: list = []
    data = _data()
    train = _train(refresh_advantages=True, update_epochs=1)
    _learner(seen).update(data, lambda: train, 0, lambda: None)
    first_ids = seen[0][1]
    changed = (calls[1] != data["values"]).view(-1).nonzero().view(-1).tolist()
    assert sorted(changed) == sorted(first_ids)


def test_an_lstm_batch_is_refused_by_name():
    seen: list = []
    data = {**_data(), "state_h": torch.zeros(SEGMENTS, 8), "state_c": torch.zeros(SEGMENTS, 8)}
    with pytest.raises(ValueError, match="shuffle_steps is for feedforward policies"):
        _learner(seen).update(data, lambda: _train(), 0, lambda: None)


def test_config_checks_name_the_conflicts():
    with pytest.raises(ConfigError, match="shuffle_steps is for feedforward policies"):
        load_config("squared", {"train.shuffle_steps": True, "train.policy": "lstm",
                                "train.prio_alpha": 0.0})
    with pytest.raises(ConfigError, match="set prio_alpha 0"):
        load_config("squared", {"train.shuffle_steps": True, "train.prio_alpha": 0.5})
    # single steps: a minibatch need not be whole segments
    config = load_config("squared", {"train.shuffle_steps": True, "train.prio_alpha": 0.0,
                                     "train.horizon": 64, "train.minibatch_size": 100})
    assert config.train.minibatch_size == 100
    with pytest.raises(ConfigError, match="minibatches are whole segments"):
        load_config("squared", {"train.horizon": 64, "train.minibatch_size": 100})


def test_the_mujoco_preset_shuffles_steps():
    from puffer_tui.envs.gym_presets.family import family_path, read_preset_file

    train = read_preset_file(family_path("mujoco"))["train"]
    assert train["shuffle_steps"] is True and train["prio_alpha"] == 0.0
