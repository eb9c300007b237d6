"""Measures what the dashboard costs, on a real engine, in a real terminal (tmux).

    python tests/e2e/measure_app.py [--windows 8] [--window-s 15] [--envs 256] [--presses 10]

1. Training SPS with the app attached (`puffer-tui attach` in a 120x40 tmux pane) against the
   same engine with no client at all, in alternating windows so that load from other processes
   on the machine hits both alike. SPS of each epoch comes from the engine's own metrics.jsonl
   rows (steps / training time); the two sets of epochs are compared by median and mean.
2. The app's own CPU use (psutil, percent of one core) while attached.
3. Key-press latency: from `tmux send-keys p` until the pane shows the engine's new state
   (key -> app -> engine -> reply -> redraw), and the app's own request->reply round trip
   as it logs it ("[N ms]" in the event log).
4. How long a frozen engine (SIGSTOP) takes to show as "not responding".
With --launcher N, instead: N times, how long `puffer-tui` takes from the command to a
launcher with its env list and preset form drawn (80x24).
With --paired, instead: two identical engines train side by side and the app attaches to each
in turn, which cancels load from other processes far better than windows taken in sequence.
Not a test: it prints figures; nothing here passes or fails on a timing.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd

SOCKET = f"puffer-measure-{__import__('os').getpid()}"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True).stdout


def screen() -> str:
    return tmux("capture-pane", "-t", "m", "-p")


def wait_screen(text: str, timeout: float = 60.0, poll: float = 0.1, lines: int = 0) -> float:
    """Seconds until `text` shows (in the first `lines` lines of the pane when lines > 0)."""
    start = time.perf_counter()
    while text not in "\n".join(screen().splitlines()[:lines or None]):
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"'{text}' never appeared; screen:\n{screen()}")
        time.sleep(poll)
    return time.perf_counter() - start


def start_app(command: str, run_dir: Path, width: int = 120, height: int = 40) -> psutil.Process:
    tmux("new-session", "-d", "-s", "m", "-x", str(width), "-y", str(height),
         f"{command} attach {run_dir}")
    wait_screen(" running ")
    pane = psutil.Process(int(tmux("display", "-p", "-t", "m", "#{pane_pid}").strip()))
    return pane  # the pane runs the app directly (no shell in between)


def stop_app() -> None:
    tmux("kill-server")  # kills the app; the engine must not care
    time.sleep(0.5)  # let the server go before the next one starts on the same socket


class MetricsTail:
    """New metrics.jsonl rows as they appear, each stamped with the wall time it was seen."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def poll(self) -> list[dict]:
        try:
            with self.path.open() as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        complete = data[:data.rfind("\n") + 1]
        self.offset += len(complete.encode())
        return [json.loads(line) for line in complete.splitlines() if line.strip()]


def window_sps(tail: MetricsTail, seconds: float) -> list[float]:
    """SPS of each epoch that started and finished within the next `seconds`."""
    tail.poll()  # rows from before the window do not count
    epochs, deadline = [], time.monotonic() + seconds
    previous = None
    while time.monotonic() < deadline:
        for row in tail.poll():
            if previous is not None and row["uptime"] > previous["uptime"]:
                epochs.append((row["global_step"] - previous["global_step"])
                              / (row["uptime"] - previous["uptime"]))
            previous = row
        time.sleep(0.1)
    return epochs


def window_steps(tails: list[MetricsTail], seconds: float) -> list[tuple[int, float]]:
    """(steps, training seconds) per engine over the epochs finished within `seconds`."""
    for tail in tails:
        tail.poll()
    last = [None] * len(tails)
    totals = [[0, 0.0] for _ in tails]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for i, tail in enumerate(tails):
            for row in tail.poll():
                if last[i] is not None and row["uptime"] > last[i]["uptime"]:
                    totals[i][0] += row["global_step"] - last[i]["global_step"]
                    totals[i][1] += row["uptime"] - last[i]["uptime"]
                last[i] = row
        time.sleep(0.1)
    return [tuple(t) for t in totals]


