"""Advantages by GAE with V-trace importance clipping (PufferLib 3.0's "puff advantage").

Three implementations of the same recurrence (documented in engine/native/advantage.h):
- `compute_advantage` dispatches on the tensors' device: the C kernel for CPU (GIL released),
  `advantage_torch` for anything else (CUDA): a parallel scan over the horizon, batched over
  segments;
- `advantage_reference` is a plain numpy loop, the yardstick both are tested against.

Inputs are [segments, horizon] float32: values, rewards, terminals, truncations, ratio (the
importance ratio new/old policy of each step, 1 right after collection), and final_values: at a
step whose truncation flag is set, the value of the observation that ended the truncated
episode (the trainer evaluates the envs' final_observations), the truncated step's bootstrap.
Without final_values a truncated step bootstraps from V of the step before it (the last state
seen of that episode), an approximation for callers that lack the final observation.
"""

from __future__ import annotations

import numpy as np
import torch

from puffer_tui.engine.native.advantage import compute_advantage as _c_advantage


def compute_advantage(
    values: torch.Tensor,
    rewards: torch.Tensor,
    terminals: torch.Tensor,
    truncations: torch.Tensor,
    ratio: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    rho_clip: float,
    c_clip: float,
    out: torch.Tensor | None = None,
    final_values: torch.Tensor | None = None,
) -> torch.Tensor:
    """Advantages [segments, horizon] on the inputs' device (written into `out` if given)."""
    if final_values is None:
        final_values = previous_values(values)
    tensors = {"values": values, "rewards": rewards, "terminals": terminals,
               "truncations": truncations, "final_values": final_values, "ratio": ratio}
    for name, t in tensors.items():
        if t.dim() != 2 or t.shape != values.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(values.shape)} "
                             "[segments, horizon] like values")
        if t.device != values.device:
            raise ValueError(f"{name} is on {t.device}, values on {values.device}")
    if values.device.type != "cpu":
        result = advantage_torch(values, rewards, terminals, truncations, ratio,
                                 gamma, gae_lambda, rho_clip, c_clip, final_values)
        if out is not None:
            out.copy_(result)
            return out
        return result
    if out is None:
        out = torch.empty_like(values, dtype=torch.float32)
    arrays = [_as_c_float(t) for t in tensors.values()]
    target = out if out.is_contiguous() and out.dtype == torch.float32 else torch.empty(
        values.shape, dtype=torch.float32)
    _c_advantage(*arrays, target.numpy(), gamma, gae_lambda, rho_clip, c_clip)
    if target is not out:
        out.copy_(target)
    return out


def previous_values(values):
    """final_values for callers without final observations: V of the step before each one."""
    if isinstance(values, torch.Tensor):
        shifted = torch.zeros_like(values)
    else:
        values = np.asarray(values, np.float64)
        shifted = np.zeros_like(values)
    shifted[:, 1:] = values[:, :-1]
    return shifted


def _as_c_float(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.float32 and not t.requires_grad and t.is_contiguous():
        return t.numpy()  # the learner's every minibatch: no conversion to pay for
    return t.detach().to(torch.float32).contiguous().numpy()


def advantage_torch(values, rewards, terminals, truncations, ratio,
                    gamma, gae_lambda, rho_clip, c_clip, final_values=None) -> torch.Tensor:
    """The recurrence in torch ops, for CUDA: no Python loop over the horizon.

    adv[t] = delta[t] + a[t] * adv[t+1] (a = gamma * lambda * c * continues) is a linear
    recurrence, so it is solved by a parallel suffix scan (Hillis-Steele) over the horizon:
    after the pass with offset d, (b[t], a[t]) describe steps t..t+2d-1, b[t] being their
    discounted sum and a[t] the factor that carries adv[t+2d] back to t. ceil(log2(horizon))
    passes of a few whole-tensor ops each, batched over segments (64 steps: 6 passes, against
    63 loop iterations of a dozen small kernels each). Sums come in another order than the C
    kernel's, so results agree to float rounding, not bit for bit."""
    final = (previous_values(values) if final_values is None else final_values).float()
    values, rewards = values.float(), rewards.float()
    terminal = terminals.float()[:, 1:] != 0
    truncated = (truncations.float()[:, 1:] != 0) & ~terminal
    rho = ratio.float()[:, :-1].clamp(max=rho_clip)
    c = ratio.float()[:, :-1].clamp(max=c_clip)
    bootstrap = torch.where(terminal, 0.0, torch.where(truncated, final[:, 1:], values[:, 1:]))
    cont = (~(terminal | truncated)).float()
    # step horizon-1 has no successor: delta 0 and nothing carried (the kernels' adv = 0)
    b = torch.zeros_like(values)
    a = torch.zeros_like(values)
    b[:, :-1] = rho * (rewards[:, 1:] + gamma * bootstrap - values[:, :-1])
    a[:, :-1] = (gamma * gae_lambda) * c * cont
    offset = 1
    while offset < values.shape[1]:
        head_b, head_a = b[:, :-offset], a[:, :-offset]
        b = torch.cat((head_b + head_a * b[:, offset:], b[:, -offset:]), 1)
        a = torch.cat((head_a * a[:, offset:], a[:, -offset:]), 1)
        offset *= 2
    return b


def advantage_reference(values, rewards, terminals, truncations, ratio,
                        gamma, gae_lambda, rho_clip, c_clip, final_values=None) -> np.ndarray:
    """Plain per-element numpy loops in float64: the definition the kernels must match."""
    values = np.asarray(values, np.float64)
    final = previous_values(values) if final_values is None else np.asarray(final_values,
                                                                             np.float64)
    segments, horizon = values.shape
    advantages = np.zeros((segments, horizon))
    for s in range(segments):
        last = 0.0
        for t in reversed(range(horizon - 1)):
            if terminals[s][t + 1]:
                bootstrap, cont = 0.0, 0.0
            elif truncations[s][t + 1]:
                bootstrap, cont = final[s, t + 1], 0.0
            else:
                bootstrap, cont = values[s, t + 1], 1.0
            rho = min(float(ratio[s][t]), rho_clip)
            c = min(float(ratio[s][t]), c_clip)
            delta = rho * (float(rewards[s][t + 1]) + gamma * bootstrap - values[s, t])
            last = delta + gamma * gae_lambda * c * cont * last
            advantages[s, t] = last
    return advantages
