"""What the policy's view costs a training run while a viewer watches it: the real Trainer at an
env's preset, its frames captured at the safe points as the engine does, alternating rounds
with the env's render alone and with the render plus the policy's view (and its saliency).

    python -m puffer_tui.benchmarks.policy_view_cost [--envs squared breakout] [--rounds 3]
        [--seconds 10] [--fps 4 [15]] [--saliency action|value|none] [--json FILE]
    python -m puffer_tui.benchmarks.policy_view_cost --report FILE

Two figures per env, because the second alone is lost in a shared machine's noise:
- the share: CPU seconds spent inside the view's own code (`PolicyWatch.observe`, each step,
  and `PolicyWatch.view`, at the viewer's frame rate, saliency included) over the CPU seconds
  of the epochs it ran in (the trainer's process and its env workers), summed over the rounds
  with a viewer;
- the throughput: agent-steps/s with the render alone and with the view, median of the rounds,
  and their ratio (the two sides alternate, so a busy spell hits both).

`--fps` is the rate the viewer asks for: the dashboard's env panel asks 4 frames a second, the
full-screen render 15 (docs/protocol.md, `render`). Nothing is measured without a viewer of the
policy: then the trainer holds no step_watch (tests/engine/evaluation/test_policy_view.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from puffer_tui.benchmarks.run_record import finish, header, record, typed_command

PROG = "python -m puffer_tui.benchmarks.policy_view_cost"
DEFAULT_ENVS = ("squared", "breakout")


class _Stopwatch:
    """CPU seconds of the calling thread spent inside the PolicyWatch methods wrapped while it
    is installed (CPU, not wall: on a busy machine a wall clock also counts the time the
    thread waited for a core)."""

    def __init__(self):
        self.seconds = {"observe": 0.0, "view": 0.0}
        self.calls = {"observe": 0, "view": 0}
        self._originals = {}

    def install(self, cls) -> None:
        for name in self.seconds:
            original = getattr(cls, name)
            self._originals[name] = original

            def timed(watch, *args, _original=original, _name=name, **kwargs):
                began = time.thread_time()
                try:
                    return _original(watch, *args, **kwargs)
                finally:
                    self.seconds[_name] += time.thread_time() - began
                    self.calls[_name] += 1

            setattr(cls, name, timed)

    def remove(self, cls) -> None:
        for name, original in self._originals.items():
            setattr(cls, name, original)
        self._originals = {}


def _cpu_seconds(processes) -> float:
    """CPU seconds so far of this process (all its threads) and the env workers."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except Exception:  # a worker that exited: its seconds are gone from both sides
            continue
        total += times.user + times.system
    return total


def _epochs(trainer, seconds: float, processes) -> tuple[int, float, float]:
    """Whole epochs until `seconds` have passed: (agent-steps, wall seconds, CPU seconds of
    the trainer's process and its env workers)."""
    start_step, began, cpu = trainer.global_step, time.perf_counter(), _cpu_seconds(processes)
    while time.perf_counter() - began < seconds:
        trainer.run_epoch()
    return (trainer.global_step - start_step, time.perf_counter() - began,
            _cpu_seconds(processes) - cpu)