def paired(command: str, runs: list[Path], windows: int, seconds: float) -> None:
    """Two identical engines train side by side, so every moment of load from elsewhere hits
    both; the app is attached to one of them, alternately. Per window, the SPS ratio of the
    engine with the app to the one without; the geometric mean of the ratios is the cost."""
    import math

    tails = [MetricsTail(r / rd.METRICS_FILE) for r in runs]
    while not all(t.poll() for t in tails):
        time.sleep(0.5)
    window_steps(tails, 5.0)
    logs = []
    for i in range(windows):
        with_app = i % 2
        start_app(command, runs[with_app])
        time.sleep(3.0)
        totals = window_steps(tails, seconds)
        stop_app()
        sps = [steps / secs if secs else float("nan") for steps, secs in totals]
        ratio = sps[with_app] / sps[1 - with_app]
        if math.isfinite(ratio) and ratio > 0:
            logs.append(math.log(ratio))
        print(f"window {i}: engine {with_app} has the app: {sps[with_app]:8.0f} SPS vs "
              f"{sps[1 - with_app]:8.0f} SPS without -> ratio {ratio:.3f}", flush=True)
    if logs:
        ratio = math.exp(statistics.mean(logs))
        print(f"paired: SPS with the app / without = {ratio:.3f} over {len(logs)} windows "
              f"-> the app costs {100 * (1 - ratio):+.1f}% of SPS")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--window-s", type=float, default=15.0)
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--presses", type=int, default=10)
    parser.add_argument("--launcher", type=int, default=0, metavar="N",
                        help="only time the launcher's start, N times")
    parser.add_argument("--paired", action="store_true",
                        help="two engines side by side, the app on each in turn (see paired())")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is required")
        return 2
    command = f"{sys.executable} -m puffer_tui.app.cli"
    if args.launcher:
        return time_launcher(command, args.launcher)
    work = Path(tempfile.mkdtemp())
    config = cfg.load_config("squared", {"vec.num_envs": args.envs, "train.checkpoint_interval": 0,
                                         "train.total_timesteps": 10**12})
    run_dir = rd.create_run_dir("squared", work)
    cfg.save(config, run_dir / rd.CONFIG_FILE)
    if args.paired:
        return run_paired(command, work, config, args)
    handle = launch_engine(run_dir)
    tail = MetricsTail(run_dir / rd.METRICS_FILE)
    results = {"headless": [], "app": [], "app_cpu": []}
    try:
        while not tail.poll():  # the socket opens before the trainer is built: wait for it
            time.sleep(0.5)
        window_sps(tail, 5.0)  # warm up (first epochs are slower)
        for i in range(args.windows):
            for mode in (("headless", "app") if i % 2 == 0 else ("app", "headless")):
                if mode == "app":
                    app = start_app(command, run_dir)
                    time.sleep(3.0)  # past the app's start-up
                    app.cpu_percent(None)
                epochs = window_sps(tail, args.window_s)
                results[mode] += epochs
                mean = statistics.mean(epochs) if epochs else float("nan")
                line = f"window {i} {mode:<8} {mean:10.0f} SPS over {len(epochs)} epochs"
                if mode == "app":
                    cpu = app.cpu_percent(None)
                    results["app_cpu"].append(cpu)
                    stop_app()
                    line += f"   app CPU {cpu:5.1f}% of one core"
                print(line, flush=True)
        latency_keys, latency_app = measure_latency(command, run_dir, args.presses)
        silence = measure_silence(command, run_dir)
    finally:
        stop_app()
        try:
            with EngineClient.connect(run_dir) as client:
                client.request("stop", checkpoint=False)
            handle.wait(60)
        except Exception:
            handle.process.kill()
        shutil.rmtree(work, ignore_errors=True)
    for name, pick in (("median", statistics.median), ("mean", statistics.mean)) * bool(
            results["app"] and results["headless"]):
        headless, app = pick(results["headless"]), pick(results["app"])
        print(f"{name} epoch SPS: no client {headless:.0f} ({len(results['headless'])} epochs), "
              f"app attached {app:.0f} ({len(results['app'])} epochs) "
              f"-> the app costs {100 * (headless - app) / headless:+.1f}% of SPS")
    if results["app_cpu"]:
        print(f"app CPU while attached: mean {statistics.mean(results['app_cpu']):.1f}% of one core")
    print(f"key -> new state on screen: median {statistics.median(latency_keys):.0f} ms, "
          f"max {max(latency_keys):.0f} ms over {len(latency_keys)} presses")
    print(f"engine frozen -> 'not responding' shown: {', '.join(f'{x:.2f}' for x in silence)} s")
    if latency_app:
        print(f"app request -> engine reply: median {statistics.median(latency_app):.0f} ms, "
              f"max {max(latency_app):.0f} ms")
    return 0


