"""Multiprocessing: worker processes step their envs in place in shared memory.

Worker w owns envs [w*k, (w+1)*k) and their agent rows of every buffer. `send()` writes the
actions into shared memory and sends each worker of the batch one byte; the worker steps and
answers one byte (or a small pickle when it has infos). With `batch_size == num_envs` recv()
waits for every worker (synchronous). With a smaller batch it is an EnvPool-style pool:
recv() returns the first workers to finish, so simulation overlaps with the caller's work.
`zero_copy` batches are fixed contiguous blocks of workers returned as views of shared
memory; otherwise any finished workers are gathered (copied) into batch arrays. With
`inline=True` worker 0 is not a process: the caller steps its block itself in send(), after
waking the others (block.py says why that is faster when the workers fill the cores).

Not thread-safe: call it from one thread (the trainer's). Workers start from a forkserver
and do not import the caller's `__main__` (see main_module.py), unless the env creator is
defined there: then the script needs the usual `if __name__ == "__main__":` guard. The env
creator must pickle.
"""

from __future__ import annotations

import multiprocessing
import pickle
import socket
import time
import traceback
import weakref

import numpy as np

from puffer_tui.engine.vec import saved_state
from puffer_tui.engine.vec.errors import WorkerError, WorkerHung
from puffer_tui.engine.vec.mp import channel
from puffer_tui.engine.vec.mp.block import InlineBlock
from puffer_tui.engine.vec.mp.crash_log import CrashLog
from puffer_tui.engine.vec.mp.hang_limit import HangLimit, heartbeat_interval
from puffer_tui.engine.vec.mp.inline_watch import InlineHung, InlineWatch
from puffer_tui.engine.vec.mp.main_module import creator_needs_main, main_module_hidden
from puffer_tui.engine.vec.mp.shared_memory import SharedLayout, SharedMemoryFile
from puffer_tui.engine.vec.mp.worker import worker_main
from puffer_tui.engine.vec.mp.worker_exit import describe_death, shutdown_workers
from puffer_tui.engine.vec.pool_base import WorkerPool
from puffer_tui.engine.vec.sizing import available_cores, plan_workers

# Start method: "forkserver". fork would copy a parent that may already run torch/OpenMP
# threads, which can deadlock a child; spawn imports everything again in every worker, the
# slowest; the forkserver is a clean single-threaded process forked once, early, with our
# worker module preloaded, so it is both the safe and, after its first batch, the fastest
# choice (the figures: docs/architecture.md, "Figures that shaped the code").
START_METHOD = "forkserver"
PRELOAD = ["numpy", "puffer_tui.engine.native", "puffer_tui.engine.vec.mp.worker"]
# The least a busy worker may stay silent before it is called hung; longer for envs measured
# to be slow (engine/vec/mp/hang_limit.py), so that only a hung env becomes an error.
DEFAULT_TIMEOUT_S = 15.0
# Spin (poll without sleeping) this long before blocking, but only when there is a spare core:
# with as many workers as cores, a spinning waiter would take the core a worker or the
# trainer needs, and on the 2-core dev box blocking at once measured faster.
SPIN_US_WITH_SPARE_CORE = 20.0
# The caller of an inline vec has a core of its own while the others step theirs: it polls
# longer, so that the answer of a block stepped in parallel with its own costs no wake-up.
SPIN_US_INLINE_CALLER = 200.0


def _context(method: str):
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _check_picklable(env_creator, env_kwargs) -> None:
    """Workers receive the creator by pickle: say so plainly instead of deep in multiprocessing."""
    try:
        pickle.dumps((env_creator, env_kwargs))
    except Exception as exc:
        raise TypeError(
            f"the multiprocessing backend sends env_creator {env_creator!r} to its workers by "
            f"pickle, which failed ({type(exc).__name__}: {exc}); use "
            "puffer_tui.envs.creator(...), "
            "puffer_tui.envs.from_gymnasium(...), a module-level function or a functools.partial "
            "of one, not a lambda or a local function"
        ) from exc


