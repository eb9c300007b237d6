"""`puffer-tui bench learn [ENV ...]`: how well ours learns against Stable-Baselines3 + rl-zoo.

For each env: ours as a user runs it (`puffer-tui train gym:ID --headless` with only the budget
and the seed given: the env family's defaults) and SB3's PPO with rl-baselines3-zoo's tuned
settings for that env (benchmarks/learn_zoo_settings.py, translated in learn_sb3.py), the same
agent steps, on this machine, seeds alternating sides (ours s0, SB3 s0, ours s1, ...), each
run in processes of its own (benchmarks/learn_runs.py).

What is compared, the same way for both sides (benchmarks/learn_report.py):
- the training return at 25/50/100% of the budget: the mean over the newest whole epochs (ours)
  or rollouts (SB3) ending by that step that hold at least --window episodes;
- the final policy's return on one fresh env, --eval-episodes in sequence (deterministic
  actions, except MiniGrid where the zoo itself samples);
- wall time and CPU seconds of the training process tree (start-up included), and agent
  steps per second of the training loop.
Medians over seeds with their min..max; returns as ours - SB3, times and rates as ours / SB3.

Tested in: tests/benchmarks/test_bench_learn.py
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from puffer_tui.benchmarks import learn_report as report
from puffer_tui.benchmarks.learn_zoo_settings import ENVS, ZOO_PPO, ZOO_SOURCE, default_steps
from puffer_tui.benchmarks.machine import cpu_model, torch_cpu_capability

SIDES = ("both", "ours", "sb3")


def add_arguments(p):
    p.add_argument("envs", metavar="ENV", nargs="*",
                   help=f"envs to compare (default: all): {', '.join(ENVS)}")
    p.add_argument("--seeds", type=int, default=3, help="seeds per side (default 3)")
    p.add_argument("--first-seed", type=int, default=0,
                   help="seeds are FIRST..FIRST+SEEDS-1 (default 0)")
    p.add_argument("--steps", type=float, default=None,
                   help="agent steps per run (default: the zoo's n_timesteps for each env)")
    p.add_argument("--side", choices=SIDES, default="both",
                   help="run only one side (ours: e.g. again on a newer commit, with "
                        "--peer-json for the SB3 runs measured before)")
    p.add_argument("--peer-json", metavar="FILE", type=Path, action="append",
                   help="with --side ours: take SB3's runs from this earlier --json output "
                        "(same env and steps; may be given more than once)")
    p.add_argument("--json", metavar="FILE", type=Path, help="write every raw figure here")
    p.add_argument("--report", metavar="FILE[:SIDE][@ENV,...]", type=_report_source,
                   action="append",
                   help="run nothing: the table of the runs in these earlier --json outputs, "
                        "merged env by env (same steps; a run found in two files counts "
                        "once); FILE:ours or FILE:sb3 takes only that side's runs from FILE, "
                        "FILE@ENV,ENV only those envs'; may be given more than once")
    p.add_argument("--eval-episodes", type=int, default=None, metavar="K",
                   help="episodes of the final-policy evaluation (default 10; Pong: none; "
                        "0: no evaluation)")
    p.add_argument("--window", type=int, default=report.WINDOW,
                   help=f"episodes a training return is averaged over (default {report.WINDOW})")
    p.add_argument("--run-timeout", type=float, default=None, metavar="S",
                   help="wall seconds one run may take before it is killed (default 600 s + "
                        "5 ms per step)")
    p.add_argument("--sb3-threads", type=int, default=0,
                   help="SB3's torch threads (default 0: as many as ours trains the env with, "
                        "its preset's train.torch_threads; where that is automatic, the cores "
                        "other processes leave free)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="keep the runs (ours' run dirs, SB3's models) here (default: a "
                        "temporary directory, removed at the end)")


@dataclasses.dataclass(frozen=True)
class ReportSource:
    """One --report: an earlier --json output, and which of its runs to take."""

    path: Path
    side: str | None = None  # "ours" / "sb3": that side's runs only
    envs: tuple[str, ...] | None = None  # these envs' runs only

    def __str__(self) -> str:
        return (f"{self.path}{f':{self.side}' if self.side else ''}"
                f"{'@' + ','.join(self.envs) if self.envs else ''}")


def _report_source(text: str) -> ReportSource:
    """FILE, FILE:ours / FILE:sb3, each optionally followed by @ENV[,ENV...]."""
    head, at, names = text.rpartition("@")
    envs = None
    if at and head and names:
        envs = tuple(n for n in names.split(",") if n)  # checked in _check
        text = head
    path, _, side = text.rpartition(":")
    if path and side in ("ours", "sb3"):
        return ReportSource(Path(path), side, envs)
    return ReportSource(Path(text), None, envs)


def _check(args) -> list:
    """Every refusal before anything runs: one line each (SystemExit(str) -> exit 2)."""
    unknown = [e for e in args.envs if e not in ENVS]
    if unknown:
        raise SystemExit(f"puffer-tui bench learn: error: unknown env {unknown[0]!r}; choose "
                         f"from {', '.join(ENVS)}")
    if args.seeds < 1:
        raise SystemExit(f"puffer-tui bench learn: error: --seeds must be >= 1, got "
                         f"{args.seeds}")
    if args.steps is not None and not (args.steps >= 1 and float(args.steps).is_integer()):
        raise SystemExit(f"puffer-tui bench learn: error: --steps must be a whole number "
                         f">= 1, got {args.steps:g}")
    if args.window < 1:
        raise SystemExit(f"puffer-tui bench learn: error: --window must be >= 1, got "
                         f"{args.window}")
    if args.eval_episodes is not None and args.eval_episodes < 0:
        raise SystemExit(f"puffer-tui bench learn: error: --eval-episodes must be >= 0, got "
                         f"{args.eval_episodes}")
    if args.run_timeout is not None and not args.run_timeout > 0:
        raise SystemExit("puffer-tui bench learn: error: --run-timeout must be > 0")
    if args.peer_json is not None and args.side != "ours":
        raise SystemExit("puffer-tui bench learn: error: --peer-json goes with --side ours")
    for source in args.report or ():
        unknown = [e for e in source.envs or () if e not in ENVS]
        if unknown and ":" in unknown[0]:
            raise SystemExit(f"puffer-tui bench learn: error: --report {source}: the side goes "
                             f"before the envs: FILE:SIDE@ENV,ENV")
        if unknown:
            raise SystemExit(f"puffer-tui bench learn: error: --report {source}: unknown env "
                             f"{unknown[0]!r} after @; choose from {', '.join(ENVS)}")
    for path in [*(args.peer_json or ()), *(source.path for source in args.report or ())]:
        if not path.is_file():
            raise SystemExit(f"puffer-tui bench learn: error: {path}: no such file")
    if args.first_seed < 0:
        raise SystemExit(f"puffer-tui bench learn: error: --first-seed must be >= 0, got "
                         f"{args.first_seed}")
    if args.report and (args.peer_json or args.side != "both"):
        raise SystemExit("puffer-tui bench learn: error: --report runs nothing: leave out "
                         "--side and --peer-json")
    if not args.report and args.side in ("both", "sb3") and importlib.util.find_spec("stable_baselines3") is None:
        raise SystemExit("puffer-tui bench learn: error: the SB3 side needs Stable-Baselines3: "
                         'pip install "puffer-tui[bench]" (or --side ours)')
    if args.json is not None and not args.json.parent.is_dir():
        raise SystemExit(f"puffer-tui bench learn: error: --json {args.json}: no directory "
                         f"{args.json.parent}")
    return [ENVS[e] for e in (args.envs or ENVS)]


def _missing(env) -> str | None:
    for module in env.needs:
        if importlib.util.find_spec(module) is None:
            return f'needs {module}: pip install "puffer-tui[{env.extra}]"'
    return None


def _peer_runs(paths: list[Path] | None) -> list[dict]:
    """The envs of each earlier JSON, read before anything runs."""
    out = []
    for path in paths or ():
        try:
            out.append(json.loads(path.read_text())["bench_learn"]["envs"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"puffer-tui bench learn: error: --peer-json {path}: not a bench "
                             f"learn JSON ({type(e).__name__}: {e})") from None
    return out


def run(args) -> int:
    envs = _check(args)
    if args.report:
        return _report(args, [e.name for e in envs] if args.envs else None)
    peers = _peer_runs(args.peer_json)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-learn-"))
    work.mkdir(parents=True, exist_ok=True)
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "command": _command_line(),
           "machine": _machine(), "commit": None, "zoo_source": ZOO_SOURCE,
           "window": args.window, "marks": list(report.MARKS), "envs": {}}
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.benchmarks.learn_runs import (
        ours_device,
        ours_torch_threads,
        repo_commit,
        run_ours,
        run_sb3,
    )

    out["commit"] = repo_commit()
    try:
        for env in envs:
            steps = int(args.steps) if args.steps is not None else default_steps(env)
            entry = out["envs"][env.name] = {
                "steps": steps, "ours_spec": env.ours, "zoo": env.zoo, "note": env.note,
                "zoo_entry": ZOO_PPO.get(env.zoo), "runs": []}
            if args.eval_episodes is not None:
                env = dataclasses.replace(env, eval_episodes=args.eval_episodes)
            skipped = _missing(env)
            if skipped:
                entry["skipped"] = skipped
                print(f"{env.name}: skipped, {skipped}", file=sys.stderr, flush=True)
                continue
            if env.zoo is None:
                entry["no_peer"] = env.note
            timeout = args.run_timeout or 600.0 + 0.005 * steps
            sides = [s for s in ("ours", "sb3") if args.side in ("both", s)]
            if env.zoo is None:
                sides = [s for s in sides if s == "ours"]
            sb3_threads = args.sb3_threads
            if "sb3" in sides and not sb3_threads:  # the cores ours' learner gets
                sb3_threads = ours_torch_threads(env)
            sb3_device = ours_device(env) if "sb3" in sides else "cpu"
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                for side in sides:
                    place = work / f"{env.name}-{side}-s{seed}"
                    if place.exists():
                        shutil.rmtree(place)
                    print(f"{env.name}: {side} seed {seed}, {steps:,} steps ...",
                          file=sys.stderr, flush=True)
                    started = time.strftime("%Y-%m-%d %H:%M:%S")
                    if side == "ours":
                        result = run_ours(env, seed, steps, place, timeout)
                    else:
                        result = run_sb3(env, seed, steps, place, timeout, sb3_threads,
                                         sb3_device)
                    result["started"] = started
                    entry["runs"].append(result)
                    print("   " + _one_line(result, steps, args.window), file=sys.stderr,
                          flush=True)
                    if args.json is not None:  # after each run: a long one keeps its figures
                        _write_json(args.json, out)
            for earlier in peers:
                _adopt_peer(entry, earlier.get(env.name), steps)
            _summarize(entry, env, args.window)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        _write_json(args.json, out)
    return _print(out)


def _report(args, names: list[str] | None) -> int:
    """The runs of earlier JSON outputs as one table (an env's runs merged when their
    budgets agree, else listed apart under "ENV @ STEPS")."""
    files = _peer_runs([source.path for source in args.report])
    first = json.loads(args.report[0].path.read_text())["bench_learn"]
    out = {**first, "command": _command_line(), "envs": {},
           "reported_from": [str(source) for source in args.report]}
    seen = set()  # a run adopted by a later --peer-json file is also in the earlier file
    for envs, source in zip(files, args.report):
        for name, entry in envs.items():
            if names is not None and name not in names:
                continue
            if source.envs is not None and name not in source.envs:
                continue
            key = name
            if key in out["envs"] and out["envs"][key]["steps"] != entry["steps"]:
                key = f"{name} @ {entry['steps']:,}"
            merged = out["envs"].setdefault(key, {**entry, "runs": []})
            if entry.get("zoo") is not None:  # the settings SB3's runs took (a file of ours
                merged.update(zoo=entry["zoo"], zoo_entry=entry.get("zoo_entry"))  # has none)
                merged.pop("no_peer", None)
            for r in entry.get("runs", []):
                identity = (key, json.dumps(r, sort_keys=True))
                if source.side in (None, r["side"]) and identity not in seen:
                    seen.add(identity)
                    merged["runs"].append(r)
    # the benchmark's order, whatever the order of the files
    out["envs"] = dict(sorted(out["envs"].items(), key=lambda item: _benchmark_order(item[0])))
    for key, entry in out["envs"].items():
        env = ENVS.get(key.split(" @ ")[0])
        if not entry.get("skipped") and env is not None:
            _summarize(entry, env, out.get("window", args.window))
    # the header speaks for every run reported, not for the first file's session
    runs = [r for entry in out["envs"].values() for r in entry["runs"]]
    starts = sorted(r["started"] for r in runs if r.get("started"))
    if starts:
        out["date"] = (starts[0] if starts[0] == starts[-1]
                       else f"runs started {starts[0]} .. {starts[-1]}")
    commits = sorted({r["commit"] for r in runs if r.get("commit")})
    if commits:
        out["commit"] = ", ".join(commits)
    if args.json is not None:
        _write_json(args.json, out)
    return _print(out)


def _benchmark_order(key: str) -> int:
    """Where an env's table key ("ENV" or "ENV @ STEPS") stands in ENVS (unknown ones last)."""
    name = key.split(" @ ")[0]
    return list(ENVS).index(name) if name in ENVS else len(ENVS)


