"""One training run of either side of `puffer-tui bench learn`, each in its own processes.

Ours runs exactly as a user would: `puffer-tui train SPEC --headless --train.total-timesteps N
--train.seed S` (the env's own preset and family defaults, nothing else), then `puffer-tui eval
RUN --num-envs 1 --episodes K --seed S' --json` (with --deterministic where the env's row says
so). SB3 runs `python -m puffer_tui.benchmarks.learn_sb3 train|eval`. Each process is timed
from start to exit (wall) and its CPU seconds are those of its whole process tree that it
waited for (os.wait4: the engine and its env workers count for ours). A process that outlives
its wall-time guard is killed with its engine, and the run is reported as failed.

Tested in: tests/benchmarks/test_bench_learn.py (the process guard, a run killed at its time limit)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from puffer_tui.benchmarks.learn_zoo_settings import BenchEnv

EVAL_SEED_OFFSET = 1000  # eval envs are seeded apart from the training envs


def repo_commit() -> str:
    """The commit the runs use, '+dirty' when engine/ or envs/ differ from it (what ours
    trains with); 'unknown' outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "engine", "envs"], capture_output=True, text=True,
                               timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty and head else "")


def _set_subreaper(on: bool) -> bool:
    """Linux: orphaned descendants (a forkserver whose engine exited first, and the env
    workers it reaped) are reparented to this process instead of init, so their CPU time is
    still counted here. False where the call does not exist."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_SET_CHILD_SUBREAPER = 36


def run_guarded(command: list[str], timeout: float, log: Path, on_kill=None) -> dict:
    """Run `command` in its own session, output to `log`; {rc, wall_s, cpu_s, timed_out}.
    cpu_s is the user + system time of every process it started, however deep (this process
    is their subreaper while it runs and reaps them; runs go one at a time). Past `timeout`
    seconds (or on Ctrl-C) its process group is killed, and `on_kill()` stops what it started
    in sessions of their own (our engine)."""
    import resource

    import psutil

    # children this process had already (a multiprocessing forkserver, a resource tracker)
    # are not the run's orphans: never kill or reap those
    ours = {child.pid for child in psutil.Process().children()}
    reaper = _set_subreaper(True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    timed_out = False
    status = None
    try:
        while status is None:
            pid, code, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                status = code
            _reap_orphans(process.pid, ours)
            if status is None and not timed_out and time.monotonic() - start > timeout:
                timed_out = True
                _stop(process.pid, on_kill)
            if status is None:
                time.sleep(0.2)
        wall = time.monotonic() - start
        _finish_orphans(process.pid, ours)
    except BaseException:
        _stop(process.pid, on_kill)
        process.wait()
        raise
    finally:
        if reaper:
            _set_subreaper(False)
    process.returncode = os.waitstatus_to_exitcode(status)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rc": process.returncode, "wall_s": wall, "cpu_s": cpu, "timed_out": timed_out,
            "cpu_counts_orphans": reaper}


def _reap_orphans(main_pid: int, keep: set[int]) -> None:
    """Reap descendants reparented to us (never the main process: wait4 on it does that,
    nor the children in `keep`, which were ours before the run)."""
    import psutil

    for child in psutil.Process().children():
        if child.pid != main_pid and child.pid not in keep \
                and child.status() == psutil.STATUS_ZOMBIE:
            try:
                os.waitpid(child.pid, 0)
            except ChildProcessError:
                pass


def _finish_orphans(main_pid: int, keep: set[int], grace: float = 15.0) -> None:
    """After the main process: orphans still alive get `grace` seconds to exit (a forkserver
    sees its engine gone), then are killed; all are reaped so their CPU counts. Children in
    `keep` were this process's own before the run (a test process's forkserver)."""
    import psutil

    deadline = time.monotonic() + grace
    while True:
        left = [c for c in psutil.Process().children()
                if c.pid != main_pid and c.pid not in keep]
        for child in left:
            try:
                if child.status() == psutil.STATUS_ZOMBIE or time.monotonic() > deadline:
                    if child.status() != psutil.STATUS_ZOMBIE:
                        child.kill()
                    os.waitpid(child.pid, 0)
            except (psutil.NoSuchProcess, ChildProcessError):
                pass
        if not left:
            return
        time.sleep(0.2)


def _stop(pgid: int, on_kill) -> None:
    if on_kill is not None:
        on_kill()
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return
            time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs. Not `killpg(pgid, 0)`: that succeeds on a
    zombie, and the run's main process is one until run_guarded reaps it (so every timed-out
    run waited out the whole SIGTERM grace)."""
    import psutil

    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == pgid and \
                    process.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, PermissionError):
            continue
    return False


def _kill_engines(runs_dir: Path):
    """Our engine runs in a session of its own (so Ctrl-C in a terminal cannot reach it):
    stop it and its workers by the pid in each run's status.json."""
    def kill() -> None:
        for status in runs_dir.glob("*/status.json"):
            try:
                pid = int(json.loads(status.read_text()).get("pid") or 0)
            except (OSError, ValueError):
                continue
            if pid > 0:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        break
                    time.sleep(5.0)
    return kill


def tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "puffer_tui.app.cli", *map(str, args)]


def read_metrics(run_dir: Path) -> tuple[list, dict | None]:
    """Chunks [step, mean return, episodes] per epoch from metrics.jsonl, and its last row."""
    chunks, last = [], None
    path = run_dir / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.exists() else ():
        row = json.loads(line)
        if "global_step" not in row:
            continue
        last = row
        n = int(row.get("episodes") or 0)
        chunks.append([int(row["global_step"]), row.get("episode_return") if n else None, n])
    return chunks, last


