"""Running statistics for observation normalization and return-based reward scaling.

    stats = RunningMeanStd(shape=(17,))
    stats.update(batch)                      # [N, 17] rows; Chan et al.'s parallel merge
    normed = stats.normalize(batch, clip=10.0)

    scaler = ReturnScaler(num_agents, gamma=0.99, clip=10.0)
    scaled = scaler.scale(rewards, dones, masks)   # rewards / std(discounted return)

Both are updated in the engine process from every env's rows, so the env workers cannot
disagree. Learner ranks (DDP) each see their own envs: `sync(world)` merges the moments every
rank gathered since the last sync into the statistics at that sync, in rank order, so every
rank ends an epoch with the same statistics (those of all ranks' rows together).

Statistics are float64 (a long run merges hundreds of millions of rows); a normalized
observation is float32. The frozen copy a policy applies in evaluation is
`ObservationNormalizer` (engine/algo/policy.py), saved with the policy's weights.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPSILON = 1e-8


def moments(rows: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(count, mean, M2 = sum of squared deviations) of `rows` along axis 0, float64."""
    rows = np.asarray(rows, dtype=np.float64)
    count = float(rows.shape[0])
    if count == 0:
        return 0.0, np.zeros(rows.shape[1:]), np.zeros(rows.shape[1:])
    mean = rows.mean(axis=0)
    return count, mean, ((rows - mean) ** 2).sum(axis=0)


def merge(a: tuple, b: tuple) -> tuple[float, np.ndarray, np.ndarray]:
    """Moments of the union of two sets of rows from the moments of each (Chan et al.)."""
    na, mean_a, m2_a = a
    nb, mean_b, m2_b = b
    n = na + nb
    if nb == 0:
        return na, np.array(mean_a, np.float64), np.array(m2_a, np.float64)
    if na == 0:
        return nb, np.array(mean_b, np.float64), np.array(m2_b, np.float64)
    delta = mean_b - mean_a
    mean = mean_a + delta * (nb / n)
    m2 = m2_a + m2_b + delta * delta * (na * nb / n)
    return n, mean, m2


class RunningMeanStd:
    """Mean and variance of every row seen so far (float64), mergeable across processes."""

    def __init__(self, shape: tuple = ()):
        self.shape = tuple(shape)
        self.count = 0.0
        self.mean = np.zeros(self.shape)
        self.m2 = np.zeros(self.shape)
        # what this process added since the last sync: (count, mean, M2) of its own rows
        self._synced = (0.0, np.zeros(self.shape), np.zeros(self.shape))
        self._pending = (0.0, np.zeros(self.shape), np.zeros(self.shape))

    @property
    def var(self) -> np.ndarray:
        return self.m2 / self.count if self.count > 0 else np.ones(self.shape)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var + EPSILON)

    def update(self, rows: np.ndarray) -> None:
        """Add rows ([N, *shape]; N may be 0)."""
        batch = moments(rows)
        if batch[0] == 0:
            return
        self._pending = merge(self._pending, batch)
        self.count, self.mean, self.m2 = merge((self.count, self.mean, self.m2), batch)

    def normalize(self, rows: np.ndarray, clip: float) -> np.ndarray:
        """(rows - mean) / std, clipped to [-clip, clip] (clip <= 0: not clipped), float32."""
        out = (np.asarray(rows, np.float64) - self.mean) / self.std
        if clip > 0:
            np.clip(out, -clip, clip, out=out)
        return out.astype(np.float32)

    def sync(self, world) -> None:
        """Every rank's rows since the last sync merged into the statistics as they were at
        that sync, in rank order: afterwards every rank holds the same statistics. One gather;
        the identity (no collective) for one process."""
        if not world.enabled:
            self._pending = (0.0, np.zeros(self.shape), np.zeros(self.shape))
            return
        total = self._synced
        for part in world.gather(self._pending):
            total = merge(total, part)
        self.count, self.mean, self.m2 = total
        self._synced = (self.count, self.mean.copy(), self.m2.copy())
        self._pending = (0.0, np.zeros(self.shape), np.zeros(self.shape))

    def state_dict(self) -> dict:
        return {"count": torch.tensor(self.count, dtype=torch.float64),
                "mean": torch.from_numpy(np.array(self.mean, np.float64)),
                "m2": torch.from_numpy(np.array(self.m2, np.float64))}

    def load_state_dict(self, state: dict) -> None:
        mean = np.array(state["mean"].numpy() if torch.is_tensor(state["mean"])
                        else state["mean"], np.float64).reshape(self.shape)
        m2 = np.array(state["m2"].numpy() if torch.is_tensor(state["m2"])
                      else state["m2"], np.float64).reshape(self.shape)
        self.count, self.mean, self.m2 = float(state["count"]), mean, m2
        self._synced = (self.count, mean.copy(), m2.copy())
        self._pending = (0.0, np.zeros(self.shape), np.zeros(self.shape))


