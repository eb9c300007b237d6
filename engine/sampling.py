"""Prioritized segment sampling (PufferLib 3.0): minibatches of whole segments, drawn with
probability proportional to (sum over the segment of |advantage|) ** alpha, and corrected by
importance weights (segments * p) ** -beta, with beta annealed from beta0 to 1 over the run.

alpha = 0 gives uniform sampling and weights of exactly 1.
"""

from __future__ import annotations

import torch


def segment_priorities(advantages: torch.Tensor, alpha: float) -> torch.Tensor:
    """Sampling probabilities [segments] from advantages [segments, horizon]."""
    if not 0.0 <= alpha:
        raise ValueError(f"prio_alpha must be >= 0, got {alpha}")
    segments = advantages.shape[0]
    if alpha == 0.0:
        return torch.full((segments,), 1.0 / segments, device=advantages.device)
    weight = advantages.abs().sum(1).pow(alpha)
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
    """(indices [count] drawn without replacement, importance weights [count, 1])."""
    segments = probs.shape[0]
    if not 1 <= count <= segments:
        raise ValueError(f"cannot draw {count} segments from {segments}")
    if count == segments:
        idx = torch.randperm(segments, device=probs.device, generator=generator)
    else:
        idx = torch.multinomial(probs, count, replacement=False, generator=generator)
    weights = (segments * probs[idx]).pow(-beta)
    return idx, weights.unsqueeze(1)
