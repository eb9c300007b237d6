"""What the worker-pool backends (Multiprocessing, RayVec) share: sizes, the probe env, the
batch bookkeeping and the async API built on it.

Worker w owns envs [w*k, (w+1)*k) and agent rows [w*r, (w+1)*r) of every buffer. A worker
is busy while its step/reset is outstanding, then ready until recv() returns it, then held
until send() gives it the batch's actions. A backend says how to talk to its workers:
`_outstanding()`, `_wait(satisfied, workers)`, `_start_reset(w)`, `_start_steps(held,
actions)`, `_frame(w, local)`, `_env_states()`, `_restore(parts, buffers)`, `_release()`.

Tested in: tests/engine/vec/test_backends_conformance.py, tests/engine/vec/mp/test_mp_backend.py,
tests/engine/vec/ray/test_ray_backend.py"""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.native.actions import ActionChecker
from puffer_tui.engine.vec import saved_state
from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.vec_api import VecAPI


class WorkerPool(VecAPI):
    """Base of the backends whose envs run in blocks in workers (processes or actors)."""

    def _take_plan(self, plan, num_envs: int, zero_copy: bool, seed: int,
                   timeout: float) -> None:
        """Refuse a bad timeout, then keep the sizes (engine/vec/sizing.py)."""
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.num_envs, self.num_workers = num_envs, plan.num_workers
        self.envs_per_worker, self.workers_per_batch = plan.envs_per_worker, plan.workers_per_batch
        self.batch_size, self.zero_copy = plan.batch_size, bool(zero_copy)
        self.seed, self.timeout = int(seed), float(timeout)
        self._closed, self._error = False, None
        self._ready: list[int] = []  # finished, not yet returned, in order of arrival
        self._held: list[int] = []  # the batch last returned by recv(), awaiting send()
        self._held_rows = None  # rows of the held block (zero-copy), None when gathered
        self._infos: list[list] = [[] for _ in range(self.num_workers)]
        self._sent = [0] * self.num_workers  # when each was last sent work, so none starves
        self._tick = 0

    def _probe(self, env_creator, env_kwargs: dict):
        """A one-env copy in this process tells us the spaces, and serves as driver_env."""
        probe = env_creator(num_envs=1, seed=self.seed, **env_kwargs)
        self.driver_env = probe
        self.single_observation_space = probe.single_observation_space
        self.single_action_space = probe.single_action_space
        self.agents_per_env = probe.agents_per_env
        self.num_agents = self.num_envs * self.agents_per_env
        self._rows = self.envs_per_worker * self.agents_per_env  # agent rows per worker
        self.agents_per_batch = self.workers_per_batch * self._rows
        return probe

    def _use_buffers(self, buffers: dict) -> None:
        """Our buffers, each also an attribute (`observations`, `actions`, ...), and batches."""
        self.buffers = buffers
        for name, array in buffers.items():
            setattr(self, name, array)
        self._check_actions = ActionChecker(self.single_action_space, self.agents_per_batch,
                                            self.actions.dtype, "agent rows in the batch")
        self._make_batches()

    def _make_batches(self):
        """Fixed blocks of workers (zero-copy and sync): views of the buffers, no copies. Else
        batches are any finished workers, gathered (copied) into `_gather`."""
        k = self.workers_per_batch
        self._blocks = []
        for start in range(0, self.num_workers, k):
            rows = slice(start * self._rows, (start + k) * self._rows)
            self._blocks.append((list(range(start, start + k)), rows, (
                self.observations[rows], self.rewards[rows], self.terminals[rows],
                self.truncations[rows], np.arange(rows.start, rows.stop, dtype=np.int64),
                self.masks[rows],
            )))
        self._gather = None
        if not self.zero_copy and k < self.num_workers:
            n = self.agents_per_batch
            self._gather = tuple(np.empty((n, *a.shape[1:]), a.dtype) for a in (
                self.observations, self.rewards, self.terminals, self.truncations,
                self.masks))

    def _worker_seed(self, w: int) -> int:
        # Per-env seeds: worker w seeds its envs from seed + (index of its first env), so a
        # run is reproducible and envs that seed `seed + i` match Serial exactly.
        return self.seed + w * self.envs_per_worker

    def _slice(self, w: int) -> slice:
        return slice(w * self._rows, (w + 1) * self._rows)

    def _mark_sent(self, w: int) -> None:
        self._tick += 1
        self._sent[w] = self._tick

    def _reset_order(self):
        return range(self.num_workers)

    def _wait_idle(self) -> None:
        """Until no worker has a step or reset outstanding."""
        self._wait(lambda: not self._outstanding(), range(self.num_workers))

    # -- the async API ---------------------------------------------------------------------------

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is not None:
            self.seed = int(seed)
        self._wait_idle()  # let steps land first
        self._ready, self._held = [], []
        for w in self._reset_order():
            self._infos[w] = []
            self._start_reset(w)
        for w in range(self.num_workers):  # taken in turn from worker 0, whatever the order
            self._mark_sent(w)

    def send(self, actions) -> None:
        self._check_open()
        if not self._held:
            raise RuntimeError("send() needs a batch: call recv() (after async_reset()) first")
        actions = self._check_actions(actions)
        held, self._held = self._held, []
        self._start_steps(held, actions)

    def recv(self):
        self._check_open()
        if self._held or not (self._ready or self._outstanding()):
            raise RuntimeError("recv() needs a pending async_reset() or send()")
        if self._gather is None:
            workers, self._held_rows, arrays = self._wait_for_block()
        else:
            self._wait(lambda: len(self._ready) >= self.workers_per_batch,
                       range(self.num_workers))
            # Of the finished workers, those sent longest ago: several usually finish between
            # two recv() calls, and taking the lowest index would starve the others.
            oldest = sorted(self._ready, key=self._sent.__getitem__)
            workers = sorted(oldest[:self.workers_per_batch])
            self._held_rows, arrays = None, self._gather_rows(workers)
        chosen = set(workers)
        self._ready = [w for w in self._ready if w not in chosen]
        self._held = list(workers)
        infos = []
        for w in workers:
            infos.extend(self._infos[w])
            self._infos[w] = []
        obs, rewards, terminals, truncations, env_ids, masks = arrays
        return obs, rewards, terminals, truncations, infos, env_ids, masks

    def _wait_for_block(self):
        """Zero-copy blocks are taken in turn (round robin), waiting for the one sent longest
        ago even when another finished first: every block then steps equally often, so that
        collecting one half while the caller works on the other (overlapped collection)
        stores the same transitions as stepping all at once, and an inline block, always
        done at once, cannot run ahead of the others. (Gathered batches take whichever workers
        finished first instead, EnvPool-style.)"""
        if len(self._blocks) == 1:
            self._wait_idle()
            return self._blocks[0]
        block = min(self._blocks, key=lambda b: self._sent[b[0][0]])
        workers = block[0]
        self._wait(lambda: all(w in self._ready for w in workers), workers)
        return block

    def _gather_rows(self, workers):
        out = self._gather
        for i, w in enumerate(workers):
            src, dst = self._slice(w), slice(i * self._rows, (i + 1) * self._rows)
            for j, array in enumerate((self.observations, self.rewards, self.terminals,
                                       self.truncations, self.masks)):
                out[j][dst] = array[src]
        env_ids = np.concatenate([np.arange(self._slice(w).start, self._slice(w).stop)
                                  for w in workers])
        return (*out[:4], env_ids, out[4])

    def frame(self, env_index: int = 0, view: str = "env"):
        """Env `env_index`'s frame (view "obs": its observation as an image), asked of the
        worker that owns it."""
        self._check_open()
        if not 0 <= env_index < self.num_envs:
            raise IndexError(f"env_index {env_index} out of range [0, {self.num_envs})")
        w, local = divmod(env_index, self.envs_per_worker)
        return self._frame(w, local) if view == "env" else self._frame(w, local, view)

    # -- saved state ----------------------------------------------------------------------------

    def get_state(self) -> dict | None:
        """The envs' state and the pending step results (engine/vec/saved_state.py), or None when
        the envs cannot save theirs. Waits for every worker's step to land first. Exact for
        the synchronous case (batch_size == num_envs); in a pool the order in which workers
        come back is timing, so a restored pool resumes from the same states in another order."""
        self._check_open()
        if self._held:
            raise RuntimeError("get_state() while a batch is held: send() its actions first")
        self._wait_idle()
        parts = self._env_states()
        infos = [info for w in self._ready for info in self._infos[w]]
        return saved_state.capture(self.buffers, saved_state.join(parts), infos, bool(self._ready))

    def set_state(self, state: dict) -> None:
        """Continue from get_state() of a vec env of the same env, settings and num_envs."""
        self._check_open()
        saved_state.check_matches(state["envs"], self.driver_env)
        parts = saved_state.split(state["envs"], [self.envs_per_worker] * self.num_workers)
        self._wait_idle()
        self._restore(parts, state["buffers"])
        self._held = []
        self._infos = [[] for _ in range(self.num_workers)]
        self._infos[0] = list(state["infos"])
        self._ready = list(range(self.num_workers)) if state["pending"] else []

    # -- failing and closing ---------------------------------------------------------------------

    def _fail(self, error: WorkerError) -> WorkerError:
        """Close everything (no worker outlives a failure) and hand back the error to raise."""
        self._error = error
        self.close()
        return error

    def _release(self) -> None:
        self._finalizer()  # ends the workers and the driver env (weakref.finalize: runs once)
