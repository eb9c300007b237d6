"""Continuous control pieces: Box actions (clipping with the sampled action's log-prob, tanh
squashing, the initial and bounded log std), separate actor and critic networks, presets by
env family, and train.stop_at_score."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
import torch
from gymnasium import spaces

from puffer_tui.engine.algo.distributions import LOG_STD_MAX, LOG_STD_MIN, ActionHead
from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.envs.registry import preset_label

BOX = spaces.Box(-1.0, 1.0, (2,), np.float32)


def _gaussian_logp(x, mean, log_std):
    return (-0.5 * ((x - mean) / math.exp(log_std)) ** 2 - log_std
            - 0.5 * math.log(2 * math.pi)).sum(-1)


def test_clipped_actions_keep_the_log_prob_of_the_sampled_action():
    head = ActionHead(BOX, 4, init_log_std=-0.5, squash="clip")
    params = torch.full((4000, 2), 0.9)  # most samples land outside [-1, 1]
    actions, logp = head.sample(params)
    assert (actions.abs() > 1).float().mean() > 0.3  # stored unclipped
    expected = _gaussian_logp(actions.double(), 0.9, -0.5).float()
    torch.testing.assert_close(logp, expected, rtol=1e-5, atol=1e-5)
    env_actions = head.to_env(actions)
    assert env_actions.abs().max() <= 1.0
    inside = actions.abs() <= 1
    assert torch.equal(env_actions[inside], actions[inside])
    # what the learner recomputes for the stored action is the log-prob the sampler gave
    again, _ = head.evaluate(params, actions)
    torch.testing.assert_close(again, logp)


def test_tanh_squash_maps_into_the_bounds_and_keeps_the_gaussian_log_prob():
    space = spaces.Box(np.array([0.0, -2.0], np.float32), np.array([1.0, 6.0], np.float32))
    head = ActionHead(space, 4, init_log_std=0.0, squash="tanh")
    params = torch.randn(1000, 2) * 3
    actions, logp = head.sample(params)
    env_actions = head.to_env(actions)
    assert (env_actions[:, 0] >= 0).all() and (env_actions[:, 0] <= 1).all()
    assert (env_actions[:, 1] >= -2).all() and (env_actions[:, 1] <= 6).all()
    torch.testing.assert_close(head.to_env(torch.zeros(1, 2)), torch.tensor([[0.5, 2.0]]))
    torch.testing.assert_close(logp, _gaussian_logp(actions.double(), params.double(), 0.0)
                               .float(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="finite action bounds"):
        ActionHead(spaces.Box(-np.inf, np.inf, (1,)), 4, squash="tanh")


def test_the_log_std_starts_where_the_config_says_and_stays_bounded():
    head = ActionHead(BOX, 4, init_log_std=-1.5)
    assert torch.equal(head.log_std.detach(), torch.full((2,), -1.5))
    with torch.no_grad():
        head.log_std.copy_(torch.tensor([-50.0, 50.0]))
    _, entropy = head.evaluate(torch.zeros(1, 2), torch.zeros(1, 2))
    expected = LOG_STD_MIN + LOG_STD_MAX + 2 * 0.5 * (1 + math.log(2 * math.pi))
    assert entropy.item() == pytest.approx(expected, rel=1e-5)


def test_the_policy_layers_start_with_the_usual_orthogonal_gains():
    config = load_config("gym:Pendulum-v1", {"train.separate_critic": True,
                                             "train.activation": "tanh"}).train
    policy = make_policy(spaces.Box(-1, 1, (3,), np.float32), BOX, config)
    for weight, gain in ((policy.hidden.weight, math.sqrt(2)),
                         (policy.critic_hidden.weight, math.sqrt(2)),
                         (policy.actor.linear.weight, 0.01), (policy.critic.weight, 1.0)):
        rows = weight @ weight.t() if weight.shape[0] <= weight.shape[1] else weight.t() @ weight
        torch.testing.assert_close(rows, gain ** 2 * torch.eye(rows.shape[0]), atol=1e-5,
                                   rtol=1e-5)


def test_a_separate_critic_shares_no_parameter_with_the_actor():
    config = load_config("gym:Pendulum-v1", {"train.separate_critic": True}).train
    policy = make_policy(spaces.Box(-1, 1, (3,), np.float32), BOX, config)
    obs = torch.randn(5, 3)
    params, value, _ = policy.step(obs)
    value.sum().backward()
    actor = [policy.encoder, policy.hidden, policy.actor]
    assert all(p.grad is None or not p.grad.any() for m in actor for p in m.parameters())
    assert policy.critic_encoder.table.grad.abs().sum() > 0
    seq_params, seq_value = policy.forward_sequence(obs.view(1, 5, 3))
    torch.testing.assert_close(seq_params, params)
    torch.testing.assert_close(seq_value, value)
    with pytest.raises(ConfigError, match="separate_critic"):
        load_config("cartpole", {"train.separate_critic": True, "train.policy": "lstm"})


@pytest.mark.parametrize("env, label", [
    ("gym:HalfCheetah-v5", "MuJoCo locomotion preset (mujoco.toml)"),
    ("gym:Hopper-v5", "MuJoCo locomotion preset (mujoco.toml)"),
    ("gym:Walker2d-v5", "MuJoCo locomotion preset (mujoco.toml)"),
    ("gym:Pendulum-v1", "preset Pendulum-v1.toml"),  # its own, measured
    ("gym:MountainCarContinuous-v0", "preset MountainCarContinuous-v0.toml"),  # its own
    ("gym:Acrobot-v1", "preset Acrobot-v1.toml"),  # the family's in rl-zoo's layout
    ("gym:MountainCar-v0", "classic control preset (classic-control.toml)"),
    ("gym:CartPole-v1", "preset CartPole-v1.toml"),  # its own, measured
    # mpe2's creators are closures of PettingZoo's parallel_wrapper_fn (their __module__ is
    # pettingzoo's): the family comes from the module the user named
    ("pz:mpe2.simple_spread_v3:parallel_env", "PettingZoo MPE preset (mpe.toml)"),
])
def test_each_family_gets_its_preset(env, label):
    if "v5" in env:
        pytest.importorskip("mujoco", reason='pip install "puffer-tui[mujoco]"')
    if "mpe2" in env:
        pytest.importorskip("mpe2", reason='pip install "puffer-tui[pettingzoo]"')
    assert preset_label(env) == label


def test_the_family_presets_set_what_the_family_needs():
    pytest.importorskip("mujoco", reason='pip install "puffer-tui[mujoco]"')
    mujoco = load_config("gym:HalfCheetah-v5").train
    assert mujoco.normalize_observations and mujoco.normalize_rewards
    assert mujoco.separate_critic and mujoco.total_timesteps == 1_000_000
    # its 156k tiny minibatches: gradients written out, quicker than compiled (mujoco.toml)
    assert not mujoco.compile
    # Hopper-v5 takes the family's preset (its own, with a quarter of the updates, learned
    # less: docs/learning-history.md)
    assert vars(load_config("gym:Hopper-v5").train) == vars(mujoco)
    assert not load_config("gym:Pendulum-v1").train.compile  # short runs: no compile wait
    assert load_config("gym:Pendulum-v1").train.total_timesteps <= 1_000_000
    assert load_config("gym:Acrobot-v1").train.total_timesteps <= 1_000_000
    # flags still win over the family
    assert load_config("gym:HalfCheetah-v5", {"train.gamma": 0.9}).train.gamma == 0.9


def test_your_own_module_gets_a_preset_by_its_spaces(tmp_path, monkeypatch):
    from puffer_tui.envs.gym_presets import family

    (tmp_path / "my_control_envs.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        import numpy as np

        class Push(gym.Env):
            observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
            action_space = gym.spaces.Box(-1, 1, (1,), np.float32)
            def reset(self, seed=None, options=None):
                return np.zeros(2, np.float32), {}
            def step(self, action):
                return np.zeros(2, np.float32), 0.0, True, False, {}

        class Pick(Push):
            action_space = gym.spaces.Discrete(3)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert preset_label("my_control_envs:Push") == \
        "continuous control preset (continuous-control.toml)"
    assert preset_label("my_control_envs:Pick") == "classic control preset (classic-control.toml)"
    assert load_config("my_control_envs:Push").train.normalize_rewards
    # a Box-action env of unknown length gets the standard continuous update (the MuJoCo
    # preset's, tuned at 1M steps), not Pendulum's short-task one, which its own file keeps
    push = load_config("my_control_envs:Push").train
    pendulum = load_config("gym:Pendulum-v1").train
    mujoco = family.read_preset_file(family.family_path("mujoco"))["train"]
    for name in ("learning_rate", "update_epochs", "minibatch_size", "init_log_std", "horizon"):
        assert getattr(push, name) == mujoco[name], name
    assert push.exploration == "gaussian" and not push.refresh_advantages
    assert pendulum.exploration == "gsde" and pendulum.refresh_advantages
    assert load_config("gym:MountainCarContinuous-v0").train.exploration == "gsde"


def test_a_family_preset_replaced_by_sweep_best_output_loads(tmp_path, monkeypatch):
    from puffer_tui.envs.gym_presets import family

    (tmp_path / "classic-control.toml").write_text(
        'env_name = "gym:MountainCar-v0"\n\n[train]\nlearning_rate = 0.0042\n')
    monkeypatch.setattr(family, "PRESETS", tmp_path)
    assert load_config("gym:MountainCar-v0").train.learning_rate == 0.0042


SCORING = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
           "train.hidden_size": 16, "train.total_timesteps": 1_000_000,
           "train.torch_threads": 1, "env.max_steps": 5}


def test_stop_at_score_finishes_the_run_once_the_recent_mean_reaches_it():
    with Trainer(load_config("cartpole", {**SCORING, "train.stop_at_score": 1.0})) as trainer:
        epochs = 0
        while not trainer.done and epochs < 50:
            trainer.run_epoch()
            epochs += 1
        assert trainer.done and trainer.global_step < 1_000_000
        assert "train.stop_at_score 1" in trainer.finish_reason
        state = trainer.state_dict()
    # a target above what the episodes score (5 steps of +1 at most) never stops the run
    with Trainer(load_config("cartpole", {**SCORING, "train.stop_at_score": 50.0})) as trainer:
        for _ in range(epochs + 3):
            trainer.run_epoch()
        assert not trainer.done and trainer.finish_reason == ""
        # live: lowering the target ends it at the next check
        trainer.set_hyperparameter("train.stop_at_score", 1.0)
        assert trainer.done
    # a resumed run remembers the recent scores
    with Trainer(load_config("cartpole", {**SCORING, "train.stop_at_score": 1.0})) as resumed:
        resumed.load_state_dict(state)
        assert resumed.done


@pytest.mark.parametrize("refresh, calls", [(True, 8), (False, 1)])
def test_advantages_are_computed_once_a_batch_unless_refreshed(monkeypatch, refresh, calls):
    from puffer_tui.engine.algo import ppo

    seen = []
    real = ppo.compute_advantage

    def counting(values, *args, **kwargs):
        seen.append(values.clone())
        return real(values, *args, **kwargs)

    monkeypatch.setattr(ppo, "compute_advantage", counting)
    config = load_config("cartpole", {**SCORING, "train.update_epochs": 2,
                                      "train.refresh_advantages": refresh})
    with Trainer(config) as trainer:  # 8 segments, 2 a minibatch, 2 epochs: 8 minibatches
        trainer.run_epoch()
        collected = trainer.buffer.values
    assert len(seen) == calls
    assert torch.equal(seen[0], collected)


@pytest.mark.parametrize("env", ["gym:Pendulum-v1", "gym:MountainCarContinuous-v0",
                                 "gym:Acrobot-v1", "gym:CartPole-v1", "gym:HalfCheetah-v5"])
def test_small_mlp_presets_train_on_the_cpu_unless_told_otherwise(env):
    """On an H100 the MuJoCo preset's 64-row minibatches ran at 1,363 steps/s, 90% of it
    learning (launch-bound), about half of what a 2-core CPU does: `auto` would pick CUDA."""
    if "v5" in env:
        pytest.importorskip("mujoco", reason='pip install "puffer-tui[mujoco]"')
    assert load_config(env).train.device == "cpu"
    assert load_config(env, {"train.device": "cuda"}).train.device == "cuda"
    assert load_config("squared").train.device == "auto"  # big batches: the GPU where present
