"""Connecting to Ray for the `ray` vec backend, and letting go of it again.

`vec.ray_address` names a cluster (`host:port`); empty means the one in RAY_ADDRESS or one
already running on this machine (as `ray.init(address="auto")` finds it), else a local Ray
started here. A Ray we started is shut down when the last vec env using it closes; a cluster
we only joined is left running (only our actors are killed).

A Ray started here serves this machine only: every one of its servers binds to loopback (by
default Ray binds all interfaces, and any task a client submits runs as you), with Ray's token
authentication on and its token file readable by you alone. Joining a real cluster is
`vec.ray_address` (docs/many-machines.md says how to secure one, after Ray's own guidance).

Tested in: tests/engine/vec/ray/test_session_private.py,
tests/engine/runtime/test_telemetry_workers.py (cluster_usage)"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import socket
import stat
import tempfile
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

from puffer_tui.engine.vec.sizing import available_cores

INSTALL_HINT = 'the ray vec backend needs Ray: pip install "puffer-tui[ray]"'
REACH_TIMEOUT_S = 5.0  # Ray itself retries an unreachable address for minutes

# The Ray connection of this process: whether we started the local Ray, how many vecs use it.
_SESSION = {"started_here": False, "users": 0}


# Ray's own switch, read when ray is imported: off, a node Ray starts takes 127.0.0.1 as its
# address and binds every server (GCS, raylet, workers, agents) there instead of on all
# interfaces. Named for Windows and macOS, where it is off by default; it works on Linux too.
RAY_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY_AUTH_MODE = "RAY_AUTH_MODE"


def will_start_local_ray(address: str) -> bool:
    """Whether acquire(address) will start a Ray of its own: no address given, none in
    RAY_ADDRESS, and no Ray already running on this machine (the file ray.init("auto") reads)."""
    if address or os.environ.get("RAY_ADDRESS"):
        return False
    return not (Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster").exists()


def import_ray(address: str = ""):
    """The `ray` module, or ImportError with the one-line install hint. When a Ray of our own
    will be started, it is made loopback-only with token authentication first (both are read
    when ray is imported or initialised)."""
    if will_start_local_ray(address):
        os.environ.setdefault(RAY_CLUSTER_SWITCH, "0")
        os.environ.setdefault(RAY_AUTH_MODE, "token")
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ImportError(INSTALL_HINT) from None


def acquire(address: str, cpus_needed: float):
    """Connect (or start a local Ray with at least `cpus_needed` CPUs); returns `ray`."""
    ray = import_ray()
    if address:
        check_reachable(address)
    if not ray.is_initialized():
        common = {"include_dashboard": False, "logging_level": logging.WARNING,
                  "log_to_driver": False}
        with _own_signal_handlers():
            if address:
                ray.init(address=address, **common)
            else:
                try:
                    ray.init(address="auto", **common)
                except ConnectionError:  # nothing running: a local Ray of our own
                    cpus = max(available_cores(), int(-(-cpus_needed // 1)))
                    ray.init(num_cpus=cpus, **common)
                    _SESSION["started_here"] = True
                    keep_token_private()
                    for text in local_ray_warnings():
                        warnings.warn(text, RuntimeWarning, stacklevel=3)
    _SESSION["users"] += 1
    return ray


@contextmanager
def _own_signal_handlers():
    """Keep the caller's SIGINT/SIGTERM handlers: ray.init replaces SIGTERM's with a
    sys.exit, which would kill the engine mid-epoch instead of checkpointing and stopping."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def local_ray_warnings() -> list[str]:
    """What weakens a Ray we start: the user turned Ray's guards off in the environment."""
    warnings = []
    if os.environ.get(RAY_CLUSTER_SWITCH, "0") != "0":
        warnings.append(f"{RAY_CLUSTER_SWITCH}={os.environ[RAY_CLUSTER_SWITCH]} is set: the "
                        f"local Ray listens on every interface, not only 127.0.0.1")
    if os.environ.get(RAY_AUTH_MODE, "token").lower() != "token":
        warnings.append(f"{RAY_AUTH_MODE}={os.environ[RAY_AUTH_MODE]} is set: the local Ray "
                        f"runs tasks from anyone who reaches it (no token)")
    return warnings


def keep_token_private(path: Path | None = None) -> None:
    """Ray writes its token (~/.ray/auth_token) readable by every user; whoever reads it can
    run code as you on the Ray it guards. Ours is ours alone."""
    path = path or Path.home() / ".ray" / "auth_token"
    try:
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            path.chmod(0o600)
    except OSError:  # no token file (an older Ray without token auth): nothing to protect
        pass


def release() -> None:
    """One vec env is done with Ray; shut down a Ray we started once none is left."""
    _SESSION["users"] = max(0, _SESSION["users"] - 1)
    if _SESSION["users"] or not _SESSION["started_here"]:
        return
    _SESSION["started_here"] = False
    try:
        import ray

        ray.shutdown()
    except Exception:  # at interpreter exit Ray may have shut itself down already
        pass


def cluster_cpus(ray) -> float:
    return float(ray.cluster_resources().get("CPU", 0.0))


def cluster_usage(ray) -> dict | None:
    """{"cpus": the cluster's CPUs, "cpus_reserved": those Ray has handed out (to actors and
    tasks, ours and others')}; None when Ray cannot say (shut down, GCS unreachable)."""
    try:
        total = float(ray.cluster_resources().get("CPU", 0.0))
        free = float(ray.available_resources().get("CPU", 0.0))
    except Exception:
        return None
    return {"cpus": total, "cpus_reserved": max(0.0, total - free)}


def check_reachable(address: str) -> None:
    """Refuse at once an address nothing listens on (ValueError naming it and the fix)."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"vec.ray_address {address!r} is not host:port (e.g. 10.0.0.5:6379)")
    try:
        socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        raise ValueError(
            f"cannot reach the Ray cluster at vec.ray_address {address!r} ({exc}): start one "
            f"there with `ray start --head --port={port}`, or leave vec.ray_address empty to "
            "start Ray on this machine") from None
