"""Ending the Ray backend's actors, and turning Ray's errors into WorkerErrors.

Tested in: tests/engine/vec/ray/test_ray_backend.py"""

from __future__ import annotations

import re

from puffer_tui.engine.vec.errors import WorkerError
from puffer_tui.engine.vec.ray import session as ray_session

CLOSE_GRACE_S = 1.0  # actors get this long to close their envs before they are killed
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its error texts for terminals


def shutdown_actors(actors: list, driver_env, connected: list) -> None:
    """Close and kill every actor, then let go of Ray if `connected[0]` says this vec took
    hold of it; safe from any state (weakref.finalize)."""
    try:
        import ray

        if actors and ray.is_initialized():
            closing = []
            for actor in actors:
                try:
                    closing.append(actor.close.remote())
                except Exception:
                    pass
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_GRACE_S)
            for actor in actors:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:
                    pass
    except Exception:
        pass
    finally:
        actors.clear()
        driver_env.close()
        if connected[0]:
            connected[0] = False
            ray_session.release()


def worker_error(ray, w: int, exc) -> WorkerError:
    """The WorkerError of actor `w` for a Ray error `exc` (its remote traceback, if any)."""
    errors = ray.exceptions
    text = _ANSI.sub("", str(exc)).strip()
    if isinstance(exc, errors.RayTaskError):
        cause = getattr(exc, "cause", None)
        message = f"{type(cause).__name__}: {cause}" if cause is not None else \
            text.splitlines()[0]
        return WorkerError(w, message, _ANSI.sub("", getattr(exc, "traceback_str", "")) or text)
    if isinstance(exc, errors.RayActorError):
        return WorkerError(w, f"Ray actor died or was lost ({type(exc).__name__}): "
                           f"{text.splitlines()[0] if text else ''}", text)
    return WorkerError(w, f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}",
                       text)
