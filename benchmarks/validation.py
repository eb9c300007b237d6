"""The defaults on envs nobody tuned them for: each env of a held-out validation set trained with
its id and budget only (the family preset it falls into, nothing else), against rl-zoo's
published PPO figure for the same env at the same budget.

    python -m puffer_tui.benchmarks.validation --envs MountainCar-v0 --seeds 3 --json out.json
    python -m puffer_tui.benchmarks.validation --report out.json [more.json ...]

The development set is `bench learn`'s envs (benchmarks/learn_zoo_settings.py: ENVS): the
presets were tuned there, against SB3 run with the zoo's settings. The validation set below was
chosen before any of its runs, one or more standard envs per family, and nothing was tuned on
it. Each run is `puffer-tui train ID --headless --train.total-timesteps N --train.seed S`
then `puffer-tui eval RUN --json` (benchmarks/learn_runs.py, the same runner as bench learn).

The published figures are rl-zoo's benchmark.md (mean and std of the final agent's evaluation
episodes, at the zoo's n_timesteps), copied by hand from DLR-RM/rl-baselines3-zoo at commit
22e3ff2 (v2.8.0); where the zoo measured an older version of an env (LunarLander-v2, the MuJoCo
-v3 bodies) that is the figure used, and said. A verdict: "at or above" the published mean,
"within" its std, or "below". Where the zoo publishes no figure at the budget (Atari on a short
budget: its figures are at 10M steps; the MuJoCo balance env, which it tuned but did not
publish), SB3 is run with the zoo's settings for the env at the
same budget and seeds, beside ours (benchmarks/learn_runs.py `run_sb3`, as bench learn does),
and the verdict reads its runs: "at or above" their median, "within" their seed spread (down to
the lowest seed), or "below". The run's own doctor is read too: any error-level diagnosis that
fired in the run is counted (metrics.jsonl's `diagnoses`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from puffer_tui.benchmarks.learn_zoo_settings import ENVS as DEVELOPMENT
from puffer_tui.benchmarks.learn_zoo_settings import ZOO_PPO, BenchEnv
from puffer_tui.benchmarks.machine import machine, machine_line

ZOO_BENCHMARK = "rl-baselines3-zoo benchmark.md @ 22e3ff2 (v2.8.0)"


@dataclass(frozen=True)
class HeldOut:
    """An env of the validation set and the zoo's published PPO figure for it."""

    env: BenchEnv
    family: str
    zoo_mean: float | None  # None: no published figure at the budget, SB3 is run (env.zoo)
    zoo_std: float | None
    zoo_id: str  # the env the zoo measured (an older version where it has no figure for ours)

    @property
    def name(self) -> str:
        return self.env.name

    @property
    def runs_peer(self) -> bool:
        return self.zoo_mean is None


def _held_out(name: str, family: str, mean: float, std: float, steps: int, zoo_id: str = "",
              needs: tuple = (), extra: str | None = None, deterministic: bool = True):
    bench = BenchEnv(name, f"gym:{name}", None, needs=needs, extra=extra, steps=steps,
                     eval_deterministic=deterministic)
    return HeldOut(bench, family, mean, std, zoo_id or name)


def _held_out_atari(game: str, steps: int) -> HeldOut:
    """An ALE game at a short budget, against SB3 run with the zoo's `atari` settings (its
    AtariWrapper on the same v5 env, whose own frame skip is turned off there: bench learn's
    Breakout)."""
    name = f"ALE/{game}-v5"
    bench = BenchEnv(name, f"gym:{name}", "atari", sb3_id=name,
                     sb3_env_kwargs=(("frameskip", 1),), needs=("ale_py", "cv2"),
                     extra="atari", steps=steps, eval_deterministic=False)
    return HeldOut(bench, "Atari", None, None, name)


def _held_out_tuned(name: str, family: str, zoo_entry: str, needs: tuple, extra: str,
                    spec: str = "") -> HeldOut:
    """An env without a published PPO figure: SB3 runs the settings `zoo_entry`
    (learn_zoo_settings.ZOO_PPO) beside ours, at the entry's budget."""
    bench = BenchEnv(name, spec or f"gym:{name}", zoo_entry, needs=needs, extra=extra,
                     steps=int(float(ZOO_PPO[zoo_entry]["n_timesteps"])))
    return HeldOut(bench, family, None, None, zoo_entry)


_MUJOCO = {"needs": ("mujoco",), "extra": "mujoco"}
_BOX2D = {"needs": ("Box2D",), "extra": "box2d"}
_MINIGRID = {"needs": ("minigrid",), "extra": "minigrid", "deterministic": False}

