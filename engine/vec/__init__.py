"""Vectorization: run many envs behind one async API (PufferLib-style).

    vec = make(creator, num_envs=8, backend="serial", seed=0)
    vec.async_reset(seed)
    obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()
    vec.send(actions)

`creator(num_envs=k, seed=s, buf=rows)` builds a PufferEnv holding k envs that writes into
the given buffer rows (see puffer_tui.envs.creator and puffer_tui.envs.from_gymnasium).

  factory.py      `make`: a backend by name (start here)
  serial.py       every env in the caller's process
  async_block.py  the serial backend's async pool of ale-py vector envs (batch < num_envs)
  mp/             the multiprocessing backend (worker processes, shared memory)
  ray/            the Ray backend (actors, on one machine or a cluster)
  pool_base.py    what the two worker pools share: sizes, batch bookkeeping, the async API
  vec_api.py      what every backend shares: batched spaces, the sync API, closing
  saved_state.py  a vec env's state for exact resume: its envs' state and the pending step
  sizing.py       how num_envs, num_workers and batch_size fit together; the usable cores
  errors.py       WorkerError, WorkerHung
"""

from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.factory import BACKENDS, make
from puffer_tui.engine.vec.serial import Serial

__all__ = ["BACKENDS", "Serial", "WorkerError", "make"]
