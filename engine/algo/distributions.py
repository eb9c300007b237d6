"""Action heads: turn a hidden vector into an action distribution for each action space.

Discrete -> one categorical; MultiDiscrete -> one categorical per component (log-probs and
entropies summed); Box -> a diagonal Gaussian with a learned, state-independent log std
(initial value train.init_log_std, bounded to [LOG_STD_MIN, LOG_STD_MAX]).
Sampling uses the Gumbel-max trick (one uniform draw per logit, no Python loop per row).

Box actions reach the env in one of two ways (train.action_squash), and in both the stored
action and its log-probability are those of the Gaussian sample u itself:
- "clip": u clipped to the space's bounds (CleanRL, SB3). The clipped action is not what was
  sampled; its log-prob would be wrong wherever u lies outside the bounds.
- "tanh": low + (tanh(u) + 1) / 2 * (high - low). The change of variables' log-Jacobian
  depends on u only, so it cancels in PPO's ratio: the Gaussian log-prob of u is enough.

gSDE (train.exploration "gsde"; generalized state-dependent exploration, Raffin et al. 2021):
the noise is a function of the state, u = mean + f(s) @ W, where f(s) is the actor's last
hidden layer and W [hidden, actions] ~ N(0, sigma^2) is held fixed for train.sde_sample_freq
steps of each env (engine/algo/sde_noise.py), so the exploration is smooth in time instead of
white noise that a low-pass system like MountainCar's car averages away. log_std is then a
[hidden, actions] matrix (initial value train.init_log_std). For one step u is Gaussian with
variance f(s)^2 @ sigma^2 per action: that is the log-prob. The features are detached in it (as
SB3 does by default): the variance trains sigma only, not the layers that compute f. The
action params carry the features after the mean: [mean | f(s)], so that the learner and the
collector need no other input.

Tested in: tests/engine/algo/test_gsde.py, tests/engine/algo/test_continuous_control.py.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from puffer_tui.engine.algo.sde_noise import SDENoise

LOG_2PI = math.log(2 * math.pi)
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # std in [0.0067, 7.4]: no collapse, no blow-up
SQUASHES = ("clip", "tanh")
EXPLORATIONS = ("gaussian", "gsde")
SDE_VARIANCE_FLOOR = 1e-6  # a state whose features are all ~0 still has a finite log-prob


def _categorical_sample(logits: torch.Tensor, deterministic: bool) -> torch.Tensor:
    if deterministic:
        return logits.argmax(-1)
    uniform = torch.rand_like(logits).clamp_(min=1e-20)
    return (logits - torch.log(-torch.log(uniform))).argmax(-1)


def _gather(logp_all: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return logp_all.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def _categorical_logp(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Log-probabilities only: sampling needs no entropy (three fewer kernels per step)."""
    return _gather(torch.log_softmax(logits, -1), actions)


