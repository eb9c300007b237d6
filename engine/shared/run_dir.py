"""Run directories: `<runs root>/<env>-<YYYYmmdd-HHMMSS>/` and what lives in them.

    root = runs_root(cli_value)            # --runs-dir, else $PUFFER_TUI_RUNS, else ./runs
    run = create_run_dir("squared", root)  # runs/squared-20261122-001401/
    run = find_run("squared-20261122-001401", root)   # a name, a path, or "latest"
    info = run_info(run)                   # env, status (running/finished/stopped/error), steps...

The engine keeps `engine.pid` while it lives and `status.json` (state, pid, global step) up to
date, so other processes can tell a running engine from a finished or crashed one.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from puffer_tui.engine.shared.atomic_write import write_atomic
from puffer_tui.engine.shared.protocol import LIVE_STATES, RunState

RUNS_ENV_VAR = "PUFFER_TUI_RUNS"
DEFAULT_RUNS_ROOT = "runs"

CONFIG_FILE = "config.toml"
METRICS_FILE = "metrics.jsonl"
EVENTS_FILE = "events.log"
CHECKPOINT_DIR = "checkpoints"
SOCKET_FILE = "control.sock"
PID_FILE = "engine.pid"
STATUS_FILE = "status.json"
ENGINE_OUT_FILE = "engine.out"
RUN_DIR_MODE = 0o700  # owner only, like the control socket (0600)


class RunDirError(ValueError):
    """A run directory that does not exist or is not a run; the text names the path."""


def runs_root(cli_value: str | os.PathLike | None = None) -> Path:
    """Where runs live: `--runs-dir`, else $PUFFER_TUI_RUNS, else ./runs."""
    if cli_value:
        return Path(cli_value).expanduser()
    env = os.environ.get(RUNS_ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path(DEFAULT_RUNS_ROOT)


def create_run_dir(env_name: str, root: str | os.PathLike, now: float | None = None) -> Path:
    """A new, empty run directory named after the env and the local time (suffix -2, -3... on a clash)."""
    root = Path(root)
    check_runs_root(root, create=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    # a spec may hold ':' and '/' (gym:ALE/Pong-v5): a file name gets a safe label
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", env_name.replace(":", "-", 1)).strip("_.") or "env"
    base = f"{label}-{stamp}"
    for n in range(1, 1000):
        path = root / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir(mode=RUN_DIR_MODE)
        except FileExistsError:
            continue
        except OSError as e:  # a full disk, a read-only mount
            raise RunDirError(f"cannot create a run in {root}: {e.strerror or e}; "
                              f"{ROOT_ADVICE}") from None
        (path / CHECKPOINT_DIR).mkdir(mode=RUN_DIR_MODE)
        restrict_permissions(path)
        return path.resolve()
    raise RunDirError(f"could not create a run directory for {env_name} in {root}")


ROOT_ADVICE = f"give a folder you can write with --runs-dir D (or ${RUNS_ENV_VAR})"


def check_runs_root(root: Path, create: bool = False) -> None:
    """RunDirError, one line naming it, when `root` cannot hold runs: a file, a folder we may
    not write, or missing under a parent we may not create in. With `create`, a missing root
    is made; without, nothing is written (a command checks before it creates anything)."""
    where = f"the runs folder {root}"
    if os.environ.get(RUNS_ENV_VAR) and Path(os.environ[RUNS_ENV_VAR]).expanduser() == root:
        where += f" (from ${RUNS_ENV_VAR})"
    if root.exists() and not root.is_dir():
        raise RunDirError(f"{where} is a file, not a folder; {ROOT_ADVICE}")
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the folder the missing ones would be made in
    if not existing.is_dir():
        raise RunDirError(f"{where} cannot be made: {existing} is a file; {ROOT_ADVICE}")
    if not os.access(existing, os.W_OK | os.X_OK):
        made = "is not writable by you" if existing == root else \
            f"cannot be made: {existing} is not writable by you"
        raise RunDirError(f"{where} {made}; {ROOT_ADVICE}")
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a read-only mount, a full disk
            raise RunDirError(f"{where} cannot be made ({e.strerror or e}); "
                              f"{ROOT_ADVICE}") from None


def restrict_permissions(run_dir: str | os.PathLike) -> None:
    """Make the run directory (and its checkpoints directory) reachable by the owner only:
    events, metrics and engine output can carry paths and errors others should not read.
    mkdir's mode is masked by the umask, hence the explicit chmod."""
    for path in (Path(run_dir), Path(run_dir) / CHECKPOINT_DIR):
        try:
            if path.is_dir() and path.stat().st_mode & 0o777 != RUN_DIR_MODE:
                os.chmod(path, RUN_DIR_MODE)
        except OSError:
            pass  # not ours to change (a shared runs root): leave it
    try:
        files = [p for p in Path(run_dir).iterdir() if p.is_file() and not p.is_symlink()]
    except OSError:
        return
    for path in files:  # e.g. engine.out, opened by the launcher with the default umask
        try:
            mode = path.stat().st_mode & 0o777
            if mode & 0o077:
                os.chmod(path, mode & 0o700)
        except OSError:
            pass


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG_FILE).is_file()


