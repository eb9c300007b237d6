"""Multi-process learners: the glue between torchrun/DistributedDataParallel and the engine.

    torchrun --nproc-per-node 2 -m puffer_tui.engine RUN_DIR      # or: train ENV --train.nproc 2

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK (and the rendezvous); `World.from_environment()`
reads them, `world.join(device)` opens the process group (gloo on CPU, NCCL on CUDA, with a
gloo group beside it for the small CPU objects: commands, stats). Without torchrun the world is
one process and every method here is the identity, so the single-process engine pays nothing.

Rules the engine keeps (docs/many-machines.md):
- `vec.num_envs` is per rank: each rank builds and steps its own envs; `train.total_timesteps`
  counts the steps of all ranks together (global_step is summed across ranks every epoch).
- Seeds differ per rank (`seed + rank * RANK_SEED_STRIDE`); DDP copies rank 0's initial
  weights to every rank, so the model starts and stays identical.
- Rank 0 owns the run dir: metrics.jsonl, checkpoints, status.json and the control socket.
  The others write only their own warnings and errors to events.log ("rank N: ...").
- Commands reach rank 0; at each synchronised safe point (between minibatches, at epoch
  boundaries) rank 0 broadcasts what it dequeued and every rank applies the same list.
- A checkpoint holds rank 0's model, optimizer, envs and RNG streams. On resume (any world
  size) rank 0 restores them; every other rank starts fresh episodes and reseeds its RNG
  streams from (seed, rank, global_step), so a resume is reproducible but not bit-exact.

Tested in: tests/engine/runtime/test_ddp.py, tests/engine/algo/test_exit_rank.py.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from datetime import timedelta

import torch

from puffer_tui.engine.shared.config import ConfigError
from puffer_tui.engine.shared.events import EventLog, event_record
from puffer_tui.engine.shared.health import NonFiniteError

RANK_SEED_STRIDE = 1_000_003  # a prime: per-rank seeds (and env seed blocks) never overlap
# Followers wait inside a broadcast while rank 0 is paused; a dead rank is noticed by torchrun
# (it stops the others) and by the broken connection, not by this timeout.
PAUSE_TIMEOUT = timedelta(days=7)
# What gloo (and NCCL) say when the rank at the other end of a connection is gone
# (gloo's transport errors all name their source file: "[.../gloo/transport/tcp/pair.cc:537]
# Read error [127.0.0.1]:4765: Connection reset by peer", "... Connection closed by peer ...")
_PEER_LOST = re.compile(r"gloo/transport/|NCCL communicator was aborted")
PEER_EXIT_WAIT = 5.0  # seconds a rank waits for a failed peer's process to end before naming it


class World:
    """This process's place among the learner ranks (one rank, size 1, unless torchrun)."""

    def __init__(self, rank: int = 0, size: int = 1, local_rank: int = 0,
                 local_size: int = 1):
        self.rank, self.size = rank, size
        self.local_rank, self.local_size = local_rank, local_size
        self.node = socket.gethostname()
        self._objects = None  # the process group for pickled objects (gloo)
        self._joined = False
        self.peers: list[tuple[int, str]] = [(os.getpid(), self.node)]  # (pid, node) by rank

    @classmethod
    def from_environment(cls) -> World:
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1") or 1)
        if size <= 1:
            return cls()
        return cls(int(env["RANK"]), size, int(env.get("LOCAL_RANK", "0")),
                   int(env.get("LOCAL_WORLD_SIZE", "1")))

    @property
    def enabled(self) -> bool:
        return self.size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def seed(self, seed: int) -> int:
        return seed + self.rank * RANK_SEED_STRIDE

    def join(self, device_name: str) -> None:
        """Open the process group (a no-op for one process). CUDA ranks get their own GPU."""
        if not self.enabled or self._joined:
            return
        import torch.distributed as dist

        cuda = device_name == "cuda" or (device_name == "auto" and torch.cuda.is_available())
        if cuda:
            gpus = torch.cuda.device_count()
            if self.local_rank >= gpus:
                raise ConfigError(
                    f"{self.local_size} learner ranks on this machine but torch sees {gpus} "
                    f"CUDA device(s): NCCL needs one GPU per rank; lower train.nproc to {gpus} "
                    "or train on the CPU (train.device cpu)")
            torch.cuda.set_device(self.local_rank)
        dist.init_process_group("nccl" if cuda else "gloo", timeout=PAUSE_TIMEOUT)
        self._objects = dist.new_group(backend="gloo", timeout=PAUSE_TIMEOUT) if cuda else None
        self._joined = True
        self.peers = self.gather((os.getpid(), self.node))

    def local_peer_pids(self) -> list[tuple[int, int]]:
        """(rank, pid) of the other ranks on this machine: their CPU counts as the engine's."""
        return [(rank, pid) for rank, (pid, node) in enumerate(self.peers)
                if rank != self.rank and node == self.node]

    def lost_peers(self, wait: float = PEER_EXIT_WAIT) -> list[tuple[int, int, str]]:
        """(rank, pid, node) of the other ranks on this machine whose process has ended (or
        is a zombie), waiting up to `wait` seconds for one to end: a rank that raised closes
        its connections a moment before it exits. Ranks on other machines cannot be seen."""
        import psutil

        deadline = time.monotonic() + wait
        while True:
            gone = []
            for rank, pid in self.local_peer_pids():
                try:
                    if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                        continue
                except psutil.NoSuchProcess:
                    pass
                gone.append((rank, pid, self.node))
            if gone or time.monotonic() >= deadline:
                return gone
            time.sleep(0.1)

    def close(self) -> None:
        if self._joined:
            import torch.distributed as dist

            self._joined = False
            try:
                dist.destroy_process_group()
            except Exception:
                pass  # a peer already gone: nothing left to tear down

    # -- collectives (identity for one process) ------------------------------------------------

    def broadcast(self, value):
        """Rank 0's `value` on every rank (any picklable object)."""
        if not self.enabled:
            return value
        import torch.distributed as dist

        box = [value]
        dist.broadcast_object_list(box, src=0, group=self._objects)
        return box[0]

    def gather(self, value) -> list:
        """Every rank's `value`, in rank order, on every rank."""
        if not self.enabled:
            return [value]
        import torch.distributed as dist

        out = [None] * self.size
        dist.all_gather_object(out, value, group=self._objects)
        return out

    def sum(self, value: int) -> int:
        """The sum of `value` over the ranks, on every rank."""
        if not self.enabled:
            return value
        import torch.distributed as dist

        total = torch.tensor([int(value)], dtype=torch.int64)
        dist.all_reduce(total, group=self._objects)
        return int(total.item())

    def any(self, flag: bool) -> bool:
        """True on every rank when `flag` is true on any."""
        if not self.enabled:
            return flag
        return max(self.gather(bool(flag)))

    def wrap(self, policy: torch.nn.Module, sequence_fn):
        """The function the learner replays sequences with: under DDP a DistributedDataParallel
        module around `sequence_fn`, so backward() averages the gradients across ranks."""
        if not self.enabled:
            return sequence_fn
        from torch.nn.parallel import DistributedDataParallel

        device = next(policy.parameters()).device
        ids = [device.index if device.index is not None else self.local_rank] \
            if device.type == "cuda" else None
        return DistributedDataParallel(_SequenceModule(policy, sequence_fn), device_ids=ids)


