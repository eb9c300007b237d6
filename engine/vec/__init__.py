"""Vectorization: run many envs behind one async API (PufferLib-style).

    vec = make(creator, num_envs=8, backend="serial", seed=0)
    vec.async_reset(seed)
    obs, rewards, terminals, truncations, infos, env_ids, masks = vec.recv()
    vec.send(actions)

`creator(num_envs=k, seed=s, buf=rows)` builds a PufferEnv holding k envs that writes into
the given buffer rows (see puffer_tui.envs.creator and puffer_tui.envs.from_gymnasium).
"""

from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.factory import BACKENDS, make
from puffer_tui.engine.vec.serial import Serial

__all__ = ["BACKENDS", "Serial", "WorkerError", "make"]