VALIDATION: dict[str, HeldOut] = {h.name: h for h in (
    _held_out("MiniGrid-Empty-Random-5x5-v0", "MiniGrid", 0.968, 0.013, 100_000, **_MINIGRID),
    _held_out("MiniGrid-Unlock-v0", "MiniGrid", 0.963, 0.016, 100_000, **_MINIGRID),
    _held_out("MiniGrid-KeyCorridorS3R1-v0", "MiniGrid", 0.949, 0.011, 500_000, **_MINIGRID),
    # added 2026-12-07, before any run of it: the zoo's one MiniGrid figure at 1M steps
    _held_out("MiniGrid-RedBlueDoors-6x6-v0", "MiniGrid", 0.860, 0.313, 1_000_000, **_MINIGRID),
    # added 2026-12-07 with the mission read as choices (envs/minigrid_mission.py): a
    # mission that names the goal (which door); one seed of it at 500k measured that change
    _held_out("MiniGrid-GoToDoor-5x5-v0", "MiniGrid", 0.525, 0.476, 5_000_000, **_MINIGRID),
    # sparse reward: -1 a step until the car reaches the flag
    _held_out("MountainCar-v0", "classic control", -110.423, 19.473, 1_000_000),
    _held_out("LunarLander-v3", "Box2D", 242.119, 31.823, 1_000_000, "LunarLander-v2",
              **_BOX2D),
    _held_out("LunarLanderContinuous-v3", "Box2D", 270.863, 32.072, 1_000_000,
              "LunarLanderContinuous-v2", **_BOX2D),
    _held_out("Swimmer-v5", "MuJoCo locomotion", 281.561, 9.671, 1_000_000, "Swimmer-v3",
              **_MUJOCO),
    _held_out("Walker2d-v5", "MuJoCo locomotion", 3478.798, 821.708, 1_000_000, "Walker2d-v3",
              **_MUJOCO),
    _held_out("Ant-v5", "MuJoCo locomotion", 1327.158, 451.577, 1_000_000, "Ant-v3", **_MUJOCO),
    # balance (added 2026-12-07, before any run of it): the zoo publishes no PPO figure for a
    # MuJoCo balance env, so SB3 runs its tuned InvertedDoublePendulum entry beside ours
    _held_out_tuned("InvertedDoublePendulum-v5", "MuJoCo balance", "InvertedDoublePendulum-v2",
                    **_MUJOCO),
    # MPE (added 2026-12-07, before any run of it; the development set's is simple_spread):
    # cooperative, two agents that must tell each other which landmark is the other's. No
    # published PPO figure or zoo settings: SB3 with PettingZoo's own tutorial settings
    _held_out_tuned("simple_reference", "MPE", "pettingzoo-tutorial",
                    ("pettingzoo", "mpe2", "supersuit"), "pettingzoo,bench",
                    "pz:mpe2.simple_reference_v3:parallel_env"),
    # Atari on a short budget: 100k agent steps (400k frames), the Atari 100k benchmark's
    # (Kaiser et al., 2020); the game from the Atari-5 subset (Aitchison et al., 2022), both
    # chosen before any run; the development set's games are Pong and Breakout
    _held_out_atari("Qbert", 100_000),
)}


def verdict(eval_median: float | None, held: HeldOut, peer: list[float] | None = None) -> str:
    """Against the published mean and std, or (an env the zoo has no figure for) against
    `peer`, the evals of SB3's runs: their median and lowest seed."""
    if eval_median is None:
        return "no result"
    if held.runs_peer:
        if not peer:
            return "no peer result"
        if eval_median >= statistics.median(peer):
            return "at or above"
        return "within spread" if eval_median >= min(peer) else "below"
    if eval_median >= held.zoo_mean:
        return "at or above"
    if eval_median >= held.zoo_mean - held.zoo_std:
        return "within std"
    return "below"


def fired_diagnoses(run_dir: Path, severity: str) -> list[str]:
    """The rules of `severity` ("error", "warning") that fired in a run, as its metrics.jsonl
    rows recorded them."""
    fired = []
    path = run_dir / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.exists() else ():
        for entry in json.loads(line).get("diagnoses") or ():
            if entry.get("severity") == severity and entry.get("status") != "cleared":
                fired.append(entry.get("rule", "?"))
    return fired


def run_one(held: HeldOut, seed: int, work: Path, flags: tuple[str, ...]) -> dict:
    # lazy: pulls psutil and the runner, kept off --report's path
    from puffer_tui.benchmarks import learn_runs

    steps = int(held.env.steps)
    result = learn_runs.run_ours(held.env, seed, steps, work, 600.0 + 0.01 * steps, flags)
    runs = sorted((work / "runs").glob("*/config.toml"))
    if runs:
        result["error_diagnoses"] = fired_diagnoses(runs[-1].parent, "error")
        result["warning_diagnoses"] = fired_diagnoses(runs[-1].parent, "warning")
    result.pop("config_toml", None)
    return result