def is_peer_failure(error: BaseException) -> bool:
    """Whether `error` (raised by a collective) says another rank's end of the connection broke."""
    import torch.distributed as dist

    return isinstance(error, getattr(dist, "DistNetworkError", ())) or \
        bool(_PEER_LOST.search(str(error)))


def exit_rank(code: int) -> None:
    """End a learner rank's process without finalizing the interpreter.

    The gloo worker threads outlive destroy_process_group (the DDP reducer keeps the group
    alive) and may still be dropping the tensors of the last collective, which needs the GIL.
    A thread that asks for the GIL once the interpreter is finalizing is ended by
    pthread_exit, whose unwinding through gloo's noexcept destructor calls std::terminate:
    the rank died of SIGABRT ("terminate called without an active exception") about one exit
    in ten, and torchrun failed the run. So: everything Python would do at exit, in its order,
    then os._exit: threading's exit hooks, non-daemon threads joined, atexit handlers
    (multiprocessing, W&B, logging).

    The hooks come first because they stop the worker threads of concurrent.futures pools,
    which otherwise wait for work forever: joining those first hung every engine whose
    torch.compile had built kernels (Inductor compiles them on such a pool, on a cold cache)
    after its last word, for good."""
    import atexit
    import threading

    if threading.current_thread() is threading.main_thread() and \
            hasattr(threading, "_shutdown"):
        threading._shutdown()  # the interpreter's own first step at exit (CPython 3.11-3.13)
    else:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def check_together(world: World, check, *args) -> None:
    """A health check (engine/shared/health.py); under DDP every rank raises when any rank's check
    fails, so that no rank waits alone in the next collective."""
    if not world.enabled:
        check(*args)
        return
    try:
        check(*args)
        failure = None
    except NonFiniteError as e:
        failure = e
    found = world.gather(None if failure is None else (failure.source, failure.weights_finite))
    if failure is not None:
        raise failure
    for rank, item in enumerate(found):
        if item is not None:
            raise NonFiniteError(f"{item[0]} (on rank {rank})", item[1])


