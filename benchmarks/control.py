"""`puffer-tui bench control ENV`: how fast the engine obeys pause/resume, and its CPU use
while paused, measured on a real engine process through the socket.

The pause reply is sent by the trainer's thread once it has blocked at a safe point, so the
pause round trip is the time for the pause to take effect (plus one local socket hop).
CPU is the user+system time of the engine and its workers (psutil) over a window.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.benchmarks.output import print_result
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import config_flags
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config_flags import add_arguments as add_config_arguments


def add_arguments(p):
    p.add_argument("env", metavar="ENV", help="environment to train")
    p.add_argument("--rounds", type=int, default=5, help="pause/resume rounds (default 5)")
    p.add_argument("--window", type=float, default=2.0,
                   help="seconds of CPU measurement while paused and while running (default 2)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_config_arguments(p)
    p.set_defaults(accepts_extra=True)


def _cpu_seconds(pids) -> dict[int, float]:
    import psutil

    seconds = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            seconds[pid] = t.user + t.system
        except psutil.NoSuchProcess:
            seconds[pid] = 0.0
    return seconds


def _cpu_percent(pids, window: float) -> dict[int, float]:
    before = _cpu_seconds(pids)
    time.sleep(window)
    after = _cpu_seconds(pids)
    return {pid: 100.0 * (after[pid] - before[pid]) / window for pid in pids}


def measure(run_dir: Path, rounds: int, window: float) -> dict:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.engine_launcher import launch_engine

    handle = launch_engine(run_dir)
    try:
        with EngineClient.connect(run_dir) as client:
            deadline = time.monotonic() + 120
            while client.call("status")["global_step"] == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("the engine did not start training within 120 s")
                time.sleep(0.1)
            pids = [p["pid"] for p in client.call("status")["processes"]]
            running_cpu = _cpu_percent(pids, window)
            pauses, resumes, paused_cpu, steps_after = [], [], [], []
            for i in range(rounds):
                time.sleep(0.3 + 0.1 * i)  # land at different points of the epoch
                start = time.perf_counter()
                client.call("pause")
                pauses.append(time.perf_counter() - start)
                step = client.call("status")["global_step"]
                time.sleep(0.3)  # OpenMP threads spin briefly after their last task
                paused_cpu.append(_cpu_percent(pids, window))
                steps_after.append(client.call("status")["global_step"] - step)
                start = time.perf_counter()
                client.call("resume")
                resumes.append(time.perf_counter() - start)
            client.call("stop", checkpoint=False)
        handle.wait(60)
    finally:
        if handle.poll() is None:
            handle.process.kill()
            handle.wait()
    total_paused = [sum(c.values()) for c in paused_cpu]
    return {
        "processes": len(pids),
        "pause_ms": {"median": 1e3 * statistics.median(pauses), "max": 1e3 * max(pauses)},
        "resume_ms": {"median": 1e3 * statistics.median(resumes), "max": 1e3 * max(resumes)},
        "steps_while_paused": max(steps_after),
        "paused_cpu_percent": {"median": statistics.median(total_paused),
                               "max": max(total_paused)},
        "running_cpu_percent": sum(running_cpu.values()),
    }


def run(args) -> int:
    if args.rounds < 1 or args.window <= 0:
        raise SystemExit("--rounds must be >= 1 and --window > 0")
    try:
        overrides = config_flags.overrides_from_args(args, getattr(args, "extra", []) or [])
        overrides.setdefault("train.total_timesteps", 10**12)
        overrides.setdefault("train.checkpoint_interval", 0)
        config = cfg.load_config(args.env, overrides)
    except cfg.ConfigError as e:
        raise SystemExit(f"puffer-tui bench control: error: {e}") from None
    root = Path(tempfile.mkdtemp(prefix="puffer-bench-"))
    try:
        run_dir = rd.create_run_dir(config.env_name, root)
        cfg.save(config, run_dir / rd.CONFIG_FILE)
        result = measure(run_dir, args.rounds, args.window)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result.update(env=config.env_name, backend=config.vec.backend, num_envs=config.vec.num_envs)
    rows = [(label, f"{result[key]['median']:.1f}", f"{result[key]['max']:.1f}")
            for key, label in (("pause_ms", "pause takes effect (ms)"), ("resume_ms", "resume (ms)"),
                               ("paused_cpu_percent", "CPU while paused (% of a core, all)"))]
    rows += [("CPU while running (% of a core, all)", f"{result['running_cpu_percent']:.0f}", ""),
             ("steps taken while paused", str(result["steps_while_paused"]), "")]
    title = (f"engine control: {result['env']}, {result['num_envs']} envs, "
             f"{result['backend']} backend, {result['processes']} processes")
    return print_result("control", result, args.json, title, ("measure", "median", "max"), rows)