def run_paired(command: str, work: Path, config, args) -> int:
    runs, handles = [], []
    try:
        for _ in range(2):
            run_dir = rd.create_run_dir("squared", work)
            cfg.save(config, run_dir / rd.CONFIG_FILE)
            runs.append(run_dir)
            handles.append(launch_engine(run_dir))
        paired(command, runs, args.windows, args.window_s)
    finally:
        stop_app()
        for run_dir, handle in zip(runs, handles):
            try:
                with EngineClient.connect(run_dir) as client:
                    client.request("stop", checkpoint=False)
                handle.wait(60)
            except Exception:
                handle.process.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def time_launcher(command: str, times: int) -> int:
    """Seconds from starting `puffer-tui` to the launcher drawn: the env list and the first
    env's preset form (its "[env]" section) on screen."""
    work = Path(tempfile.mkdtemp())
    seconds = []
    try:
        for _ in range(times):
            start = time.perf_counter()
            tmux("new-session", "-d", "-s", "m", "-x", "80", "-y", "24", "-c", str(work),
                 f"env PUFFER_TUI_RUNS={work}/runs {command}")
            wait_screen("[env]", timeout=60, poll=0.01)
            wait_screen("breakout", timeout=60, poll=0.01)
            seconds.append(time.perf_counter() - start)
            stop_app()
    finally:
        stop_app()
        shutil.rmtree(work, ignore_errors=True)
    print(f"launcher drawn: median {statistics.median(seconds):.2f} s over {times} starts "
          f"({', '.join(f'{x:.2f}' for x in seconds)})")
    return 0


def measure_latency(command: str, run_dir: Path, presses: int) -> tuple[list, list]:
    # A wide pane so the event log's "[N ms]" notes stay on one line each.
    start_app(command, run_dir, width=220, height=50)
    time.sleep(2.0)
    keys = []
    for i in range(presses):
        target = " paused " if i % 2 == 0 else " running "
        tmux("send-keys", "-t", "m", "p")
        # the header (first line) only: the event log below also says "paused"
        keys.append(1000 * wait_screen(target, timeout=10, poll=0.005, lines=1))
        time.sleep(0.3 + 0.4 * random.random())  # not in step with the app's redraw timers
    found = re.findall(r"(?:pause|resume): engine is \w+ \[(\d+) ms\]", screen())
    stop_app()
    return keys, [float(x) for x in found]


def measure_silence(command: str, run_dir: Path, times: int = 3) -> list[float]:
    """Seconds from freezing the engine (SIGSTOP) until the header says "not responding"."""
    import os
    import signal

    pid = rd.read_status(run_dir)["pid"]
    start_app(command, run_dir)
    time.sleep(2.0)
    seconds = []
    for _ in range(times):
        os.kill(pid, signal.SIGSTOP)
        try:
            seconds.append(wait_screen("not responding", timeout=10, poll=0.01, lines=1))
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_screen(" running ", timeout=10, lines=1)
        time.sleep(1.0)
    stop_app()
    return seconds


if __name__ == "__main__":
    sys.exit(main())