def _print(out: dict) -> int:
    commits = "commits" if ", " in str(out["commit"]) else "commit"
    machine = out["machine"]  # older JSON files have no capability
    capability = machine.get("torch_cpu_capability")
    print(f"bench learn, {out['date']}, {commits} {out['commit']}, {machine['cpu']} "
          f"({machine['cores']} cores"
          + (f", torch CPU capability {capability}" if capability else "")
          + f"); SB3 settings: {ZOO_SOURCE}")
    print()
    print(report.markdown(out))
    print()
    for name, entry in out["envs"].items():
        print(f"- {name}: {_provenance(entry)}")
    failed = [r for e in out["envs"].values() for r in e["runs"]
              if r.get("error") and not r.get("stopped")]
    for r in failed:
        print(f"\nfailed: {r['side']} seed {r['seed']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def _adopt_peer(entry: dict, earlier: dict | None, steps: int) -> None:
    """SB3's runs from an earlier JSON, when it measured the same env at the same budget."""
    if not earlier or earlier.get("steps") != steps:
        return
    runs = [r for r in earlier.get("runs", []) if r.get("side") == "sb3"]
    entry["runs"] += runs
    entry["sb3_measured"] = sorted({*entry.get("sb3_measured", ()),
                                    *(r.get("started", "?")[:10] for r in runs)})


def _summarize(entry: dict, env, window: int) -> None:
    steps = entry["steps"]
    summary = {}
    for side in ("ours", "sb3"):
        runs = [r for r in entry["runs"] if r["side"] == side]
        if runs:
            summary[side] = report.summarize(runs, steps, window=window, rise=env.rise)
    if "ours" in summary and "sb3" in summary:
        summary["compare"] = report.compare(summary["ours"], summary["sb3"])
    entry["summary"] = summary


def _one_line(r: dict, steps: int, window: int) -> str:
    if r.get("error"):
        return f"FAILED: {r['error'].splitlines()[0]}"
    end = max([steps] + [c[0] for c in r["chunks"][-1:]])  # the end of the run: the 100% mark
    final = report.return_at(r["chunks"], end, window)
    ev = (r.get("eval") or {}).get("episode_return")
    return (f"{r.get('steps', 0):,} steps, {r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU, "
            f"{r.get('sps') or 0:,.0f} steps/s; training return "
            f"{'-' if final is None else f'{final[0]:.1f}'}, eval "
            f"{'-' if ev is None else f'{ev:.1f}'}")


def _provenance(entry: dict) -> str:
    """When and on which commit each side's runs were made (ours may be newer than SB3's)."""
    parts = []
    for side, title in (("ours", "ours"), ("sb3", "SB3")):
        runs = [r for r in entry.get("runs", []) if r["side"] == side]
        if not runs:
            continue
        days = sorted({r.get("started", "?")[:10] for r in runs})
        commits = sorted({r["commit"] for r in runs if r.get("commit")})
        parts.append(f"{title} measured {', '.join(days)}"
                     + (f" on commit {', '.join(commits)}" if commits else ""))
    return "; ".join(parts) or entry.get("skipped") or "no runs"


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"bench_learn": data}, indent=1))
    os.replace(tmp, path)


def _command_line() -> str:
    return "puffer-tui " + " ".join(sys.argv[1:]) if sys.argv else "puffer-tui bench learn"


def _machine() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("torch", "stable-baselines3", "gymnasium", "mujoco", "ale-py"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {"cpu": cpu_model(), "torch_cpu_capability": torch_cpu_capability(),
            "cores": os.cpu_count(), "python": platform.python_version(),
            "nice": os.nice(0), "versions": versions}
