"""The rollout buffer: [segments, horizon] of consecutive steps of one agent each.

Agents fill segments as they step (rows named by the `env_ids` a vec env's recv() returns):
row i writes step `position[i]` of segment `segment[i]`. A full segment hands its row the next
free segment; when none is left the row idles (its steps are not stored) until the batch is
complete. At the start of each batch row i owns segment i, so `segments >= num_agents`.

Step t of a segment stores the observation, the action taken from it with its log-prob and
value, the mask, and the reward / terminal / truncation that arrived WITH that observation
(the result of action t-1). The advantage kernel pairs them accordingly. A step that reports
a truncation also stores `final_values`: the value of the observation that ended the truncated
episode, the bootstrap of the step before it.

With gSDE the buffer also holds the exploration matrices of the rows (`exploration`), new
ones drawn by start_batch(): a collection starts from fresh matrices, as SB3's does.

Storage is CPU memory by default (pinned when asked, so a copy to a GPU is asynchronous);
writes go through numpy views, which index far faster than torch on CPU. With `device` the
storage lives on that device instead (the trainer's choice on CUDA): the policy's outputs are
written where they were computed, with no copy back to the host on every step, and the batch
is handed to the learner as is. Both storages hold the same batch for the same steps.

Tested in: tests/engine/algo/test_trainer.py, tests/engine/algo/test_device_paths_on_cpu.py.
"""

from __future__ import annotations

import functools

import numpy as np
import torch