class _SequenceModule(torch.nn.Module):
    """The policy as DDP sees it: forward() replays sequences (Policy.forward_sequence, or its
    compiled form). Holding the policy registers its parameters with DDP."""

    def __init__(self, policy: torch.nn.Module, sequence_fn):
        super().__init__()
        self.policy = policy
        self._sequence_fn = sequence_fn

    def forward(self, obs, state, starts):
        return self._sequence_fn(obs, state, starts)


def combine_episode_stats(summaries: list[dict]) -> dict:
    """The ranks' EpisodeLog summaries as one: means weighted by each rank's episode count."""
    if len(summaries) == 1:
        return summaries[0]
    total = sum(int(s.get("episodes", 0)) for s in summaries)
    sums: dict[str, float] = {}
    for summary in summaries:
        n = int(summary.get("episodes", 0))
        for key, value in summary.items():
            if key != "episodes" and n:
                sums[key] = sums.get(key, 0.0) + float(value) * n
    row = {key: value / total for key, value in sums.items()} if total else {}
    row["episodes"] = total
    return row


def mean_losses(world: World, losses: dict) -> dict:
    """Each loss averaged over the ranks (one all_reduce of a small tensor)."""
    if not world.enabled:
        return losses
    import torch.distributed as dist

    keys = sorted(losses)
    values = torch.tensor([float(losses[k]) for k in keys], dtype=torch.float64)
    dist.all_reduce(values, group=world._objects)
    return {k: float(v) / world.size for k, v in zip(keys, values.tolist(), strict=True)}


def reduce_epoch(world: World, local_steps: int, elapsed: float, losses: dict,
                 env_summary: dict) -> tuple[dict, dict, list]:
    """One epoch's numbers over all ranks: (mean losses, combined episode stats,
    [{"rank", "node", "sps"}] per rank, empty for one process). One gather and one all_reduce
    per epoch, on every rank at the same point."""
    if not world.enabled:
        return losses, env_summary, []
    parts = world.gather((local_steps / max(elapsed, 1e-9), env_summary, world.node))
    workers = [{"rank": rank, "node": node, "sps": sps}
               for rank, (sps, _, node) in enumerate(parts)]
    env = combine_episode_stats([part[1] for part in parts])
    return mean_losses(world, losses), env, workers


def rank_event_log(run_dir, world: World):
    """Rank 0's EventLog says everything; another rank's says only its warnings and errors
    (a crash's traceback above all), named by rank, so events.log holds each thing once."""
    if world.is_main:
        return EventLog(run_dir)

    class RankEventLog(EventLog):
        def emit(self, level: str, text: str) -> dict:
            if level == "info":
                return event_record(level, text)
            return super().emit(level, f"rank {world.rank} ({world.node}): {text}")

    return RankEventLog(run_dir)