class Multiprocessing(WorkerPool):
    """`num_envs` envs in `num_workers` processes; recv() returns `batch_size` envs' rows.

    Same API and attributes as Serial, plus `worker_pids`, `envs_per_worker` and
    `workers_per_batch`. `timeout`: the least seconds recv()/frame() wait for a silent
    worker before calling it hung; the limit is longer when its envs were measured to be slow
    (`hang_limit`, engine/vec/mp/hang_limit.py), and a worker whose env sends heartbeats while
    it works (engine/native/progress.py) is not silent. `spin_us`: how long a waiting process
    polls before it blocks (None: 20 us when there is a core to spare beyond the workers, else
    0; an inline caller 200 us). `inline`:
    worker 0's envs are stepped by the caller (one process fewer). Any worker failure raises
    WorkerError and closes the whole vec env.
    """

    def __init__(self, env_creator, num_envs: int = 1, num_workers: int | None = None,
                 batch_size: int | None = None, zero_copy: bool = True, seed: int = 0,
                 env_kwargs: dict | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 spin_us: float | None = None, start_method: str = START_METHOD,
                 inline: bool = False):
        plan = plan_workers(num_envs, num_workers, batch_size, zero_copy)
        self._take_plan(plan, num_envs, zero_copy, seed, timeout)
        spare_core = available_cores() > plan.num_workers
        worker_spin = SPIN_US_WITH_SPARE_CORE if spare_core else 0.0
        if spin_us is None:
            spin_us = SPIN_US_INLINE_CALLER if inline else worker_spin
        else:
            worker_spin = spin_us
        self._spin_s, self._worker_spin_s = spin_us / 1e6, worker_spin / 1e6
        env_kwargs = dict(env_kwargs or {})
        _check_picklable(env_creator, env_kwargs)
        self.hang_limit = HangLimit(self.timeout)
        built = time.monotonic()
        probe = self._probe(env_creator, env_kwargs)
        self.hang_limit.note("build", time.monotonic() - built)  # one env, here
        self._heard = [0.0] * self.num_workers  # when each last sent a heartbeat or pace
        self._procs, self._socks, self._logs = [], [], []  # None for the inline worker
        self._inline: InlineBlock | None = None
        self._inline_watch: InlineWatch | None = None
        self._local: list[InlineBlock] = []  # the inline block, for the finalizer to close
        # Ends the workers and the driver env on close(), garbage collection or exit.
        self._finalizer = weakref.finalize(
            self, shutdown_workers, self._procs, self._socks, self._logs, probe, self._local
        )
        self._busy = [False] * self.num_workers  # a step/reset answer is outstanding
        self._frames: dict[int, object] = {}
        self._states: dict[int, object] = {}  # answers to get_state / set_state
        memory = None
        try:
            layout = SharedLayout(self.single_observation_space, self.single_action_space,
                                  self.num_agents)
            memory = SharedMemoryFile(layout.nbytes)
            mapping = memory.attach(keep_fd=True)
            self._use_buffers(layout.views(mapping))
            self.masks[:] = True
            self._start_workers(env_creator, env_kwargs, memory, layout, start_method, inline)
            memory.close_fd()  # the workers hold their own descriptors now
            if inline:  # built while the workers start theirs
                self._inline = InlineBlock(env_creator, env_kwargs,
                                           layout.views(mapping, 0, self._rows),
                                           self.envs_per_worker, self._worker_seed(0))
                self._local.append(self._inline)
                # no process waits on this block: a thread watches it for hangs
                self._inline_watch = InlineWatch(self.hang_limit,
                                                 heartbeat_interval(self.timeout))
                self._local.append(self._inline_watch)
            self._wait_idle()
            self._ready.clear()
        except BaseException:
            if memory is not None:
                memory.close_fd()
            self.close()
            raise

    def _start_workers(self, env_creator, env_kwargs, memory, layout, start_method, inline):
        ctx = _context(start_method)
        needs_main = creator_needs_main(env_creator, env_kwargs)
        for w in range(self.num_workers):
            if inline and w == 0:
                self._procs.append(None)
                self._socks.append(None)
                self._logs.append(None)
                continue
            ours, theirs = socket.socketpair()
            log = CrashLog()
            self._socks.append(ours)
            self._logs.append(log)
            rows = (w * self._rows, (w + 1) * self._rows)
            seed = self._worker_seed(w)
            proc = ctx.Process(
                target=worker_main, name=f"puffer-vec-worker-{w}", daemon=True,
                args=(w, env_creator, env_kwargs, memory, layout, rows, self.envs_per_worker,
                      seed, theirs, log, self._worker_spin_s, start_method == "forkserver",
                      heartbeat_interval(self.timeout)),
            )
            with main_module_hidden(not needs_main):  # the worker needs only the creator
                proc.start()
            theirs.close()  # only the worker holds its end: its death means EOF here
            self._procs.append(proc)
            self._busy[w] = True  # its "ready" is outstanding
        self._remote = [w for w in range(self.num_workers) if self._procs[w] is not None]
        self._fd_worker = {self._socks[w].fileno(): w for w in self._remote}
        self._fd_worker.update({self._procs[w].sentinel: w for w in self._remote})

    @property
    def worker_pids(self) -> list[int]:
        """The worker processes (an inline worker has none: it is the caller)."""
        return [p.pid for p in self._procs if p is not None]

    def _outstanding(self) -> bool:
        return any(self._busy)

    def _reset_order(self):
        """The worker processes first, then the inline block: its reset runs here and now,
        and a slow one (Python envs building worlds) must not hold back theirs."""
        return sorted(range(self.num_workers), key=lambda w: w == 0 and self._inline is not None)

    def _start_reset(self, w: int) -> None:
        if w == 0 and self._inline is not None:
            self._run_inline(lambda block: block.reset(self._worker_seed(0)), "reset")
            return
        message = ("reset", self._worker_seed(w))
        self._command(w, lambda s: channel.send_object(s, message))

    def _run_inline(self, work, activity: str) -> None:
        """Worker 0's step or reset, here and now; it is then ready like a worker that answered.
        An env error is a WorkerError, as it would be from a worker process, and so is a hang
        (the watchdog interrupts it, inline_watch.py)."""
        self._mark_sent(0)
        watch = self._inline_watch
        watch.begin(activity)
        try:
            try:
                infos = work(self._inline)
            finally:
                hung = watch.end()
        except InlineHung:
            hung = watch.end()  # it may have landed inside the first end()
        except Exception as exc:
            raise self._fail(WorkerError(0, f"{type(exc).__name__}: {exc} (in the inline "
                                         "worker, the caller's process)",
                                         traceback.format_exc())) from exc
        if hung is not None:
            silent, stack = hung
            raise self._fail(WorkerHung(
                0, f"{self.hang_limit.describe(silent, ' from the inline block, in the caller')}"
                "; the vec env was closed", stack, limit=self.hang_limit.seconds(),
                silent_for=silent, measured=dict(self.hang_limit.measured)))
        if infos:
            self._infos[0].extend(infos)
        self._ready.append(0)

    def _start_steps(self, held, actions) -> None:
        """Write the held workers' actions into shared memory, then wake each of them."""
        if self._held_rows is not None:
            target = self.actions[self._held_rows]
            if actions is not target:
                np.copyto(target, actions, casting="unsafe")
        else:
            for i, w in enumerate(held):
                dst = self.actions[self._slice(w)]
                np.copyto(dst, actions[i * self._rows:(i + 1) * self._rows], casting="unsafe")
        inline = False
        for w in held:
            if w == 0 and self._inline is not None:
                inline = True  # stepped last: the others step meanwhile
            else:
                self._command(w, lambda s: s.send(channel.STEP))
        if inline:
            self._run_inline(InlineBlock.step, "step")

    def _frame(self, w: int, local: int, view: str = "env"):
        """Asked of worker w between steps (view "obs": the observation drawn as an image)."""
        if w == 0 and self._inline is not None:
            return self._inline.frame(local, view)
        self._frames.pop(w, None)
        self._command(w, lambda s: channel.send_object(s, ("frame", local, view)), step=False)
        self._wait(lambda: w in self._frames, [w])
        return self._frames.pop(w)

    # -- saved state ----------------------------------------------------------------------------

    def _env_states(self) -> list:
        return self._ask_all(lambda w: ("get_state",))

    def _restore(self, parts: list, buffers: dict) -> None:
        self._ask_all(lambda w: ("set_state", parts[w]))
        saved_state.restore_buffers(self.buffers, buffers)

    def _ask_all(self, message) -> list:
        """Send each idle worker message(w) and collect their ("state", value) answers."""
        self._states.clear()
        for w in range(self.num_workers):
            request = message(w)
            if w == 0 and self._inline is not None:
                env = self._inline.env
                self._states[0] = (env.get_state() if request[0] == "get_state"
                                   else env.set_state(request[1]))
                continue
            self._command(w, lambda s, m=request: channel.send_object(s, m), step=False)
        workers = range(self.num_workers)
        self._wait(lambda: len(self._states) == self.num_workers, workers)
        return [self._states.pop(w) for w in workers]

    # -- talking to workers ----------------------------------------------------------------------

    def _command(self, w: int, write, step: bool = True) -> None:
        try:
            write(self._socks[w])
        except OSError:
            raise self._fail(self._death(w)) from None
        if step:
            self._busy[w] = True
            self._mark_sent(w)

    def _wait(self, satisfied, workers) -> None:
        """Read answers until `satisfied()`; a death, an error or a worker silent for longer
        than the hang limit raises WorkerError."""
        if self.workers_per_batch < self.num_workers:
            # A pool: hear from every worker that has finished, not only the first few, so
            # the choice below is among all of them (else a slow-to-read worker starves).
            busy = [self._socks[w] for w in workers if self._busy[w]]
            for sock in channel.wait_readable(busy, 0, 0) if busy else ():
                self._read(self._fd_worker[sock.fileno()])
        start = time.monotonic()
        # The earliest a worker can be overdue; heartbeats only ever move it later, so it is
        # looked at again only when reached (nothing more on the hot path).
        deadline = start + self.hang_limit.seconds()
        spin = self._spin_s
        remote = [w for w in workers if self._procs[w] is not None]
        fds = [self._socks[w] for w in remote] + [self._procs[w].sentinel for w in remote]
        while not satisfied():
            if not fds:
                raise RuntimeError("waiting for the inline worker, which never waits")
            ready = channel.wait_readable(fds, spin, max(0.0, deadline - time.monotonic()))
            spin = 0.0
            if not ready:
                stuck, deadline = self._overdue(remote, start)
                if stuck is None:
                    continue
                stack = self._logs[stuck].dump_stack(self._procs[stuck].pid)  # before the kill
                silent = time.monotonic() - max(self._heard[stuck], start)
                raise self._fail(WorkerHung(
                    stuck, f"{self.hang_limit.describe(silent)}; the vec env was closed", stack,
                    limit=self.hang_limit.seconds(), silent_for=silent,
                    measured=dict(self.hang_limit.measured)))
            for fd in ready:
                if not isinstance(fd, int):
                    self._read(self._fd_worker[fd.fileno()])
                elif not channel.wait_readable([self._socks[self._fd_worker[fd]]], 0, 0):
                    raise self._fail(self._death(self._fd_worker[fd]))

    def _overdue(self, remote, start: float):
        """(the worker silent past the hang limit, or None; the next deadline). Silence counts
        from the worker's last heartbeat, or from the wait's start (a wait begun late, the
        answers read late, is not the worker's fault). The busy workers are watched, or all
        of them when an answer to something else (a frame, a state) is awaited."""
        watched = [w for w in remote if self._busy[w]] or remote
        since = {w: max(self._heard[w], start) for w in watched}
        stuck = min(watched, key=since.__getitem__)
        limit = self.hang_limit.seconds()
        if time.monotonic() - since[stuck] >= limit:
            return stuck, 0.0
        return None, since[stuck] + limit

    def _read(self, w: int) -> None:
        try:
            message = channel.receive(self._socks[w])
        except OSError:  # includes ChannelClosed: the worker is gone
            raise self._fail(self._death(w)) from None
        if message == channel.DONE:
            self._busy[w] = False
            self._ready.append(w)
            return
        if message == channel.ALIVE:
            self._heard[w] = time.monotonic()
            return
        kind = message[0]
        if kind == "pace":  # the worker's longest silence so far, grown
            self._heard[w] = time.monotonic()
            self.hang_limit.note(message[1], message[2])
            return
        if kind in ("done", "ready"):
            if kind == "done" and message[1]:
                self._infos[w].extend(message[1])
            self._busy[w] = False
            self._ready.append(w)
        elif kind == "frame":
            self._frames[w] = message[1]
        elif kind == "state":
            self._states[w] = message[1]
        elif kind == "error":
            raise self._fail(WorkerError(w, message[1], message[2]))
        else:
            raise self._fail(WorkerError(w, f"unexpected message {message!r}"))

    def _death(self, w: int) -> WorkerError:
        proc = self._procs[w]
        proc.join(1.0)
        return WorkerError(w, describe_death(proc), self._logs[w].read())