def run_ours(env: BenchEnv, seed: int, steps: int, work: Path, timeout: float,
             flags: tuple[str, ...] = ()) -> dict:
    """`flags`: more train flags after the env's (a variant of the defaults to compare)."""
    runs_dir = work / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    log = work / "train.log"
    command = _cli("train", env.ours, "--headless", "--runs-dir", runs_dir,
                   "--train.total-timesteps", steps, "--train.seed", seed, *flags)
    result = {"side": "ours", "seed": seed, "commit": repo_commit(),
              "command": " ".join(command[3:])}
    timing = run_guarded(command, timeout, log, _kill_engines(runs_dir))
    result.update(timing)
    run_dirs = sorted(p for p in runs_dir.iterdir() if (p / "config.toml").exists())
    if timing["rc"] != 0 or not run_dirs:
        why = "timed out" if timing["timed_out"] else f"exit status {timing['rc']}"
        result["error"] = f"`puffer-tui {result['command']}`: {why}\n{tail(log)}"
        result["chunks"] = read_metrics(run_dirs[-1])[0] if run_dirs else []
        return result
    run_dir = run_dirs[-1]
    chunks, last = read_metrics(run_dir)
    result["config_toml"] = (run_dir / "config.toml").read_text()
    result["chunks"] = chunks
    result["steps"] = int(last["global_step"]) if last else 0
    result["train_s"] = float(last["uptime"]) if last else None
    result["sps"] = result["steps"] / result["train_s"] if result["train_s"] else None
    if env.eval_episodes:
        result["eval"] = _eval_ours(env, seed, run_dir, work, timeout)
    return result


def _eval_ours(env: BenchEnv, seed: int, run_dir: Path, work: Path, timeout: float) -> dict:
    log = work / "eval.log"
    flags = ["--deterministic"] if env.eval_deterministic else []
    command = _cli("eval", run_dir, "--episodes", env.eval_episodes, "--num-envs", 1,
                   "--seed", seed + EVAL_SEED_OFFSET, "--json", *flags)
    with log.open("wb"):
        pass
    timing = run_guarded(command, timeout, log)
    text = log.read_text(errors="replace")
    out = {"wall_s": timing["wall_s"], "cpu_s": timing["cpu_s"]}
    try:  # the JSON is the last thing printed; the log may hold warnings before it
        out.update(json.loads(text[text.index("{"):]))
    except ValueError:
        out["error"] = f"`puffer-tui {' '.join(command[3:])}`: exit status {timing['rc']}\n" \
                       f"{text[-1500:]}"
    return out


def ours_torch_threads(env: BenchEnv) -> int:
    """The torch threads ours trains `env` with by default: its preset's train.torch_threads
    (0: automatic, the cores other processes leave free). SB3 gets as many unless told
    (`--sb3-threads`): the same cores for both sides' learners. SB3 left at torch's default (a
    thread per core) spins them on the small MLPs: more CPU for the same wall time."""
    # lazy: pulls gymnasium to read the env's spaces, which this module does not load
    from puffer_tui.engine.shared.config import load_config

    return int(load_config(env.ours).train.torch_threads)


def ours_device(env: BenchEnv) -> str:
    """The device ours trains `env` on by default: its preset's train.device, "auto" decided
    as the trainer decides it (CUDA where torch sees one). SB3 learns on the same one: the
    small-MLP presets say "cpu", Atari's CNN takes the GPU where there is one."""
    # lazy: pulls gymnasium and torch, which this module does not load
    from puffer_tui.engine.algo.trainer_setup import resolve_device
    from puffer_tui.engine.shared.config import load_config

    return resolve_device(load_config(env.ours).train.device).type


def run_sb3(env: BenchEnv, seed: int, steps: int, work: Path, timeout: float,
            threads: int, device: str = "cpu") -> dict:
    work.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "puffer_tui.benchmarks.learn_sb3"]
    command = [*base, "train", env.name, "--seed", str(seed), "--steps", str(steps),
               "--threads", str(threads), "--device", device, "--out", str(work)]
    result = {"side": "sb3", "seed": seed, "command": " ".join(command[2:])}
    timing = run_guarded(command, timeout, work / "train.log")
    result.update(timing)
    path = work / "result.json"
    if timing["rc"] != 0 or not path.exists():
        why = "timed out" if timing["timed_out"] else f"exit status {timing['rc']}"
        result.update(chunks=[], error=f"{result['command']}: {why}\n{tail(work / 'train.log')}")
        progress = work / "progress.json"
        if progress.exists():  # the curve up to the kill, as ours keeps its metrics
            result["chunks"] = json.loads(progress.read_text())["chunks"]
        return result
    result.update(json.loads(path.read_text()))
    result["sps"] = result["steps"] / result["train_s"] if result["train_s"] else None
    if env.eval_episodes:
        command = [*base, "eval", env.name, "--seed", str(seed + EVAL_SEED_OFFSET),
                   "--episodes", str(env.eval_episodes), "--out", str(work)]
        timing = run_guarded(command, timeout, work / "eval.log")
        out = {"wall_s": timing["wall_s"], "cpu_s": timing["cpu_s"]}
        if timing["rc"] == 0 and (work / "eval.json").exists():
            out.update(json.loads((work / "eval.json").read_text()))
        else:
            out["error"] = f"exit status {timing['rc']}\n{tail(work / 'eval.log')}"
        result["eval"] = out
    return result
