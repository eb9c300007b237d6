"""Prioritized segment sampling (PufferLib 3.0): minibatches of whole segments, drawn with
probability p proportional to (sum over the segment's valid steps of |advantage|) ** alpha,
and corrected by importance weights (segments * p) ** -beta, beta annealed from beta0 to 1.

The weights must match how segments are actually drawn, or the correction is wrong:
- prioritized (p not uniform) and a minibatch smaller than the batch: draws WITH replacement,
  so segment i appears count * p_i times on average and count_i * (N p_i) ** -1 averages to
  count / N for every segment: at beta = 1 the weighted minibatch is an unbiased estimate of
  the uniform one. The weights are not renormalised: their mean over draws is then exactly 1,
  so prioritizing does not change the update's scale (dividing by a max would shrink it by a
  data-dependent factor, and the floor priority of an all-zero segment makes that max huge);
- uniform p (alpha = 0, or all priorities equal): drawn without replacement, every segment is
  included with the same probability count / N, so every weight is 1;
- the minibatch is the whole batch: every segment is used exactly once (a permutation), which
  is uniform sampling whatever the priorities, so every weight is 1.
"""

from __future__ import annotations

import torch


def segment_priorities(advantages: torch.Tensor, alpha: float,
                       valid: torch.Tensor | None = None) -> torch.Tensor:
    """Sampling probabilities [segments] from advantages [segments, horizon]. Steps where
    `valid` [segments, horizon] is 0 (masked-out agents, the segment's last step) add nothing:
    their advantages are not training signal."""
    if not 0.0 <= alpha:
        raise ValueError(f"prio_alpha must be >= 0, got {alpha}")
    segments = advantages.shape[0]
    if alpha == 0.0:
        return torch.full((segments,), 1.0 / segments, device=advantages.device)
    magnitude = advantages.abs()
    if valid is not None:
        if valid.shape != advantages.shape:
            raise ValueError(f"valid has shape {tuple(valid.shape)}, advantages "
                             f"{tuple(advantages.shape)}")
        magnitude = torch.where(valid > 0, magnitude, torch.zeros_like(magnitude))
    weight = magnitude.sum(1).pow(alpha)
    weight = torch.nan_to_num(weight, nan=0.0, posinf=0.0, neginf=0.0)
    # The small floor keeps every segment reachable (all-zero advantages -> uniform).
    weight = weight + 1e-6
    return weight / weight.sum()


def annealed_beta(beta0: float, progress: float) -> float:
    """beta0 at the start of the run, 1 at the end (`progress` in [0, 1])."""
    progress = min(max(progress, 0.0), 1.0)
    return beta0 + (1.0 - beta0) * progress


def sample_segments(probs: torch.Tensor, count: int, beta: float,
                    generator: torch.Generator | None = None):
    """(indices [count], importance weights [count, 1]) for one minibatch; see the module
    docstring for which draw is used and why its weights are right."""
    segments = probs.shape[0]
    if not 1 <= count <= segments:
        raise ValueError(f"cannot draw {count} segments from {segments}")
    ones = torch.ones((count, 1), device=probs.device)
    if count == segments:
        return torch.randperm(segments, device=probs.device, generator=generator), ones
    if bool(torch.all(probs == probs[0])):
        idx = torch.randperm(segments, device=probs.device, generator=generator)[:count]
        return idx, ones
    idx = torch.multinomial(probs, count, replacement=True, generator=generator)
    weights = (segments * probs[idx]).pow(-beta)
    return idx, weights.unsqueeze(1)
