"""Ray: envs in Ray actors, one block of envs per actor, on one machine or across a cluster.

Actor w owns envs [w*k, (w+1)*k) (engine/vec/ray/actor.py) and steps them all per remote call,
so Ray's per-call cost is paid once per block. `send()` submits each held actor's step and
returns at once: the actors step while the caller computes. Results are numpy arrays that come
back through Ray's object store (read in place, no unpickling copy) and land, as soon as they
are fetched, in this vec's own buffers, which recv() returns (views for whole contiguous
blocks, gathered copies otherwise) -- the same API, batching rules (engine/vec/sizing.py),
seeds and error contract as the Multiprocessing backend: with `batch_size == num_envs` recv()
waits for every actor; with fewer it returns the first finished actors (ray.wait).

An actor that raises, dies or is lost with its node is a WorkerError carrying the remote
traceback, and closes the vec env; close() kills every actor (and shuts down a Ray that this
process started, engine/vec/ray/session.py). The env creator must pickle (cloudpickle) and
puffer_tui must be importable on every node. Not thread-safe: call it from one thread.
"""

from __future__ import annotations

import time
import weakref

from puffer_tui.engine.native.buffers import allocate_buffers
from puffer_tui.engine.vec import saved_state
from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.pool_base import WorkerPool
from puffer_tui.engine.vec.ray import session as ray_session
from puffer_tui.engine.vec.ray.actor import RESULT_BUFFERS, EnvBlock
from puffer_tui.engine.vec.ray.actor_exit import shutdown_actors, worker_error
from puffer_tui.engine.vec.ray.worker_rates import WorkerRates
from puffer_tui.engine.vec.sizing import plan_workers

DEFAULT_TIMEOUT_S = 15.0  # no step or reset should take this long; then the actor is hung/lost
START_TIMEOUT_S = 120.0  # placing actors may mean starting worker processes on a busy cluster
CLUSTER_SAMPLE_S = 5.0  # the cluster's CPU use is asked of Ray's GCS at most this often


class RayVec(WorkerPool):
    """`num_envs` envs in `num_workers` Ray actors; recv() returns `batch_size` envs' rows.

    Same API and attributes as Multiprocessing (`envs_per_worker`, `workers_per_batch`), plus
    `actor_pids`, `actor_nodes` (Ray node ids) and `actor_hosts` (host names), and for telemetry
    `worker_stats()` (each actor's delivered agent-steps/s) and `cluster_usage()` (the
    cluster's CPUs, sampled at most every CLUSTER_SAMPLE_S seconds). `address`: the Ray
    cluster ("" : RAY_ADDRESS, a running local Ray, else start one). `num_cpus`: CPUs each actor asks Ray for. `timeout`:
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
        self._take_plan(plan, num_envs, zero_copy, seed, timeout)
        if not num_cpus > 0:
            raise ValueError(f"num_cpus (CPUs per Ray actor) must be > 0, got {num_cpus}")
        ray = ray_session.import_ray(address)
        env_kwargs = dict(env_kwargs or {})
        probe = self._probe(env_creator, env_kwargs)
        self._use_buffers(allocate_buffers(self.single_observation_space,
                                           self.single_action_space, self.num_agents))
        self._actors: list = []
        self._ray = ray
        self._connected = [False]  # whether this vec holds a share of the Ray connection
        self._finalizer = weakref.finalize(self, shutdown_actors, self._actors, probe,
                                           self._connected)
        self._refs: list = [None] * self.num_workers  # each actor's outstanding step/reset
        self._rates = WorkerRates(self.num_workers)
        self._cluster: tuple[float, dict | None] = (float("-inf"), None)  # (when, usage)
        self.actor_hosts: list[str] = []
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
        self.actor_pids = [pid for pid, _, _ in places]
        self.actor_nodes = [node for _, node, _ in places]
        self.actor_hosts = [host for _, _, host in places]

    # -- the async API ---------------------------------------------------------------------------

    def _outstanding(self) -> bool:
        return any(ref is not None for ref in self._refs)

    def _start_reset(self, w: int) -> None:
        self._submit(w, self._actors[w].reset, self._worker_seed(w))

    def _start_steps(self, held, actions) -> None:
        for i, w in enumerate(held):
            self._submit(w, self._actors[w].step, actions[i * self._rows:(i + 1) * self._rows])

    def _frame(self, w: int, local: int):
        """From actor w, after any step it is running."""
        return self._call(w, self._actors[w].frame.remote(local))

    # -- telemetry (called from the control server's thread) ------------------------------------

    def worker_stats(self) -> list[dict]:
        """[{"actor", "node", "sps"}]: where each actor runs and the agent-steps/s it delivered
        over the last second or so."""
        rates = self._rates.rates()
        return [{"actor": w, "node": host, "sps": rates[w]}
                for w, host in enumerate(self.actor_hosts)]

    def cluster_usage(self) -> dict | None:
        """{"cpus", "cpus_reserved"} of the whole Ray cluster (None if Ray cannot say), asked at
        most every CLUSTER_SAMPLE_S seconds."""
        when, usage = self._cluster
        now = time.monotonic()
        if now - when >= CLUSTER_SAMPLE_S:
            usage = ray_session.cluster_usage(self._ray) if self._connected[0] else None
            self._cluster = (now, usage)
        return usage

    # -- saved state ----------------------------------------------------------------------------

    def _env_states(self) -> list:
        return [self._call(w, a.get_state.remote()) for w, a in enumerate(self._actors)]

    def _restore(self, parts: list, buffers: dict) -> None:
        saved_state.restore_buffers(self.buffers, buffers)
        for w, actor in enumerate(self._actors):
            rows = {n: self.buffers[n][self._slice(w)] for n in saved_state.SAVED_BUFFERS}
            self._call(w, actor.set_state.remote(parts[w], rows))

    # -- talking to actors -----------------------------------------------------------------------

    def _submit(self, w: int, method, argument) -> None:
        self._refs[w] = method.remote(argument)
        self._mark_sent(w)

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
        self._rates.add(w, self._rows)

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
                    owner[rest[0]], self._no_answer()))
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
                owner[stuck[0]] if stuck else owner[refs[0]], self._no_answer())) from None
        except ray.exceptions.RayError as exc:
            for ref in ray.wait(refs, num_returns=len(refs), timeout=0)[0]:
                self._get(owner[ref], ref, deadline)  # raises for the actor that failed
            raise self._fail(worker_error(ray, owner[refs[0]], exc)) from None
        for ref, result in zip(refs, results, strict=True):
            self._land(owner[ref], result)

    def _no_answer(self) -> str:
        # Actors send no heartbeats: the limit is the fixed one (multiprocessing measures)
        return (f"no answer within {self.timeout:g} s (is the env hung, or its node lost?); "
                f"an env this slow needs a larger --vec.worker-timeout (now {self.timeout:g}); "
                "the vec env was closed")

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
            raise self._fail(WorkerError(w, self._no_answer())) from None
        except ray.exceptions.RayError as exc:
            raise self._fail(worker_error(self._ray, w, exc)) from None