def list_runs(root: str | os.PathLike) -> list[Path]:
    """Run directories under `root`, oldest first (by the time they were created)."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [p for p in root.iterdir() if is_run_dir(p)]
    # config.toml is written once, when the run is prepared: its mtime is the run's birth
    return sorted(runs, key=lambda p: ((p / CONFIG_FILE).stat().st_mtime, p.name))


def find_run(name: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """A run given as a path, a directory name under the runs root, or "latest"."""
    root = runs_root(root)
    text = str(name)
    if text == "latest":
        runs = list_runs(root)
        if not runs:
            raise RunDirError(f"no runs in {root}")
        return runs[-1].resolve()
    candidates = [Path(text).expanduser(), root / text]
    for path in candidates:
        if is_run_dir(path):
            return path.resolve()
    for path in candidates:
        if path.is_dir():
            raise RunDirError(f"{path} is not a run directory (it has no {CONFIG_FILE})")
    raise RunDirError(f"no run {text!r}: not a directory, and not a run in {root}")


def socket_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / SOCKET_FILE


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON to `path` whole or not at all, so readers never see half a file."""
    write_atomic(path, json.dumps(data))


def read_status(run_dir: str | os.PathLike) -> dict:
    """status.json as written by the engine ({} if there is none or it cannot be read)."""
    try:
        return json.loads((Path(run_dir) / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def engine_alive(status: dict) -> bool:
    """Whether the engine process that wrote `status` still runs (pid and start time match)."""
    pid = status.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        import psutil

        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        started = status.get("pid_create_time")
        return started is None or abs(proc.create_time() - float(started)) < 1.0
    except Exception:
        return False


def run_state(run_dir: str | os.PathLike, status: dict | None = None) -> str:
    """running / paused / starting / stopping (alive), finished / stopped / error, or "new"."""
    status = read_status(run_dir) if status is None else status
    state = status.get("state")
    if state is None:
        return "new"
    if state in LIVE_STATES:
        # A live state with no live process: the engine was killed before it could say so.
        return state if engine_alive(status) else RunState.ERROR
    return state


@dataclass
class RunInfo:
    path: Path
    name: str
    env: str
    state: str
    global_step: int | None
    total_timesteps: int | None
    best_score: float | None
    last_checkpoint: Path | None
    detail: str = ""
    parent: str = ""  # the checkpoint a branched run started from (engine/shared/lineage.py)


def run_info(run_dir: str | os.PathLike) -> RunInfo:
    """A summary of one run for `puffer-tui runs` and the app's launcher."""
    run_dir = Path(run_dir)
    status = read_status(run_dir)
    state = run_state(run_dir, status)
    saved = _read_config(run_dir)
    env = status.get("env") or str(saved.get("env_name", "?"))
    steps, best = _scan_metrics(run_dir / METRICS_FILE)
    if isinstance(status.get("global_step"), int):
        steps = max(steps or 0, status["global_step"])
    checkpoints = sorted((run_dir / CHECKPOINT_DIR).glob("*.pt"))
    detail = status.get("error", "") if state == RunState.ERROR else ""
    if state == RunState.ERROR and not detail and status.get("state") in LIVE_STATES:
        detail = "the engine died without reporting why (killed?)"
    return RunInfo(
        path=run_dir, name=run_dir.name, env=env, state=state, global_step=steps,
        total_timesteps=status.get("total_timesteps"), best_score=best,
        last_checkpoint=checkpoints[-1] if checkpoints else None, detail=detail,
        parent=saved["parent"] if isinstance(saved.get("parent"), str) else "",
    )


def _read_config(run_dir: Path) -> dict:
    """config.toml as plain data ({} when it cannot be read): a cheap read for listings."""
    import tomllib

    try:
        with (run_dir / CONFIG_FILE).open("rb") as f:
            return tomllib.load(f)
    except (OSError, ValueError):
        return {}


def _scan_metrics(path: Path) -> tuple[int | None, float | None]:
    """(last global_step, best score) from metrics.jsonl; a torn last line is skipped."""
    steps, best = None, None
    try:
        with path.open() as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row.get("global_step"), int):
                    steps = row["global_step"]
                score = row.get("score")
                if isinstance(score, (int, float)) and (best is None or score > best):
                    best = float(score)
    except OSError:
        pass
    return steps, best


def unix_address(path: str | os.PathLike) -> tuple[str, int | None]:
    """An AF_UNIX address for `path` and a directory fd to close after bind/connect.

    Socket paths are limited to ~107 bytes; a longer one is reached through the directory's
    /proc/self/fd entry (Linux), so deep run directories still work.
    """
    path = Path(path)
    if len(os.fsencode(str(path))) < 100 or not Path("/proc/self/fd").is_dir():
        return str(path), None
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{path.name}", fd


def socket_answers(path: str | os.PathLike) -> bool:
    """Whether something accepts connections on the AF_UNIX socket at `path` (a live engine
    or sweep driver), as opposed to a stale socket file left by a killed process."""
    import socket

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    address, fd = unix_address(path)
    try:
        probe.connect(address)
        return True
    except OSError:
        return False
    finally:
        probe.close()
        if fd is not None:
            os.close(fd)
