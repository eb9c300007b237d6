"""`make`: choose a backend by name.

Tested in: tests/engine/vec/test_serial.py (the factory's checks),
tests/engine/vec/test_backends_conformance.py"""

from __future__ import annotations

from puffer_tui.engine.vec.serial import Serial

BACKENDS = ("serial", "multiprocessing", "ray")


def make(
    env_creator,
    num_envs: int = 1,
    backend: str = "serial",
    num_workers: int | None = None,
    batch_size: int | None = None,
    zero_copy: bool = True,
    seed: int = 0,
    **kwargs,
):
    """A vectorized env of `num_envs` envs built by `env_creator` on the chosen backend."""
    if backend == "serial":
        if batch_size not in (None, num_envs) and getattr(env_creator, "async_batches", False):
            # cycle: importing engine.vec.async_block loads this module
            from puffer_tui.engine.vec.async_block import AsyncBlockPool  # (ALE games)

            return AsyncBlockPool(env_creator, num_envs=num_envs, batch_size=batch_size,
                                  seed=seed, **kwargs)
        if batch_size not in (None, num_envs):
            raise ValueError(
                f"the serial backend steps all envs at once: batch_size must equal num_envs "
                f"({num_envs}), got {batch_size}"
            )
        return Serial(env_creator, num_envs=num_envs, seed=seed, **kwargs)
    if backend == "multiprocessing":
        # cycle: importing engine.vec.mp.mp_backend loads this module
        from puffer_tui.engine.vec.mp.mp_backend import Multiprocessing as Pool
    elif backend == "ray":  # Ray is an optional extra: imported only when chosen
        # cycle: importing engine.vec.ray.ray_backend loads this module
        from puffer_tui.engine.vec.ray.ray_backend import RayVec as Pool
    else:
        raise ValueError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")
    # the two worker pools take the same arguments
    return Pool(env_creator, num_envs=num_envs, num_workers=num_workers, batch_size=batch_size,
                zero_copy=zero_copy, seed=seed, **kwargs)
