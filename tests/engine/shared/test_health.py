"""engine/shared/health.py: the per-epoch NaN/inf checks name their source; a full disk is known
however torch wraps it."""

import errno

import pytest
import torch

from puffer_tui.engine.shared import health


def batch(segments=80, horizon=8, obs_dtype=torch.float32):
    return {"rewards": torch.zeros(segments, horizon),
            "observations": torch.zeros(segments, horizon, 3, dtype=obs_dtype)}


def test_a_finite_batch_passes():
    health.check_batch(batch(), num_agents=64)


def test_nan_rewards_name_the_agent_rows():
    data = batch()
    data["rewards"][3, 5] = float("nan")
    data["rewards"][7, 0] = float("-inf")
    with pytest.raises(health.NonFiniteError) as e:
        health.check_batch(data, num_agents=64)
    assert "non-finite rewards of 2 step(s) in 2 segment(s) (agent rows 3, 7)" in e.value.source
    assert e.value.weights_finite


def test_bad_observations_of_later_segments_name_the_segments():
    data = batch()
    data["observations"][70, 2, 1] = float("inf")  # segment 70: handed out mid-batch
    with pytest.raises(health.NonFiniteError, match=r"observations of 1 step\(s\) in 1 "
                       r"segment\(s\) \(segments 70\)"):
        health.check_batch(data, num_agents=64)


def test_integer_observations_are_not_checked():
    health.check_batch(batch(obs_dtype=torch.uint8), num_agents=64)


def small_policy():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))


def test_update_checks_loss_terms_gradients_and_weights():
    policy = small_policy()
    stats = {"policy_loss": 0.1, "value_loss": 0.2, "entropy": 1.0, "approx_kl": 0.0}
    health.check_update(stats, policy)  # all finite
    with pytest.raises(health.NonFiniteError, match="loss term\\(s\\): value_loss") as e:
        health.check_update({**stats, "value_loss": float("nan")}, policy)
    assert e.value.weights_finite
    policy[1].weight.grad = torch.full_like(policy[1].weight, float("nan"))
    with pytest.raises(health.NonFiniteError, match="gradients of 1.weight") as e:
        health.check_update(stats, policy)
    policy[1].weight.grad = None
    with torch.no_grad():
        policy[0].bias[2] = float("inf")
    with pytest.raises(health.NonFiniteError, match="the weights") as e:
        health.check_update(stats, policy)
    assert not e.value.weights_finite


def test_disk_full_is_recognised_through_wrappers():
    full = OSError(errno.ENOSPC, "No space left on device")
    assert health.is_disk_full(full)
    try:
        try:
            raise full
        except OSError as inner:
            raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected "
                               "pos 128 vs 64") from inner
    except RuntimeError as wrapped:
        assert health.is_disk_full(wrapped)
    assert health.is_disk_full(RuntimeError("file write failed: No space left on device"))
    assert not health.is_disk_full(OSError(errno.EIO, "Input/output error"))
    assert not health.is_disk_full(ValueError("nope"))


def test_trainer_stops_at_a_nan_loss_and_its_state_cannot_be_checkpointed(tmp_path,
                                                                           monkeypatch):
    from puffer_tui.engine.algo import minibatch_loss
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared import checkpoint as ckpt
    from puffer_tui.engine.shared.config import load_config

    real = minibatch_loss.ppo_loss

    def nan_value_loss(*args, **kwargs):
        loss, stats, ratio = real(*args, **kwargs)
        return loss * float("nan"), {**stats, "value_loss": stats["value_loss"] * float("nan")}, \
            ratio

    config = load_config("squared", {"vec.num_envs": 16, "train.horizon": 16,
                                     "train.minibatch_size": 128, "train.hidden_size": 16,
                                     "train.torch_threads": 1})
    with Trainer(config) as trainer:
        trainer.run_epoch()
        good = ckpt.save_checkpoint(tmp_path, trainer.state_dict())
        monkeypatch.setattr(minibatch_loss, "ppo_loss", nan_value_loss)
        with pytest.raises(health.NonFiniteError, match="value_loss") as e:
            trainer.run_epoch()
        assert not e.value.weights_finite
        with pytest.raises(ckpt.CheckpointError, match="non-finite values in policy"):
            ckpt.save_checkpoint(tmp_path, trainer.state_dict())
    assert ckpt.list_checkpoints(tmp_path) == [good]


def test_all_finite_is_exact_when_the_sum_overflows():
    big = torch.full((4,), 3e38)  # finite values whose float32 sum overflows to inf
    assert health.all_finite(big)
    big[2] = float("nan")
    assert not health.all_finite(big)
    mixed = torch.tensor([float("inf"), float("-inf")])  # a sum of NaN: still caught
    assert not health.all_finite(mixed)
    assert health.all_finite(torch.tensor([1, 2], dtype=torch.int64))