class RolloutBuffer:
    def __init__(self, segments: int, horizon: int, num_agents: int, obs_shape, obs_dtype,
                 action_shape, action_dtype, state_size: int = 0, pin_memory: bool = False,
                 device: torch.device | str | None = None, exploration=None):
        if horizon < 2:
            raise ValueError(f"horizon must be >= 2 (a step's advantage needs its successor), "
                             f"got {horizon}")
        if segments < num_agents:
            raise ValueError(
                f"the batch holds {segments} segments of {horizon} steps but there are "
                f"{num_agents} agents; batch_size must be >= num_agents * horizon "
                f"({num_agents * horizon})")
        self.segments, self.horizon, self.num_agents = segments, horizon, num_agents
        self.device = None if device is None else torch.device(device)
        pin_memory = pin_memory and self.device is None

        def tensor(shape, dtype):
            if self.device is not None:
                return torch.zeros((segments, horizon, *shape), dtype=dtype,
                                   device=self.device), None
            t = torch.zeros((segments, horizon, *shape), dtype=dtype, pin_memory=pin_memory)
            return t, t.numpy()

        obs_dtype = torch.from_numpy(np.zeros(0, dtype=obs_dtype)).dtype
        self.observations, self._obs = tensor(tuple(obs_shape), obs_dtype)
        self.actions, self._act = tensor(tuple(action_shape), action_dtype)
        self.logprobs, self._logp = tensor((), torch.float32)
        self.values, self._val = tensor((), torch.float32)
        self.rewards, self._rew = tensor((), torch.float32)
        self.terminals, self._term = tensor((), torch.float32)
        self.truncations, self._trunc = tensor((), torch.float32)
        self.final_values, self._final = tensor((), torch.float32)
        self.masks, self._mask = tensor((), torch.float32)
        self.state_size = state_size
        if state_size:
            shape = (segments, state_size)
            where = {"device": self.device} if self.device else {"pin_memory": pin_memory}
            self.state_h = torch.zeros(shape, **where)
            self.state_c = torch.zeros(shape, **where)
            self._h, self._c = (None, None) if self.device else (self.state_h.numpy(),
                                                                 self.state_c.numpy())
        # gSDE's per-row exploration matrices (engine/algo/sde_noise.py), or None: part of
        # the collection's state, drawn afresh as each collection starts
        self.exploration = exploration
        self.segment_of = np.zeros(num_agents, np.int64)
        self.position_of = np.zeros(num_agents, np.int64)
        # While every step has stored every row in order (the synchronous case), row i
        # writes segment lockstep + i at the same position as all rows: one slice per
        # column instead of an index per row. None once a step stored only some rows.
        self._lockstep: int | None = 0
        self.start_batch()

    def start_batch(self) -> None:
        """Row i starts segment i at step 0; the rest of the segments are free; every row
        gets new exploration matrices (gSDE)."""
        self.segment_of[:] = np.arange(self.num_agents)
        self.position_of[:] = 0
        self.next_free = self.num_agents
        self.full = 0
        self._lockstep = 0
        if self.exploration is not None:
            self.exploration.resample()

    @property
    def ready(self) -> bool:
        return self.full >= self.segments

    def store(self, env_ids, observations, rewards, terminals, truncations, masks,
              actions, logprobs, values, state=None, final_values=None) -> int:
        """Write one step for rows `env_ids` (arrays indexed like env_ids: numpy or torch
        tensors, CPU ones or, for device storage, ones on that device) and advance them; returns how many segments this step completed.
        `final_values`: per row, V(final observation) where the row was truncated (None: no
        row was)."""
        env_ids = np.asarray(env_ids)
        if self._lockstep is not None and self.device is None and \
                len(env_ids) == self.num_agents and is_identity(env_ids):
            return self._store_every_row(observations, rewards, terminals, truncations, masks,
                                         actions, logprobs, values, state, final_values)
        self._lockstep = None
        seg = self.segment_of[env_ids]
        pos = self.position_of[env_ids]
        active = seg >= 0
        if not active.all():
            keep = np.flatnonzero(active)
            env_ids, seg, pos = env_ids[keep], seg[keep], pos[keep]
            pick = lambda a: None if a is None else np.asarray(a)[keep]  # noqa: E731
        else:
            keep = None
            pick = lambda a: None if a is None else np.asarray(a)  # noqa: E731
        if len(env_ids) == 0:
            return 0
        columns = ((self.observations, self._obs, observations),
                   (self.actions, self._act, actions), (self.logprobs, self._logp, logprobs),
                   (self.values, self._val, values), (self.rewards, self._rew, rewards),
                   (self.terminals, self._term, terminals),
                   (self.truncations, self._trunc, truncations),
                   (self.final_values, self._final,
                    0.0 if final_values is None else final_values),
                   (self.masks, self._mask, masks))
        first = np.flatnonzero(pos == 0) if self.state_size and state is not None else ()
        if self.device is None:
            index = _as_slice(seg, pos)
            for _, view, value in columns:
                view[index] = value if isinstance(value, float) else pick(value)
            if len(first):
                h, c = (np.asarray(s) for s in state)
                rows = first if keep is None else keep[first]
                self._h[seg[first]] = h[rows]
                self._c[seg[first]] = c[rows]
        else:
            self._store_on_device(seg, pos, keep, columns, first, state)
        return self._advance(env_ids, pos)

    def _store_every_row(self, observations, rewards, terminals, truncations, masks, actions,
                         logprobs, values, state, final_values) -> int:
        """store() of a step of every row in order while the rows are in lockstep."""
        n, base, pos = self.num_agents, self._lockstep, int(self.position_of[0])
        rows = slice(base, base + n)
        self._obs[rows, pos] = observations
        self._act[rows, pos] = actions
        self._logp[rows, pos] = logprobs
        self._val[rows, pos] = values
        self._rew[rows, pos] = rewards
        self._term[rows, pos] = terminals
        self._trunc[rows, pos] = truncations
        self._final[rows, pos] = 0.0 if final_values is None else final_values
        self._mask[rows, pos] = masks
        if pos == 0 and self.state_size and state is not None:
            self._h[rows], self._c[rows] = (np.asarray(s) for s in state)
        pos += 1
        if pos < self.horizon:
            self.position_of.fill(pos)
            return 0
        # every row finished its segment: the next free ones, in order, or idle if none left
        self.full += n
        self.position_of.fill(0)
        if self.next_free + n <= self.segments:
            self._lockstep = self.next_free
            self.segment_of[:] = np.arange(self.next_free, self.next_free + n)
        else:
            fresh = self.next_free + np.arange(n)
            self.segment_of[:] = np.where(fresh < self.segments, fresh, -1)
            self._lockstep = None
        self.next_free += n
        return n

    def _store_on_device(self, seg, pos, keep, columns, first, state) -> None:
        """store() for device storage: host inputs (numpy) are filtered to the active rows
        before their copy, device inputs (the policy's outputs) where they are."""
        device = self.device
        index = (torch.from_numpy(seg).to(device), torch.from_numpy(pos).to(device))
        kept = {}  # the active rows' indices, per device they are needed on

        def rows_of(value, dtype):
            if isinstance(value, float):
                return torch.tensor(value, dtype=dtype, device=device)
            t = value if isinstance(value, torch.Tensor) else torch.from_numpy(
                np.ascontiguousarray(value))
            if keep is not None:
                if t.device not in kept:
                    kept[t.device] = torch.from_numpy(keep).to(t.device)
                t = t[kept[t.device]]
            return t.to(device=device, dtype=dtype, non_blocking=True)

        for storage, _, value in columns:
            storage[index] = rows_of(value, storage.dtype)
        if len(first):
            at = torch.from_numpy(seg[first]).to(device)
            pick = torch.from_numpy(first).to(device)
            for storage, rows in zip((self.state_h, self.state_c), state, strict=True):
                storage[at] = rows_of(rows, storage.dtype)[pick]

    def _advance(self, env_ids: np.ndarray, pos: np.ndarray) -> int:
        pos = pos + 1
        self.position_of[env_ids] = pos
        finished = env_ids[pos >= self.horizon]
        if len(finished) == 0:
            return 0
        self.full += len(finished)
        fresh = self.next_free + np.arange(len(finished))
        self.segment_of[finished] = np.where(fresh < self.segments, fresh, -1)
        self.position_of[finished] = 0
        self.next_free += len(finished)
        return len(finished)

    def tensors(self, device: torch.device) -> dict[str, torch.Tensor]:
        """The batch on `device` (no copy when it is already there: CPU storage for a CPU
        learner, device storage; asynchronous from pinned memory)."""
        names = ["observations", "actions", "logprobs", "values", "rewards", "terminals",
                 "truncations", "final_values", "masks"]
        names += ["state_h", "state_c"] if self.state_size else []
        return {n: getattr(self, n).to(device, non_blocking=True) for n in names}