def measure(env: str, rounds: int, seconds: float, fps: float, saliency: str | None,
            overrides: dict | None = None) -> dict:
    # lazy: torch and the trainer, which --report does not need
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.evaluation.policy_view import PolicyWatch
    from puffer_tui.engine.runtime.frame_source import FrameSource
    from puffer_tui.engine.shared.config import load_config

    config = load_config(env, dict(overrides or {}))
    holder: dict = {}
    frames = FrameSource(lambda e, view="env": holder["trainer"].frame(e, view),
                         lambda: holder["trainer"])
    frames.policy_interval = 1.0 / fps
    trainer = holder["trainer"] = Trainer(
        config, safe_point=lambda between_steps=False: frames.capture() if frames.due() else None)
    stopwatch = _Stopwatch()
    sides = {"render": [], "policy": []}
    watched_seconds = watched_cpu = 0.0
    try:
        import psutil

        processes = [psutil.Process()] + [psutil.Process(p) for p in trainer.worker_pids]
        frames.want(frozenset({0}))
        trainer.run_epoch()  # warm-up: the first epoch's allocations count for neither side
        stopwatch.install(PolicyWatch)
        for _ in range(rounds):
            for side in ("render", "policy"):
                frames.want(frozenset({0}), {0: saliency} if side == "policy" else None)
                steps, wall, cpu = _epochs(trainer, seconds, processes)
                sides[side].append(steps / wall)
                if side == "policy":
                    watched_seconds += wall
                    watched_cpu += cpu
    finally:
        stopwatch.remove(PolicyWatch)
        frames.want(frozenset())
        trainer.close()
    inside = sum(stopwatch.seconds.values())
    render, policy = statistics.median(sides["render"]), statistics.median(sides["policy"])
    return {"env": env, "num_envs": int(config.vec.num_envs), "fps": fps,
            "saliency": saliency, "rounds": rounds, "seconds": seconds,
            "sps_render": render, "sps_policy": policy, "ratio": policy / render,
            "sps_rounds": sides, "watched_seconds": watched_seconds, "watched_cpu": watched_cpu,
            "inside_seconds": dict(stopwatch.seconds), "calls": dict(stopwatch.calls),
            "share": inside / watched_cpu}


def markdown(data: dict) -> str:
    lines = header(data, "policy view cost") + [
        "", "The real Trainer at each env's preset with env 0's render captured; rounds "
        "alternate the render alone and the render with the policy's view. Share: CPU seconds "
        "inside the view's code (observe each step, view at the viewer's rate) over the CPU "
        "seconds of the epochs watched (the trainer's process and its env workers); "
        "agent-steps/s: median of the rounds.", "",
        "| env (envs) | viewer fps, saliency | observe calls (CPU s) | views (CPU s) | share of "
        "training CPU | agent-steps/s, render alone | with the view | ratio |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["results"]:
        secs, calls = r["inside_seconds"], r["calls"]
        lines.append(
            f"| {r['env']} ({r['num_envs']:,}) | {r['fps']:g}, {r['saliency'] or 'none'} | "
            f"{calls['observe']:,} ({secs['observe']:.2f}) | {calls['view']:,} "
            f"({secs['view']:.2f}) | {100 * r['share']:.2f}% | {r['sps_render']:,.0f} | "
            f"{r['sps_policy']:,.0f} | {r['ratio']:.3f} |")
    return "\n".join(lines)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{PROG}: error: --report {path}: {e}") from None
    if not isinstance(data, dict) or "results" not in data:
        raise SystemExit(f"{PROG}: error: --report {path}: not this benchmark's --json "
                         f"output (it has no \"results\")")
    return data


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS), metavar="ENV")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0, help="of training per side a round")
    p.add_argument("--fps", type=float, nargs="+", default=[4.0],
                   help="the viewer's frame rates to measure (dashboard 4, full-screen render 15)")
    p.add_argument("--saliency", choices=("action", "value", "none"), default="action")
    p.add_argument("--json", metavar="FILE", type=Path)
    p.add_argument("--report", metavar="FILE", type=Path)
    args = p.parse_args(argv)
    if args.report:
        print(markdown(_load(args.report)))
        return 0
    if args.rounds < 1 or args.seconds <= 0 or not all(0 < fps <= 15 for fps in args.fps):
        p.error("--rounds must be >= 1, --seconds > 0 and --fps in (0, 15]")
    data = record(typed_command(PROG))
    saliency = None if args.saliency == "none" else args.saliency
    data["results"] = []
    for env in args.envs:
        for fps in args.fps:
            print(f"{env}, {fps:g} fps: {args.rounds} rounds of {args.seconds:g} s a side ...",
                  file=sys.stderr, flush=True)
            data["results"].append(measure(env, args.rounds, args.seconds, fps, saliency))
    finish(data)
    if args.json:
        # lazy: the engine's one whole-or-nothing write, only for --json
        from puffer_tui.engine.shared.atomic_write import write_atomic

        write_atomic(args.json, json.dumps(data, indent=1) + "\n")
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
