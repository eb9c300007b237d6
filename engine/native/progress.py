"""A sign of life from inside a long reset or step: `progress()` between units of work.

A vectorizer's worker process answers once per reset or step of its whole block of envs. An
env whose block takes long (16 Python envs, each reset building a world for a second) calls
`progress()` after each env it built, reset or stepped; the worker then tells the main process
that it is slow, not hung (engine/vec/mp/worker.py sets the hook). Outside a worker the hook is
unset and `progress()` costs one global read.

    from puffer_tui.engine.native import progress
    for env in self.envs:
        env.reset()
        progress.progress()

Tested in: tests/engine/vec/mp/test_hang_limit.py"""

from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[], None] | None = None


def progress() -> None:
    """One unit of work done (an env built, reset or stepped)."""
    hook = _hook
    if hook is not None:
        hook()


def set_hook(hook: Callable[[], None] | None) -> Callable[[], None] | None:
    """Install `hook` (None: none); returns the one it replaces."""
    global _hook
    previous, _hook = _hook, hook
    return previous
