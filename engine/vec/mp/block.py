"""What a block of envs does on each command, wherever it runs: in a worker process
(worker.py) or in the caller's own process (InlineBlock, the Multiprocessing backend's
`inline` worker). One place, so both answer alike.

Tested in: tests/engine/vec/mp/test_block_inline.py"""

from __future__ import annotations

from puffer_tui.engine.native.frames import observation_frame


def reset_block(env, buffers, seed) -> list:
    """Reset the block's envs; the step results of the previous episode are cleared."""
    infos = env.reset(seed)[1]
    buffers["rewards"][:] = 0
    buffers["terminals"][:] = False
    buffers["truncations"][:] = False
    return infos


def block_frame(env, index: int, view: str = "env"):
    """Env `index`'s frame, or a text frame saying why it failed: drawing an env for someone
    watching must never take the block, and the training with it, down."""
    try:
        return observation_frame(env, index) if view == "obs" else env.frame(index)
    except Exception as exc:
        return f"frame of env {index} failed: {type(exc).__name__}: {exc}"


class InlineBlock:
    """One worker's block of envs stepped by the caller itself, in its rows of shared memory.

    With as many worker processes as cores, the caller is a third process that wakes on every
    answer, preempts a worker and evicts its caches; stepping one block here instead leaves one
    process per core and no wake-up for that block (the serial backend's cost for that block,
    the other blocks in parallel). The price is the serial backend's too: a crash of an env in
    this block (a segfault in C) takes the caller with it. A hung env is interrupted by the
    Multiprocessing backend's watchdog (inline_watch.py), unless it hangs inside C code."""

    pid = None  # no process of its own

    def __init__(self, env_creator, env_kwargs: dict, buffers: dict, num_envs: int, seed: int):
        self.buffers = buffers
        self.actions = buffers["actions"]
        self.env = env_creator(num_envs=num_envs, seed=seed, buf=buffers, **env_kwargs)

    def step(self) -> list:
        return self.env.step(self.actions)[4]

    def reset(self, seed) -> list:
        return reset_block(self.env, self.buffers, seed)

    def frame(self, index: int, view: str = "env"):
        return block_frame(self.env, index, view)

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()
