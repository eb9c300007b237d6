"""A vec env's saved state: its envs' state and the step result the next recv() returns.

At an epoch boundary the trainer has just sent actions: the envs have stepped (or are
stepping) and the result waits in the buffers. So a vec env's state is the envs' own state
(NativeEnv.get_state: C structs, heap blocks, RNGs, logs) after that step, plus the buffers and
infos of the step, plus whether a result is pending. Restoring it into a vec env built with the
same env, settings and number of envs makes the next recv() return exactly what the saved one
would have, whatever the split of envs across workers.

Plain Python values (bytes, numpy arrays, lists, numbers) only; the trainer converts them for
the checkpoint.

Tested in: tests/engine/vec/test_backends_conformance.py (saved state on every backend),
tests/engine/algo/test_exact_resume.py"""

from __future__ import annotations

import numpy as np

# What recv() hands out; `actions` is rewritten by the next send() and need not be saved.
SAVED_BUFFERS = ("observations", "rewards", "terminals", "truncations", "masks",
                 "final_observations")


def join(parts: list[dict | None]) -> dict | None:
    """One state for all envs from per-worker NativeEnv states (in env order); None if any
    part cannot save its state."""
    if not parts or any(p is None for p in parts):
        return None
    first = parts[0]
    return {"env": first["env"], "settings": first["settings"],
            "num_envs": sum(p["num_envs"] for p in parts),
            "c": b"".join(p["c"] for p in parts),
            "steps_since_log": first["steps_since_log"], "reset_done": first["reset_done"]}


def split(state: dict, counts: list[int]) -> list[dict]:
    """Per-worker states for workers holding `counts` envs each (inverse of join)."""
    total, data = int(state["num_envs"]), state["c"]
    if sum(counts) != total:
        raise ValueError(f"saved env state holds {total} envs, this vec env "
                         f"{sum(counts)}; resume with the same vec.num_envs")
    if len(data) % total:
        raise ValueError(f"saved env state of {len(data)} bytes does not split into {total} "
                         "equal env states")
    size = len(data) // total
    out, start = [], 0
    for n in counts:
        out.append({**state, "num_envs": n, "c": data[start * size:(start + n) * size]})
        start += n
    return out


def check_matches(state: dict, env) -> None:
    """Refuse, before anything changes, a saved state that `env` (a NativeEnv of one or more
    envs of the kind being restored) could not take: other env, settings or state size."""
    own = env.get_state()
    if own is None:
        raise ValueError(f"{env.name} cannot restore a saved state")
    if state["env"] != own["env"] or state["settings"] != own["settings"]:
        raise ValueError(f"saved env state is for {state['env']} with {state['settings']}, "
                         f"this vec env runs {own['env']} with {own['settings']}")
    per_env = len(own["c"]) // own["num_envs"]
    if len(state["c"]) != per_env * int(state["num_envs"]):
        raise ValueError(f"saved env state has {len(state['c'])} bytes for "
                         f"{state['num_envs']} envs, expected {per_env} per env")


def capture(buffers: dict, env_state: dict | None, infos: list, pending: bool) -> dict | None:
    """The vec env's state (None when its envs cannot save theirs)."""
    if env_state is None:
        return None
    return {"envs": env_state, "buffers": {n: np.array(buffers[n]) for n in SAVED_BUFFERS},
            "infos": list(infos), "pending": bool(pending)}


def restore_buffers(buffers: dict, saved: dict) -> None:
    """Copy saved buffer contents back, refusing any whose shape or dtype differ."""
    for name in SAVED_BUFFERS:
        array = np.asarray(saved[name])
        if array.shape != buffers[name].shape or array.dtype != buffers[name].dtype:
            raise ValueError(f"saved buffer {name!r} has shape {array.shape} dtype "
                             f"{array.dtype}, this vec env's {buffers[name].shape} "
                             f"{buffers[name].dtype}")
    for name in SAVED_BUFFERS:
        np.copyto(buffers[name], np.asarray(saved[name]))