def _categorical_logp_entropy(logits: torch.Tensor, actions: torch.Tensor):
    logp_all = torch.log_softmax(logits, -1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return _gather(logp_all, actions), entropy


class ActionHead(nn.Module):
    """hidden -> distribution parameters; sample() and evaluate() for one action space."""

    def __init__(self, action_space: spaces.Space, hidden_size: int, init_log_std: float = 0.0,
                 squash: str = "clip", exploration: str = "gaussian"):
        super().__init__()
        if squash not in SQUASHES:
            raise ValueError(f"action squash must be one of {', '.join(SQUASHES)}, got {squash!r}")
        if exploration not in EXPLORATIONS:
            raise ValueError(f"exploration must be one of {', '.join(EXPLORATIONS)}, "
                             f"got {exploration!r}")
        self.space = action_space
        self.squash = squash
        self.sde = exploration == "gsde"
        self.hidden_size = hidden_size
        if self.sde and not isinstance(action_space, spaces.Box):
            raise ValueError(f"train.exploration gsde is for Box actions, the space is "
                             f"{action_space}; use train.exploration gaussian")
        if isinstance(action_space, spaces.Discrete):
            self.kind = "discrete"
            self.sizes = [int(action_space.n)]
        elif isinstance(action_space, spaces.MultiDiscrete):
            self.kind = "multidiscrete"
            self.sizes = [int(n) for n in np.asarray(action_space.nvec).ravel()]
        elif isinstance(action_space, spaces.Box):
            self.kind = "box"
            self.sizes = [int(np.prod(action_space.shape))]
            shape = (hidden_size, self.sizes[0]) if self.sde else (self.sizes[0],)
            self.log_std = nn.Parameter(torch.full(shape, float(init_log_std)))
            low = np.asarray(action_space.low, np.float32).ravel()
            high = np.asarray(action_space.high, np.float32).ravel()
            if squash == "tanh" and not (np.isfinite(low).all() and np.isfinite(high).all()):
                raise ValueError(f"train.action_squash tanh needs finite action bounds, the "
                                 f"space is {action_space}; use train.action_squash clip")
            self.register_buffer("low", torch.from_numpy(low), persistent=False)
            self.register_buffer("high", torch.from_numpy(high), persistent=False)
        else:
            raise TypeError(
                f"unsupported action space {action_space!r}: use Discrete, MultiDiscrete or Box"
            )
        self.linear = nn.Linear(hidden_size, sum(self.sizes))
        nn.init.orthogonal_(self.linear.weight, 0.01)
        nn.init.zeros_(self.linear.bias)

    @property
    def action_shape(self) -> tuple[int, ...]:
        if self.kind == "discrete":
            return ()
        return tuple(self.space.shape)

    @property
    def action_dtype(self) -> torch.dtype:
        return torch.float32 if self.kind == "box" else torch.int32

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.with_features(self.linear(hidden), hidden)

    def with_features(self, out: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The action params from the linear layer's output `out`: itself, or with gSDE
        [mean | detached features]."""
        return torch.cat((out, hidden.detach()), -1) if self.sde else out

    def sample(self, params: torch.Tensor, deterministic: bool = False, noise=None,
               rows=None):
        """(actions shaped [N, *action_shape], log-probabilities [N]).
        gSDE: `noise` (an SDENoise) holds each row's exploration matrix, `rows` the rows of
        params (None: 0..N-1); without `noise` each call draws fresh matrices (evaluation's
        sampled actions: the same distribution, no correlation between calls)."""
        if self.kind == "discrete":
            actions = _categorical_sample(params, deterministic)
            return actions.to(torch.int32), _categorical_logp(params, actions)
        if self.kind == "multidiscrete":
            chunks = params.split(self.sizes, dim=-1)
            actions = torch.stack([_categorical_sample(c, deterministic) for c in chunks], -1)
            logp = torch.stack([_categorical_logp(c, actions[:, i])
                                for i, c in enumerate(chunks)], -1).sum(-1)
            return actions.to(torch.int32).view(-1, *self.action_shape), logp
        mean, features = self._split(params)
        if deterministic:
            actions = mean
        elif not self.sde:
            actions = mean + torch.randn_like(mean) * self.bounded_log_std().exp()
        elif noise is not None:
            actions = mean + noise.perturbation(features, rows, self.bounded_log_std().exp())
        else:
            actions = mean + torch.randn_like(mean) * self._sde_variance(features).sqrt()
        logp, _ = self.evaluate(params, actions)
        return actions.view(-1, *self.action_shape), logp

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        """The deterministic action, as the env takes it: the most likely index per head, or
        the Gaussian's mean clipped or squashed into the bounds (what `sample(...,
        deterministic=True)` then `to_env` give, without the log-probabilities: the graph an
        exported policy holds)."""
        if self.kind == "discrete":
            return params.argmax(-1).to(torch.int32)
        if self.kind == "multidiscrete":
            chunks = params.split(self.sizes, dim=-1)
            return torch.stack([c.argmax(-1) for c in chunks], -1).to(torch.int32) \
                .view(-1, *self.action_shape)
        mean, _ = self._split(params)
        return self.to_env(mean.reshape(-1, *self.action_shape))

    def evaluate(self, params: torch.Tensor, actions: torch.Tensor):
        """(log-probabilities [N], entropies [N]) of the given actions."""
        n = params.shape[0]
        if self.kind == "discrete":
            return _categorical_logp_entropy(params, actions.reshape(n))
        if self.kind == "multidiscrete":
            actions = actions.reshape(n, len(self.sizes))
            logps, entropies = zip(*(
                _categorical_logp_entropy(chunk, actions[:, i])
                for i, chunk in enumerate(params.split(self.sizes, dim=-1))
            ))
            return torch.stack(logps, -1).sum(-1), torch.stack(entropies, -1).sum(-1)
        actions = actions.reshape(n, -1).float()
        mean, features = self._split(params)
        if self.sde:
            log_std = 0.5 * torch.log(self._sde_variance(features))
        else:
            log_std = self.bounded_log_std().expand_as(mean)
        z = (actions - mean) / log_std.exp()
        logp = (-0.5 * z * z - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = (log_std + 0.5 * (1.0 + LOG_2PI)).sum(-1)
        return logp, entropy

    def bounded_log_std(self) -> torch.Tensor:
        return self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def _split(self, params: torch.Tensor):
        """(mean, features or None) of Box params."""
        if not self.sde:
            return params, None
        return params.split((self.sizes[0], self.hidden_size), dim=-1)

    def _sde_variance(self, features: torch.Tensor) -> torch.Tensor:
        """[N, actions]: the variance of f(s) @ W for W ~ N(0, sigma^2), entry by entry."""
        sigma2 = (2.0 * self.bounded_log_std()).exp()
        return features.pow(2) @ sigma2 + SDE_VARIANCE_FLOOR

    def make_noise(self, rows: int, sample_freq: int, device=None):
        """The exploration matrices of `rows` env rows (gSDE; None for other heads)."""
        if not self.sde:
            return None
        return SDENoise(rows, self.hidden_size, self.sizes[0], sample_freq, device)

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """Actions as the env accepts them: Box actions clipped to the space's bounds, or
        squashed into them (train.action_squash)."""
        if self.kind != "box":
            return actions
        flat = actions.reshape(actions.shape[0], -1)
        if self.squash == "tanh":
            return (self.low + (torch.tanh(flat) + 1.0) * 0.5 * (self.high - self.low)) \
                .view_as(actions)
        return torch.maximum(torch.minimum(flat, self.high), self.low).view_as(actions)
