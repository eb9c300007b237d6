"""The PPO loss: clipped surrogate, clipped value loss and entropy bonus, averaged over the
valid steps only (rows whose mask is false, dead or inactive agents, contribute nothing)."""

from __future__ import annotations

import torch


def masked_mean(x: torch.Tensor, weight: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return (x * weight).sum() / count


def normalize_advantages(adv: torch.Tensor, valid: torch.Tensor,
                         count: torch.Tensor | None = None) -> torch.Tensor:
    """(adv - mean) / std over the valid steps; invalid steps come out 0. `count`: the valid
    steps, at least 1, where the caller has it already."""
    if count is None:
        count = valid.sum().clamp(min=1.0)
    mean = (adv * valid).sum() / count
    var = (((adv - mean) * valid) ** 2).sum() / count.clamp(min=2.0)
    return (adv - mean) / (var.sqrt() + 1e-8) * valid


def ppo_loss(new_logprob, old_logprob, entropy, new_value, old_value, advantages, returns,
             valid, clip_coef: float, vf_clip_coef: float, vf_coef: float, ent_coef: float,
             count: torch.Tensor | None = None):
    """(loss, stats of detached scalars, ratio). All inputs flat [N]; `valid` is 0/1 float;
    `advantages` already normalised and importance-weighted; `count` as in
    normalize_advantages."""
    if count is None:
        count = valid.sum().clamp(min=1.0)
    logratio = new_logprob - old_logprob
    ratio = logratio.exp()

    surrogate = torch.max(-advantages * ratio,
                          -advantages * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef))
    policy_loss = masked_mean(surrogate, valid, count)

    error = (new_value - returns) ** 2
    if vf_clip_coef > 0:
        clipped = old_value + (new_value - old_value).clamp(-vf_clip_coef, vf_clip_coef)
        error = torch.max(error, (clipped - returns) ** 2)
    value_loss = 0.5 * masked_mean(error, valid, count)

    entropy_mean = masked_mean(entropy, valid, count)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy_mean

    with torch.no_grad():
        stats = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": entropy_mean.detach(),
            "approx_kl": masked_mean((ratio - 1) - logratio, valid, count),
            "clipfrac": masked_mean(((ratio - 1).abs() > clip_coef).float(), valid, count),
        }
    return loss, stats, ratio