def _as_slice(seg: np.ndarray, pos: np.ndarray):
    """(seg, pos) as a basic index where they are consecutive segments at one position (the
    usual step: every row advances together), so numpy copies rows instead of scattering
    element by element (fancy indexing: ~2% of a squared epoch); else unchanged."""
    n = len(seg)
    if n and pos[0] == pos[-1] and seg[-1] - seg[0] == n - 1 and (pos == pos[0]).all() \
            and (n == 1 or (np.diff(seg) == 1).all()):
        return slice(int(seg[0]), int(seg[0]) + n), int(pos[0])
    return seg, pos


def is_identity(env_ids) -> bool:
    """True when env_ids is 0..n-1 in order (the synchronous case): no gather/scatter needed."""
    if isinstance(env_ids, slice):
        return env_ids.start in (None, 0) and env_ids.step in (None, 1)
    ids = np.asarray(env_ids)
    n = len(ids)
    if n == 0:
        return True
    if ids.dtype == np.int64 and ids.ndim == 1:  # bytes: a fraction of numpy's comparisons
        return ids.tobytes() == _in_order_bytes(n)
    return int(ids[0]) == 0 and int(ids[-1]) == n - 1 and (
        n < 3 or bool(np.all(np.diff(ids) == 1)))


@functools.cache
def _in_order_bytes(n: int) -> bytes:
    return np.arange(n, dtype=np.int64).tobytes()
