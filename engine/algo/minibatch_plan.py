"""Which steps each minibatch of an update trains on.

    plan = minibatch_plan(batch, train, arrays)
    mb = plan.minibatch(i, train, refresh)   # Minibatch: its rows, weights and tensors

Two plans, picked by train.shuffle_steps:
- `ShuffledSteps` (feedforward policies): minibatches of single steps, each epoch a fresh
  permutation of the whole batch (standard PPO). Whole segments are what an LSTM needs, but for
  an MLP they are correlated data: a minibatch of a few segments holds a few trajectories'
  consecutive steps, and normalizing advantages within it removes the difference between those
  trajectories (envs/gym_presets/mujoco.toml says what that cost on Hopper-v5).
- `PrioritizedSegments` (PufferLib 3.0): whole segments drawn by the size of their advantages,
  with importance weights (engine/algo/sampling.py); an LSTM replays each from the state saved
  at its start.

The batch is seen as [rows, cols]: [segments * horizon, 1] for shuffled steps, [segments,
horizon] for segments; views of the same storage, so the values and ratios a minibatch
refreshes land where the next advantages read them. Where the loss runs in numpy the views are
numpy arrays: numpy indexes and slices small arrays in a fraction of torch's per-call cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from puffer_tui.engine.algo.sampling import annealed_beta, sample_segments, segment_priorities
from puffer_tui.engine.algo.schedule import Anchor, progress


@dataclass
class Minibatch:
    """One minibatch's rows of the batch, [mb_rows, cols, ...] each."""

    rows: object  # the batch rows it holds (an index tensor or array)
    weights: object  # importance weights [mb_rows, 1], or None (all 1)
    obs: object
    actions: object
    logprob: object  # at collection
    starts: object  # where an episode starts (an LSTM resets its state there)
    valid: object  # 1 where the step trains (not masked, not a segment's last step)
    adv: object
    values: object  # the value targets' base and the value clip's reference
    state: tuple | None  # an LSTM's (h, c) at the start of each segment


@dataclass
class BatchRows:
    """The update's batch as [rows, cols] views (see the module docstring)."""

    rows: int
    cols: int
    device: torch.device
    obs: object
    actions: object
    logprob: object
    starts: object
    collected: object  # the values at collection
    values: object  # refreshed by each minibatch where train.refresh_advantages
    ratio: object  # likewise: each step's importance ratio, for V-trace
    valid: object
    adv: object
    state: tuple | None  # (h, c) per segment, tensors (the LSTM path is always torch)


def batch_rows(data: dict, values, ratio, valid, advantages, starts, shuffle: bool,
               arrays: bool) -> BatchRows:
    segments, horizon = data["values"].shape
    rows, cols = (segments * horizon, 1) if shuffle else (segments, horizon)

    def view(t: torch.Tensor):
        v = t.reshape(rows, cols, *t.shape[2:])  # a view: all are contiguous
        return v.numpy() if arrays else v

    state = (data["state_h"], data["state_c"]) if "state_h" in data else None
    return BatchRows(rows, cols, data["values"].device, view(data["observations"]), view(data["actions"]),
                     view(data["logprobs"]), view(starts), view(data["values"]), view(values),
                     view(ratio), view(valid), view(advantages), state)


def _rows(t, order):
    """t[order] for an array or a tensor; index_select for a tensor (the same rows, and
    quicker for a batch of frames)."""
    return t.index_select(0, order) if isinstance(t, torch.Tensor) else t[order]


class ShuffledSteps:
    """Every step once an epoch, uniformly: no priorities, weights 1."""

    def __init__(self, batch: BatchRows, minibatch_size: int, arrays: bool):
        self.batch, self.arrays = batch, arrays
        self.mb_rows = max(1, min(batch.rows, minibatch_size))
        self.per_epoch = max(1, batch.rows // self.mb_rows)
        self._order = self._drawn = None

    def minibatch(self, i: int, train, refresh: bool) -> Minibatch:
        b, part = self.batch, i % self.per_epoch
        if part == 0:  # a new epoch: one permutation, and one gather for all its minibatches
            order = torch.randperm(b.rows, device=b.device)
            self._order = order.numpy() if self.arrays else order
            fields = ("obs", "actions", "logprob", "starts", "valid", "collected")
            if not refresh:  # the advantages are fixed for the whole update
                fields += ("adv",)
            self._drawn = {name: _rows(getattr(b, name), self._order) for name in fields}
        cut = slice(part * self.mb_rows, (part + 1) * self.mb_rows)
        idx = self._order[cut]
        drawn = {name: t[cut] for name, t in self._drawn.items()}
        adv = b.adv[idx] if refresh or "adv" not in drawn else drawn["adv"]
        return Minibatch(idx, None, drawn["obs"], drawn["actions"], drawn["logprob"],
                         drawn["starts"], drawn["valid"], adv,
                         b.values[idx] if refresh else drawn["collected"], None)


class PrioritizedSegments:
    """Whole segments by priority, drawn afresh for each minibatch from the advantages as
    they are then."""

    def __init__(self, batch: BatchRows, minibatch_size: int, arrays: bool, advantages,
                 valid, global_step: int, schedule: Anchor):
        self.batch, self.arrays = batch, arrays
        self.mb_rows = max(1, min(batch.rows, minibatch_size // batch.cols))
        self.per_epoch = max(1, batch.rows // self.mb_rows)
        # the [segments, horizon] tensors the priorities are computed from
        self.advantages, self.valid = advantages, valid
        self.global_step, self.schedule = global_step, schedule

    def minibatch(self, i: int, train, refresh: bool) -> Minibatch:
        b = self.batch
        probs = segment_priorities(self.advantages, train.prio_alpha, self.valid)
        beta = annealed_beta(train.prio_beta0, progress(train, self.global_step, self.schedule))
        idx, weights = sample_segments(probs, self.mb_rows, beta)
        if self.arrays:
            idx, weights = idx.numpy(), weights.numpy()
        state = (b.state[0][idx], b.state[1][idx]) if b.state is not None else None
        return Minibatch(idx, weights, b.obs[idx], b.actions[idx], b.logprob[idx],
                         b.starts[idx], b.valid[idx], b.adv[idx],
                         b.values[idx] if refresh else b.collected[idx], state)


def minibatch_plan(batch: BatchRows, train, arrays: bool, advantages, valid,
                   global_step: int, schedule: Anchor) -> ShuffledSteps | PrioritizedSegments:
    if bool(getattr(train, "shuffle_steps", False)):
        if batch.state is not None:
            raise ValueError("train.shuffle_steps is for feedforward policies: an LSTM "
                             "replays whole segments (set shuffle_steps false)")
        return ShuffledSteps(batch, train.minibatch_size, arrays)
    return PrioritizedSegments(batch, train.minibatch_size, arrays, advantages, valid,
                               global_step, schedule)