class ReturnScaler:
    """Rewards divided by the running std of each agent's discounted return (the return is
    not centred: a constant reward keeps its sign), then clipped. Each agent's return restarts
    where its episode ends; rows whose mask is false are neither counted nor changed."""

    def __init__(self, num_agents: int, gamma: float, clip: float):
        self.returns = np.zeros(num_agents, np.float64)
        self.stats = RunningMeanStd(())
        self.gamma, self.clip = gamma, clip

    def scale(self, rows, rewards: np.ndarray, dones: np.ndarray,
              masks: np.ndarray | None = None) -> np.ndarray:
        """The scaled rewards of agents `rows` (the env_ids of a recv); `dones`: the step
        ended their episode (the reward belongs to the episode that ended)."""
        rewards = np.asarray(rewards, np.float64)
        returns = self.returns[rows] * self.gamma + rewards
        live = np.ones(len(rewards), bool) if masks is None else np.asarray(masks, bool)
        self.stats.update(returns[live])
        scaled = rewards / self.stats.std
        if self.clip > 0:
            np.clip(scaled, -self.clip, self.clip, out=scaled)
        scaled = np.where(live, scaled, rewards)
        kept = np.where(live, returns, self.returns[rows])
        self.returns[rows] = np.where(np.asarray(dones, bool), 0.0, kept)
        return scaled.astype(np.float32)

    def state_dict(self) -> dict:
        return {"returns": torch.from_numpy(self.returns.copy()), **self.stats.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        returns = state["returns"]
        returns = returns.numpy() if torch.is_tensor(returns) else np.asarray(returns)
        if returns.shape == self.returns.shape:  # another world size: each rank starts at 0
            self.returns = np.array(returns, np.float64)
        self.stats.load_state_dict(state)


class ObservationNormalizer(nn.Module):
    """The statistics a policy applies to raw observations outside training (evaluation,
    recordings): buffers, so they are saved and loaded with the policy's weights."""

    def __init__(self, shape: tuple, clip: float):
        super().__init__()
        self.clip = clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))

    def copy_from(self, stats: RunningMeanStd) -> None:
        with torch.no_grad():
            self.count.fill_(stats.count)
            self.mean.copy_(torch.from_numpy(np.array(stats.mean, np.float64)))
            self.var.copy_(torch.from_numpy(np.array(stats.var, np.float64)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = (obs.double() - self.mean) / torch.sqrt(self.var + EPSILON)
        if self.clip > 0:
            out = out.clamp(-self.clip, self.clip)
        return out.float()


class Normalization:
    """The trainer's normalization: observations (when its policy has an ObservationNormalizer)
    and rewards (train.normalize_rewards), each None when off; checkpointed as one dict."""

    def __init__(self, policy_norm: ObservationNormalizer | None, num_agents: int, train):
        self.policy_norm = policy_norm  # the policy's frozen copy, refreshed by sync()
        self.observations = RunningMeanStd(tuple(policy_norm.mean.shape)) \
            if policy_norm is not None else None
        self.rewards = ReturnScaler(num_agents, train.gamma, train.reward_clip) \
            if train.normalize_rewards else None

    def observe(self, obs: np.ndarray, masks, clip: float) -> np.ndarray:
        """The observations normalized with the statistics updated by their live rows."""
        if self.observations is None:
            return obs
        live = np.asarray(masks, bool)
        self.observations.update(obs if live.all() else obs[live])
        return self.observations.normalize(obs, clip)

    def final(self, obs: np.ndarray, clip: float) -> np.ndarray:
        """Final observations of truncated episodes: normalized, not counted."""
        return obs if self.observations is None else self.observations.normalize(obs, clip)

    def scale(self, env_ids, rewards, dones, masks, gamma: float):
        if self.rewards is None:
            return rewards
        self.rewards.gamma = gamma  # a live field
        return self.rewards.scale(env_ids, rewards, dones, masks)

    def sync(self, world) -> None:
        """Every rank's statistics merged (a collective: every rank calls it once an epoch)
        and the policy's frozen copy refreshed."""
        if self.observations is not None:
            self.observations.sync(world)
            self.policy_norm.copy_from(self.observations)
        if self.rewards is not None:
            self.rewards.stats.sync(world)

    def state_dict(self) -> dict:
        state = {}
        if self.observations is not None:
            state["observations"] = self.observations.state_dict()
        if self.rewards is not None:
            state["rewards"] = self.rewards.state_dict()
        return state

    def load_state_dict(self, saved: dict, is_main: bool = True) -> None:
        """ValueError when this run normalizes observations and `saved` has no statistics
        for them; reward statistics start afresh when missing. A rank other than 0 starts its
        episodes afresh (engine/algo/distributed.py): its returns restart at 0."""
        saved = saved or {}
        if self.observations is not None:
            if "observations" not in saved:
                raise ValueError("the checkpoint holds no observation statistics but this "
                                 "run normalizes observations (train.normalize_observations)")
            self.observations.load_state_dict(saved["observations"])
            self.policy_norm.copy_from(self.observations)
        if self.rewards is not None and "rewards" in saved:
            self.rewards.load_state_dict(saved["rewards"])
            if not is_main:
                self.rewards.returns[:] = 0.0