def _evals(runs: list[dict]) -> list[float]:
    return [r["eval"]["episode_return"] for r in runs
            if isinstance((r.get("eval") or {}).get("episode_return"), (int, float))]


def run_peer(held: HeldOut, seed: int, work: Path) -> dict:
    """SB3 with the zoo's settings for the env, at the same budget and seed, on the learner
    threads and device ours trains with (bench learn's way)."""
    # lazy: pulls psutil, torch and the runner, kept off --report's path
    from puffer_tui.benchmarks import learn_runs

    steps = int(held.env.steps)
    result = learn_runs.run_sb3(held.env, seed, steps, work, 600.0 + 0.02 * steps,
                                learn_runs.ours_torch_threads(held.env),
                                learn_runs.ours_device(held.env))
    result.pop("chunks", None)  # the curve: the report reads the final evaluation only
    return result


def summarize(held: HeldOut, runs: list[dict], peer_runs: list[dict] | None = None) -> dict:
    evals = _evals(runs)
    peer = _evals(peer_runs or [])
    median = statistics.median(evals) if evals else None
    return {"seeds": len(runs), "eval": evals, "eval_median": median,
            "eval_min": min(evals) if evals else None, "eval_max": max(evals) if evals else None,
            "peer_eval": peer, "verdict": verdict(median, held, peer),
            "error_diagnoses": sorted({d for r in runs for d in r.get("error_diagnoses", ())}),
            "warning_diagnoses": sorted({d for r in runs
                                         for d in r.get("warning_diagnoses", ())}),
            "failed": sum(1 for r in runs if r.get("error"))}


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def markdown(results: dict) -> str:
    lines = ["| env | family | steps | ours: eval, median of seeds (min-max) | rl-zoo PPO "
             "(published) | verdict | error diagnoses | warnings |",
             "| --- | --- | ---: | ---: | ---: | --- | --- | --- |"]
    for name, entry in results.items():
        held = VALIDATION[name]
        s = entry["summary"]
        ours = "-" if s["eval_median"] is None else (
            f"{_fmt(s['eval_median'])} ({_fmt(s['eval_min'])} to {_fmt(s['eval_max'])}), "
            f"{len(s['eval'])} seed{'s' if len(s['eval']) != 1 else ''}")
        if held.runs_peer:
            peer = s.get("peer_eval") or []
            zoo = "-" if not peer else (
                f"SB3 with its settings, run: {_fmt(statistics.median(peer))} "
                f"({_fmt(min(peer))} to {_fmt(max(peer))}), {len(peer)} seed"
                f"{'s' if len(peer) != 1 else ''}")
        else:
            zoo = f"{_fmt(held.zoo_mean)} +- {_fmt(held.zoo_std)}" + (
                f" ({held.zoo_id})" if held.zoo_id != name else "")
        lines.append(f"| {name} | {held.family} | {entry['steps']:,} | {ours} | {zoo} | "
                     f"{s['verdict']} | {', '.join(s['error_diagnoses']) or 'none'} | "
                     f"{', '.join(s['warning_diagnoses']) or 'none'} |")
    return "\n".join(lines)


def _source(text: str) -> tuple[Path, set[str] | None]:
    """"FILE" or "FILE@ENV,ENV": a JSON file and the envs to take from it (default: all)."""
    path, _, envs = text.partition("@")
    return Path(path), set(envs.split(",")) if envs else None


def _merge(sources: list[str]) -> tuple[dict, list[dict]]:
    merged: dict = {}
    headers = []
    for source in sources:
        path, only = _source(source)
        data = json.loads(path.read_text())["validation"]
        header = {k: data.get(k) for k in ("date", "command", "machine", "commit", "flags")}
        header["envs"] = sorted(n for n, e in data["envs"].items()
                                if (only is None or n in only) and e.get("runs"))
        headers.append(header)
        for name, entry in data["envs"].items():
            if only is not None and name not in only or not entry.get("runs"):
                continue
            into = merged.setdefault(name, {"steps": entry["steps"], "runs": [],
                                            "peer_runs": []})
            if into["steps"] == entry["steps"]:
                into["runs"] += entry["runs"]
                into["peer_runs"] += entry.get("peer_runs", [])
    for name, entry in merged.items():
        entry["summary"] = summarize(VALIDATION[name], entry["runs"], entry["peer_runs"])
    return dict(sorted(merged.items(), key=lambda kv: list(VALIDATION).index(kv[0]))), headers


