"""One PPO update over a collected batch, on one page (CleanRL's loop, PufferLib 3.0's options):

    for each minibatch:  advantages -> the minibatch plan -> loss and gradients -> step

- advantages: GAE with V-trace clipping (engine/algo/advantage.py). With
  train.refresh_advantages they are recomputed before every minibatch (cheap: the C kernel)
  from the latest importance ratios and values, so V-trace corrects for how far the policy has
  moved since collection; without, once, from the collected values.
- the minibatch plan (engine/algo/minibatch_plan.py): shuffled single steps, or whole segments
  drawn by priority with importance weights.
- loss and gradients (engine/algo/minibatch_loss.py): the PPO loss of engine/algo/ppo_loss.py
  through autograd, or the same written out in numpy for a plain MLP on the CPU.
- step: gradient-norm clipping, then the optimizer (Adam or Muon, engine/algo/optimizers.py) at
  the scheduled learning rate, scaled by the adaptive rule (engine/algo/adaptive_lr.py) where on.
  train.target_kl stops the update early, SB3's way, once a minibatch finds the policy too far
  from the one that collected the batch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from puffer_tui.engine.algo.adaptive_lr import AdaptiveRate
from puffer_tui.engine.algo.advantage import compute_advantage
from puffer_tui.engine.algo.minibatch_loss import AutogradLoss, NumpyLoss
from puffer_tui.engine.algo.minibatch_plan import batch_rows, minibatch_plan
from puffer_tui.engine.algo.schedule import START, Anchor, learning_rate
from puffer_tui.engine.shared.protocol import LOSS_KEYS

# averaged over minibatches (explained variance is computed once, over the whole batch)
STAT_NAMES = tuple(k for k in LOSS_KEYS if k != "explained_variance")


def explained_variance(values: torch.Tensor, returns: torch.Tensor, valid: torch.Tensor) -> float:
    count = valid.sum().clamp(min=1.0)
    mean = (returns * valid).sum() / count
    var_returns = (((returns - mean) * valid) ** 2).sum() / count
    residual = returns - values
    res_mean = (residual * valid).sum() / count
    var_residual = (((residual - res_mean) * valid) ** 2).sum() / count
    if var_returns.item() <= 1e-12:
        return 0.0  # constant returns: nothing to explain (and NaN is not JSON)
    return float(1.0 - var_residual / var_returns)


def kl_too_far(stats: dict, train) -> bool:
    """SB3's early stop: whether this minibatch's approx_kl (measured before its step) is
    over 1.5x `train.target_kl`. Off (0) it reads nothing, so the minibatch loop never waits
    on the device."""
    target = float(getattr(train, "target_kl", 0.0))
    return target > 0.0 and float(stats["approx_kl"]) > 1.5 * target


class PPO:
    """The update, given the optimizer and how a minibatch's gradients are computed."""

    def __init__(self, optimizer, gradients: AutogradLoss | NumpyLoss):
        self.optimizer, self.gradients = optimizer, gradients
        self.last_update: dict = {}  # what engine/diagnosis reads after each epoch

    def set_learning_rate(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def update(self, data: dict, get_train: Callable, global_step: int,
               safe_point: Callable[[], None], schedule: Anchor = START,
               adaptive: AdaptiveRate | None = None) -> dict:
        """Train on `data` (RolloutBuffer.tensors on the device). `get_train()` returns the
        current train config: live changes made at a safe point apply to the next minibatch.
        `schedule` anchors the learning-rate and beta schedules (engine/algo/schedule.py)."""
        train = get_train()
        terminals, truncations = data["terminals"], data["truncations"]
        values = data["values"].clone()  # refreshed with each minibatch's new values
        ratio = torch.ones_like(values)
        valid = data["masks"].clone()
        valid[:, -1] = 0.0  # a segment's last step has no successor here, hence no advantage
        advantages = torch.empty_like(values)
        batch = batch_rows(data, values, ratio, valid, advantages, (terminals + truncations) > 0,
                           bool(getattr(train, "shuffle_steps", False)), self.gradients.arrays)
        plan = minibatch_plan(batch, train, self.gradients.arrays, advantages, valid,
                              global_step, schedule)
        minibatches = train.update_epochs * plan.per_epoch

        # sums stay on the device through autograd (no sync per minibatch), floats in numpy
        sums = {name: 0.0 for name in STAT_NAMES}
        grad_norm = grad_clipped = 0.0  # pre-clip norms, for engine/diagnosis/rules.py
        clamped_at, rewards = None, data["rewards"]  # train.reward_clamp's rewards, and its value
        measured = stepped = 0  # minibatches whose loss was computed, and those stepped
        for i in range(minibatches):
            if i:
                safe_point()
                train = get_train()
            scheduled = learning_rate(train, global_step, schedule)
            self.set_learning_rate(scheduled if adaptive is None
                                   else adaptive.rate(train, scheduled))

            # 1. advantages
            refresh = train.refresh_advantages
            if i == 0 or refresh:
                if train.reward_clamp != clamped_at:  # live: clamped again only on a change
                    clamped_at = train.reward_clamp
                    rewards = (data["rewards"].clamp(-clamped_at, clamped_at) if clamped_at > 0
                               else data["rewards"])
                compute_advantage(values if refresh else data["values"], rewards, terminals,
                                  truncations, ratio, train.gamma, train.gae_lambda,
                                  train.vtrace_rho_clip, train.vtrace_c_clip, out=advantages,
                                  final_values=data.get("final_values"))
            if i == 0:
                ev = explained_variance(values, advantages + values, valid)

            # 2. the minibatch, 3. its loss and gradients (every parameter's .grad)
            mb = plan.minibatch(i, train, refresh)
            stats, new_ratio, new_value = self.gradients(mb, train)
            measured = i + 1
            if kl_too_far(stats, train):  # stats of the policy before this step, not taken
                for name in STAT_NAMES:
                    sums[name] += stats[name]
                break

            # 4. the step
            if train.max_grad_norm > 0:
                norm = self.gradients.clip(train.max_grad_norm)
                grad_norm += norm
                grad_clipped += norm > train.max_grad_norm
            self.optimizer.step()
            stepped = i + 1
            if refresh:  # what the next minibatch's V-trace reads
                batch.ratio[mb.rows] = new_ratio.reshape(plan.mb_rows, batch.cols)
                batch.values[mb.rows] = new_value.reshape(plan.mb_rows, batch.cols)
            for name in STAT_NAMES:
                sums[name] += stats[name]

        row = {name: float(sums[name]) / measured for name in STAT_NAMES}
        row["explained_variance"] = ev
        row["learning_rate"] = float(self.optimizer.param_groups[0]["lr"])
        row["minibatches"] = stepped  # fewer than planned when train.target_kl stopped it
        row["grad_norm"] = float(grad_norm) / measured  # 0 when clipping is off
        row["grad_clipped"] = float(grad_clipped) / measured  # share clipped
        self.last_update = row
        return row
