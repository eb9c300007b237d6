"""Ray: envs in Ray actors, one block of envs per actor, on one machine or across a cluster.

Actor w owns envs [w*k, (w+1)*k) (engine/vec/ray_actor.py) and steps them all per remote call,
so Ray's per-call cost is paid once per block. `send()` submits each held actor's step and
returns at once: the actors step while the caller computes. Results are numpy arrays that come
back through Ray's object store (read in place, no unpickling copy) and land, as soon as they
are fetched, in this vec's own buffers, which recv() returns (views for whole contiguous
blocks, gathered copies otherwise) -- the same API, batching rules (engine/vec/sizing.py),
seeds and error contract as the Multiprocessing backend: with `batch_size == num_envs` recv()
waits for every actor; with fewer it returns the first finished actors (ray.wait).

An actor that raises, dies or is lost with its node is a WorkerError carrying the remote
traceback, and closes the vec env; close() kills every actor (and shuts down a Ray that this
process started, engine/vec/ray_session.py). The env creator must pickle (cloudpickle) and
puffer_tui must be importable on every node. Not thread-safe: call it from one thread.
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from puffer_tui.engine.native.buffers import allocate_buffers
from puffer_tui.engine.vec import env_state, ray_session
from puffer_tui.engine.vec.actions import ActionChecker
from puffer_tui.engine.vec.batched_spaces import batched
from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.ray_actor import RESULT_BUFFERS, EnvBlock
from puffer_tui.engine.vec.ray_lifecycle import shutdown_actors, worker_error
from puffer_tui.engine.vec.sizing import plan_workers

DEFAULT_TIMEOUT_S = 15.0  # no step or reset should take this long; then the actor is hung/lost
START_TIMEOUT_S = 120.0  # placing actors may mean starting worker processes on a busy cluster


class RayVec:
    """`num_envs` envs in `num_workers` Ray actors; recv() returns `batch_size` envs' rows.

    Same API and attributes as Multiprocessing (`envs_per_worker`, `workers_per_batch`), plus
    `actor_pids` and `actor_nodes` (Ray node ids). `address`: the Ray cluster ("" : RAY_ADDRESS,
    a running local Ray, else start one). `num_cpus`: CPUs each actor asks Ray for. `timeout`:
    seconds recv()/frame() wait for an actor before calling it hung or lost.
    """

    def __init__(self, env_creator, num_envs: int = 1, num_workers: int | None = None,
                 batch_size: int | None = None, zero_copy: bool = True, seed: int = 0,
                 env_kwargs: dict | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 address: str = "", num_cpus: float = 1.0):
        # Bad sizes are refused before Ray is touched. Actors may sit on other machines, so
        # this machine's core count neither picks nor limits their number.
        cores = num_workers if isinstance(num_workers, int) and num_workers > 0 else None
        plan = plan_workers(num_envs, num_workers, batch_size, zero_copy, cores=cores)
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if not num_cpus > 0:
            raise ValueError(f"num_cpus (CPUs per Ray actor) must be > 0, got {num_cpus}")
        ray = ray_session.import_ray()
        self.num_envs, self.num_workers = num_envs, plan.num_workers
        self.envs_per_worker, self.workers_per_batch = plan.envs_per_worker, plan.workers_per_batch
        self.batch_size, self.zero_copy = plan.batch_size, bool(zero_copy)
        self.seed, self.timeout = int(seed), float(timeout)
        self._closed, self._error = False, None
        env_kwargs = dict(env_kwargs or {})
        probe = env_creator(num_envs=1, seed=self.seed, **env_kwargs)  # spaces; driver_env
        self.driver_env = probe
        self.single_observation_space = probe.single_observation_space
        self.single_action_space = probe.single_action_space
        self.agents_per_env = probe.agents_per_env
        self.num_agents = num_envs * self.agents_per_env
        self._rows = self.envs_per_worker * self.agents_per_env  # agent rows per actor
        self.agents_per_batch = self.workers_per_batch * self._rows
        self.buffers = allocate_buffers(self.single_observation_space, self.single_action_space,
                                        self.num_agents)
        for name, array in self.buffers.items():
            setattr(self, name, array)
        self._check_actions = ActionChecker(self.single_action_space, self.agents_per_batch,
                                            self.actions.dtype)
        self._actors: list = []
        self._ray = ray
        self._connected = [False]  # whether this vec holds a share of the Ray connection
        self._finalizer = weakref.finalize(self, shutdown_actors, self._actors, probe,
                                           self._connected)
        self._refs: list = [None] * self.num_workers  # each actor's outstanding step/reset
        self._ready: list[int] = []  # landed, not yet returned, in order of arrival
        self._held: list[int] = []  # the batch last returned by recv(), awaiting send()
        self._infos: list[list] = [[] for _ in range(self.num_workers)]
        self._sent = [0] * self.num_workers
        self._tick = 0
        self._make_batches()
        try:
            ray_session.acquire(address, self.num_workers * num_cpus)
            self._connected[0] = True
            self._start_actors(ray, env_creator, env_kwargs, num_cpus)
        except BaseException:
            self.close()
            raise

    def _start_actors(self, ray, env_creator, env_kwargs, num_cpus):
        have = ray_session.cluster_cpus(ray)
        if have < self.num_workers * num_cpus:
            raise ValueError(
                f"the Ray cluster has {have:g} CPUs, but {self.num_workers} actors x {num_cpus:g} "
                f"CPUs need {self.num_workers * num_cpus:g}: lower vec.num_workers or "
                "vec.ray_num_cpus, or add nodes")
        # SPREAD: blocks go to different nodes when there are several.
        remote = ray.remote(EnvBlock).options(num_cpus=num_cpus, scheduling_strategy="SPREAD",
                                              max_restarts=0, max_task_retries=0)
        for w in range(self.num_workers):
            self._actors.append(remote.remote(env_creator, env_kwargs, self.envs_per_worker,
                                              self._worker_seed(w)))
        where = [a.where.remote() for a in self._actors]
        places = [self._get(w, ref, time.monotonic() + max(self.timeout, START_TIMEOUT_S))
                  for w, ref in enumerate(where)]
        self.actor_pids = [pid for pid, _ in places]
        self.actor_nodes = [node for _, node in places]

    def _worker_seed(self, w: int) -> int:
        return self.seed + w * self.envs_per_worker  # as Multiprocessing: env i gets seed + i

    def _make_batches(self):
        """Fixed blocks of actors (zero-copy and sync): views of our buffers, no copies."""
        k = self.workers_per_batch
        self._blocks = []
        for start in range(0, self.num_workers, k):
            rows = slice(start * self._rows, (start + k) * self._rows)
            self._blocks.append((list(range(start, start + k)), (
                self.observations[rows], self.rewards[rows], self.terminals[rows],
                self.truncations[rows], np.arange(rows.start, rows.stop, dtype=np.int64),
                self.masks[rows])))
        self._gather = None
        if not self.zero_copy and k < self.num_workers:
            n = self.agents_per_batch
            self._gather = tuple(np.empty((n, *a.shape[1:]), a.dtype) for a in (
                self.observations, self.rewards, self.terminals, self.truncations,
                self.masks))

    @property
    def observation_space(self):
        """Gymnasium-style: the observations of one batch (`agents_per_batch` rows)."""
        return batched(self.single_observation_space, self.agents_per_batch)

    @property
    def action_space(self):
        """Gymnasium-style: the actions of one batch; `.sample()` is a valid send()."""
        return batched(self.single_action_space, self.agents_per_batch)

    # -- the async API ---------------------------------------------------------------------------

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is not None:
            self.seed = int(seed)
        self._wait(lambda: not self._busy(), range(self.num_workers))  # let steps land first
        self._ready, self._held = [], []
        for w in range(self.num_workers):
            self._infos[w] = []
            self._submit(w, self._actors[w].reset, self._worker_seed(w))

    def send(self, actions) -> None:
        self._check_open()
        if not self._held:
            raise RuntimeError("send() needs a batch: call recv() (after async_reset()) first")
        actions = self._check_actions(actions)
        held, self._held = self._held, []
        for i, w in enumerate(held):
            self._submit(w, self._actors[w].step, actions[i * self._rows:(i + 1) * self._rows])

    def recv(self):
        self._check_open()
        if self._held or not (self._ready or self._busy()):
            raise RuntimeError("recv() needs a pending async_reset() or send()")
        if self._gather is None:
            workers, arrays = self._wait_for_block()
        else:
            self._wait(lambda: len(self._ready) >= self.workers_per_batch,
                       range(self.num_workers))
            # the finished actors sent longest ago, so none starves
            oldest = sorted(self._ready, key=self._sent.__getitem__)
            workers = sorted(oldest[:self.workers_per_batch])
            arrays = self._gather_rows(workers)
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
        if len(self._blocks) == 1:
            self._wait(lambda: not self._busy(), range(self.num_workers))
            return self._blocks[0]
        chosen = []

        def some_block_done():
            ready = set(self._ready)
            done = [b for b in self._blocks if all(w in ready for w in b[0])]
            if done:  # the block sent longest ago first, so none starves
                chosen.append(min(done, key=lambda b: self._sent[b[0][0]]))
            return bool(done)

        self._wait(some_block_done, range(self.num_workers))
        return chosen[-1]

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

    # -- the sync API ----------------------------------------------------------------------------

    def reset(self, seed: int | None = None):
        self.async_reset(seed)
        obs, _, _, _, infos, _, _ = self.recv()
        return obs, infos

    def step(self, actions):
        self.send(actions)
        obs, rewards, terminals, truncations, infos, _, _ = self.recv()
        return obs, rewards, terminals, truncations, infos

    def frame(self, env_index: int = 0):
        """The tile grid of env `env_index`, from its actor (after any step it is running)."""
        self._check_open()
        if not 0 <= env_index < self.num_envs:
            raise IndexError(f"env_index {env_index} out of range [0, {self.num_envs})")
        w, local = divmod(env_index, self.envs_per_worker)
        return self._call(w, self._actors[w].frame.remote(local))

    # -- saved state ----------------------------------------------------------------------------

    def get_state(self) -> dict | None:
        """As Multiprocessing.get_state: exact when synchronous; a restored pool resumes from
        the same states, but which actors come back first is timing."""
        self._check_open()
        if self._held:
            raise RuntimeError("get_state() while a batch is held: send() its actions first")
        self._wait(lambda: not self._busy(), range(self.num_workers))
        parts = [self._call(w, a.get_state.remote()) for w, a in enumerate(self._actors)]
        infos = [info for w in self._ready for info in self._infos[w]]
        return env_state.capture(self.buffers, env_state.join(parts), infos, bool(self._ready))

    def set_state(self, state: dict) -> None:
        """Continue from get_state() of a vec env of the same env, settings and num_envs."""
        self._check_open()
        env_state.check_matches(state["envs"], self.driver_env)
        parts = env_state.split(state["envs"], [self.envs_per_worker] * self.num_workers)
        self._wait(lambda: not self._busy(), range(self.num_workers))
        env_state.restore_buffers(self.buffers, state["buffers"])
        for w, actor in enumerate(self._actors):
            rows = {n: self.buffers[n][self._slice(w)] for n in env_state.SAVED_BUFFERS}
            self._call(w, actor.set_state.remote(parts[w], rows))
        self._held = []
        self._infos = [[] for _ in range(self.num_workers)]
        self._infos[0] = list(state["infos"])
        self._ready = list(range(self.num_workers)) if state["pending"] else []

    # -- talking to actors -----------------------------------------------------------------------

    def _slice(self, w: int) -> slice:
        return slice(w * self._rows, (w + 1) * self._rows)

    def _busy(self) -> bool:
        return any(ref is not None for ref in self._refs)

    def _submit(self, w: int, method, argument) -> None:
        self._refs[w] = method.remote(argument)
        self._tick += 1
        self._sent[w] = self._tick

    def _land(self, w: int, result) -> None:
        """Copy actor w's step result into its rows of our buffers; it is ready to return."""
        rows = self._slice(w)
        for name, array in zip(RESULT_BUFFERS, result, strict=False):
            self.buffers[name][rows] = array
        final, infos = result[len(RESULT_BUFFERS)], result[len(RESULT_BUFFERS) + 1]
        if final is not None:
            self.final_observations[rows] = final
        if infos:
            self._infos[w].extend(infos)
        self._refs[w] = None
        self._ready.append(w)

    def _wait(self, satisfied, workers) -> None:
        """Land results until `satisfied()`; an error, a death or the timeout is WorkerError."""
        ray = self._ray
        deadline = time.monotonic() + self.timeout
        if self.workers_per_batch == self.num_workers and not satisfied():
            self._get_all(self._owners(workers), deadline)  # synchronous: one call for all
        elif self.workers_per_batch < self.num_workers:
            # A pool: land every actor that has finished, so the choice is among all of them.
            owner = self._owners(workers)
            if len(owner) > 1:
                done, _ = ray.wait(list(owner), num_returns=len(owner), timeout=0)
                self._land_refs(done, owner, deadline)
        while not satisfied():
            owner = self._owners(workers)
            if not owner:
                raise RuntimeError("internal: waiting on actors of which none is busy")
            left = max(0.0, deadline - time.monotonic())
            done, rest = ray.wait(list(owner), num_returns=1, timeout=left)
            if not done:
                raise self._fail(WorkerError(
                    owner[rest[0]], f"no answer within {self.timeout:g} s (is the env hung, or "
                    "its node lost?); the vec env was closed"))
            if rest:  # others that finished meanwhile land too
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            self._land_refs(done, owner, deadline)

    def _get_all(self, owner: dict, deadline: float) -> None:
        """Land every outstanding call at once (ray.get returns early if one fails)."""
        ray, refs = self._ray, list(owner)
        try:
            results = ray.get(refs, timeout=max(0.0, deadline - time.monotonic()))
        except ray.exceptions.GetTimeoutError:
            stuck = ray.wait(refs, num_returns=len(refs), timeout=0)[1]
            raise self._fail(WorkerError(
                owner[stuck[0]] if stuck else owner[refs[0]], f"no answer within "
                f"{self.timeout:g} s (is the env hung, or its node lost?); the vec env was "
                "closed")) from None
        except ray.exceptions.RayError as exc:
            for ref in ray.wait(refs, num_returns=len(refs), timeout=0)[0]:
                self._get(owner[ref], ref, deadline)  # raises for the actor that failed
            raise self._fail(worker_error(ray, owner[refs[0]], exc)) from None
        for ref, result in zip(refs, results, strict=True):
            self._land(owner[ref], result)

    def _owners(self, workers) -> dict:
        """{outstanding call: actor} of `workers`."""
        return {self._refs[w]: w for w in workers if self._refs[w] is not None}

    def _land_refs(self, refs, owner, deadline) -> None:
        for ref in refs:
            w = owner[ref]
            self._land(w, self._get(w, ref, deadline))

    def _call(self, w: int, ref):
        """The answer of a one-off call (frame, state) to actor w, in bounded time."""
        return self._get(w, ref, time.monotonic() + self.timeout)

    def _get(self, w: int, ref, deadline: float):
        ray = self._ray
        try:
            return ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
        except ray.exceptions.GetTimeoutError:
            raise self._fail(WorkerError(
                w, f"no answer within {self.timeout:g} s (is the env hung, or its node "
                "lost?); the vec env was closed")) from None
        except ray.exceptions.RayError as exc:
            raise self._fail(worker_error(self._ray, w, exc)) from None

    def _fail(self, error: WorkerError) -> WorkerError:
        """Close everything (no actor outlives a failure) and hand back the error to raise."""
        self._error = error
        self.close()
        return error

    def _check_open(self) -> None:
        if self._closed:
            if self._error is not None:
                raise RuntimeError(f"the vec env was closed after an error: {self._error}")
            raise RuntimeError("the vec env is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