def report(sources: list[str]) -> str:
    results, headers = _merge(sources)
    out = [f"Validation set (held out: nothing tuned on it); the published figures: "
           f"{ZOO_BENCHMARK}; where it has none at the budget, SB3 with the zoo's settings "
           f"run beside ours."]
    for h in headers:
        m = h["machine"]
        flags = f", flags `{' '.join(h['flags'])}`" if h.get("flags") else ""
        out.append(f"- {', '.join(h['envs'])}: {h['date']}, commit {h['commit']}, "
                   f"{m.get('cpu')} ({m.get('cores')} cores){flags}: `{h['command']}`")
    out += ["", markdown(results)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.validation",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", nargs="+", metavar="ENV", help=f"(default: all) "
                   f"{', '.join(VALIDATION)}")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--json", type=Path, help="write the runs here (after each run)")
    p.add_argument("--report", nargs="+", metavar="JSON[@ENV,...]",
                   help="print the table of earlier --json files (only the envs named after "
                        "@) and run nothing")
    p.add_argument("--flag", action="append", default=[], metavar="FLAG=VALUE",
                   help="an extra train flag for every run, e.g. --flag "
                        "--train.adaptive-lr-kl=0 (a variant to compare)")
    p.add_argument("--keep-runs", type=Path, metavar="DIR",
                   help="train under DIR and leave the run folders there (metrics.jsonl, "
                        "checkpoints) to read afterwards; default: a temporary folder, removed")
    args = p.parse_args(argv)
    if args.report:
        missing = [text for text in args.report if not _source(text)[0].exists()]
        if missing:
            p.error(f"no such file: {missing[0]}")
        print(report(args.report))
        return 0
    unknown = [e for e in args.envs or () if e not in VALIDATION]
    if unknown:
        p.error(f"unknown env {unknown[0]!r}: choose from {', '.join(VALIDATION)} "
                f"(the development set is bench learn's: {', '.join(DEVELOPMENT)})")
    flags = tuple(part for flag in args.flag for part in flag.split("=", 1))
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
           "command": "python -m puffer_tui.benchmarks.validation " + " ".join(
               sys.argv[1:] if argv is None else argv),
           "machine": machine(), "commit": None, "flags": list(flags), "envs": {}}
    # lazy: pulls psutil, kept off --report's path
    from puffer_tui.benchmarks.learn_runs import repo_commit

    out["commit"] = repo_commit()
    print(machine_line(), file=sys.stderr)
    if args.keep_runs:
        args.keep_runs.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="validation-", dir=args.keep_runs))
    try:
        for name in args.envs or VALIDATION:
            held = VALIDATION[name]
            missing = [m for m in held.env.needs if not _importable(m)]
            entry = out["envs"][name] = {"steps": held.env.steps, "runs": []}
            if held.runs_peer:
                entry["peer_runs"] = []
            if missing:
                entry["skipped"] = f"needs {missing[0]}: pip install -e \".[{held.env.extra}]\""
                print(f"{name}: skipped, {entry['skipped']}", file=sys.stderr)
                continue
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                print(f"{name}: seed {seed}, {held.env.steps:,} steps ...", file=sys.stderr,
                      flush=True)
                work = work_root / f"{name.replace('/', '_')}-s{seed}"
                result = run_one(held, seed, work, flags)
                result["started"] = time.strftime("%Y-%m-%d %H:%M:%S")
                entry["runs"].append(result)
                ev = (result.get("eval") or {}).get("episode_return")
                print(f"   eval {ev}, {result.get('wall_s', 0):.0f} s wall, errors "
                      f"{result.get('error_diagnoses')}, warnings "
                      f"{result.get('warning_diagnoses')}"
                      + (f"; FAILED {result['error'][:300]}" if result.get("error") else ""),
                      file=sys.stderr, flush=True)
                if held.runs_peer:
                    peer = run_peer(held, seed, work / "sb3")
                    peer["started"] = result["started"]
                    entry["peer_runs"].append(peer)
                    print(f"   SB3 ({held.env.zoo} settings): eval "
                          f"{(peer.get('eval') or {}).get('episode_return')}, "
                          f"{peer.get('wall_s', 0):.0f} s wall"
                          + (f"; FAILED {peer['error'][:300]}" if peer.get("error") else ""),
                          file=sys.stderr, flush=True)
                if args.json:
                    _write(args.json, out)
            entry["summary"] = summarize(held, entry["runs"], entry.get("peer_runs"))
    finally:
        if not args.keep_runs:
            shutil.rmtree(work_root, ignore_errors=True)
    if args.json:
        _write(args.json, out)
        print(report([str(args.json)]))
    return 0


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _write(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"validation": data}, indent=1))
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
