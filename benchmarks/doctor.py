"""`python -m puffer_tui.benchmarks.doctor`: does each diagnosis rule fire on a run broken on
purpose, stay quiet on healthy ones, and does its suggested change help?

For each rule a deliberately broken run (a learning rate 30x too high, rewards x1000, one
observation column x1e4, gamma far too short, no entropy bonus, a slowing env...) is trained
by a real engine process; the benchmark watches its pushes as the app does and notes the
epoch each diagnosis fired at. For the rules marked `fix`, the same run is trained again with
the suggestion applied live the moment the rule fires (the `set` the dashboard's `a` key
sends, through the control socket), and the outcomes are compared: the mean score of the last
3 epochs with episodes, median over the seeds. Healthy runs (the built-in presets, short)
must fire nothing. The autopilot column trains each fix case once more with
`--train.autopilot true` and no person at the keys (the engine applies the live fix itself),
and each healthy run too, which the autopilot must leave unchanged. The cost of diagnosing is the engine's own measure (Doctor.seconds)
against its training time.

    python -m puffer_tui.benchmarks.doctor [--seeds 3] [--only kl_blowup,healthy]
        [--json doctor.json] [--fixtures tests/fixtures/diagnosis]
    python -m puffer_tui.benchmarks.doctor --report doctor.json   # its Markdown table

The JSON keeps the date, machine, load, commit and command beside the results
(benchmarks/run_record.py); `--report` prints the table on the docs' Diagnosis page from it
(benchmarks/doctor_report.py).

Each run's signals (PUFFER_TUI_DIAGNOSIS_TRACE) are kept; `--fixtures DIR` copies them there
for the rules' tests. Runs are niced (`nice -n 5` of the whole command is still advised on a
shared machine) and small: about 10-60 s each on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.app.run_preparation import prepare_new_run
from puffer_tui.engine.diagnosis.epoch_diagnosis import TRACE_ENV, row_signals
from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.metrics_file import grouped

BROKEN_ENV = "puffer_tui.benchmarks.doctor_envs:cartpole"
TRACE_FILE = "diagnosis_trace.jsonl"


@dataclass
class Case:
    name: str
    rule: str | None  # the rule that must fire (None: a healthy run, nothing may fire)
    env: str
    setting: str  # the broken setting, as a person would type it
    overrides: dict = field(default_factory=dict)
    fix: bool = False  # compare with the suggestion applied live
    first_seed: int = 1  # a run found broken at its own seed keeps it


CASES = [  # the fix comparisons first: they take 2 x seeds runs each
    Case("kl_blowup", "kl_blowup", "gym:CartPole-v1", "--train.learning-rate 0.15 (30x)",
         {"train.learning_rate": 0.15}, fix=True),
    Case("kl_blowup 7x", "kl_blowup", "squared", "--train.learning-rate 0.1 (7x)",
         {"train.learning_rate": 0.1, "train.total_timesteps": 3_000_000}, fix=True),
    Case("critic_blind", "critic_blind", "squared", "--train.vf-coef 0 (no critic)",
         {"train.vf_coef": 0.0, "train.total_timesteps": 3_000_000}, fix=True),
    Case("short_horizon", "short_horizon", "squared", "--train.gamma 0.5 --env.size 21",
         {"train.gamma": 0.5, "env.size": 21, "train.total_timesteps": 3_000_000}, fix=True),
    Case("policy_collapse", "policy_collapse", "squared", "--train.learning-rate 0.9",
         {"train.learning_rate": 0.9, "train.total_timesteps": 3_000_000}),
    Case("value_dominates", "value_dominates", BROKEN_ENV, "rewards x1000 (CartPole)",
         {"env.reward_scale": 1000.0, "train.normalize_rewards": False,
          "train.total_timesteps": 300_000}, fix=True),
    Case("plateau", "plateau", "squared", "--train.learning-rate 0.45 (30x)",
         {"train.learning_rate": 0.45, "train.total_timesteps": 3_000_000}),
    Case("grad_always_clipped", "grad_always_clipped", BROKEN_ENV, "rewards x1000 (CartPole)",
         {"env.reward_scale": 1000.0, "train.normalize_rewards": False,
          "train.total_timesteps": 300_000}),
    Case("obs_scale", "obs_scale", BROKEN_ENV, "observation column 1 x1e4 (CartPole)",
         {"env.obs_scale": 1e4, "train.normalize_observations": False,
          "train.total_timesteps": 200_000}),
    Case("episode_ends", "episode_ends", "squared",
         "--env.size 41 --env.max-ticks 10 (targets out of reach)",
         {"env.size": 41, "env.max_ticks": 10, "train.total_timesteps": 2_000_000}),
    Case("env_bound", "env_bound", BROKEN_ENV, "env 1 ms/step slower after 3k steps (CartPole)",
         {"env.slow_after": 3000, "env.slow_seconds": 0.001, "vec.num_envs": 16,
          "train.minibatch_size": 1024, "train.total_timesteps": 100_000}),
    # not broken on purpose: the MiniGrid preset, at the seed it broke
    Case("score_lost", "score_lost", "gym:MiniGrid-LavaGapS6-v0",
         "the MiniGrid preset, 1M steps, seed 0",
         {"train.target_kl": 0.0, "train.total_timesteps": 1_000_000}, first_seed=0),
    Case("healthy squared", None, "squared", "defaults", {}),
    Case("healthy cartpole", None, "cartpole", "defaults", {}),
    Case("healthy password", None, "password", "defaults", {}),
    Case("healthy gym:CartPole-v1", None, "gym:CartPole-v1", "preset CartPole-v1.toml", {}),
    # a preset whose own budget takes hours on 2 cores runs on a shorter one
    Case("healthy breakout", None, "breakout", "defaults (50M steps)", {}),
    Case("healthy snake", None, "snake", "defaults, 20M steps",
         {"train.total_timesteps": 20_000_000}),
    Case("healthy gym:Acrobot-v1", None, "gym:Acrobot-v1", "preset Acrobot-v1.toml", {}),
    Case("healthy gym:Pendulum-v1", None, "gym:Pendulum-v1", "preset Pendulum-v1.toml", {}),
    Case("healthy gym:HalfCheetah-v5", None, "gym:HalfCheetah-v5", "preset mujoco.toml, 500k",
         {"train.total_timesteps": 500_000}),
    Case("healthy gym:Hopper-v5", None, "gym:Hopper-v5", "preset mujoco.toml, 500k",
         {"train.total_timesteps": 500_000}),
]


def final_score(run_dir: Path) -> float | None:
    """The mean score of the run's last 3 epochs that ended episodes."""
    scores = [r.get("score", r.get("episode_return")) for r in read_metrics(run_dir)
              if (r.get("episodes") or 0) > 0]
    scores = [s for s in scores if isinstance(s, (int, float))]
    return statistics.fmean(scores[-3:]) if scores else None


def train(case: Case, seed: int, runs_root: Path, apply_fix: bool,
          timeout: float = 900.0, overrides: dict | None = None) -> dict:
    """One engine run of `case`; with `apply_fix` the rule's suggestion is `set` live as it
    fires, or, for a restart suggestion, the run is stopped there and trained again from
    the start with the suggested value (the outcome is the new run's). Returns what fired
    when, what was applied, the outcome and the cost."""
    run_dir = prepare_new_run(case.env, {**case.overrides, **(overrides or {}),
                                         "train.seed": seed}, runs_root)
    os.environ[TRACE_ENV] = str(run_dir / TRACE_FILE)
    try:
        handle = launch_engine(run_dir)
    finally:
        os.environ.pop(TRACE_ENV, None)
    fired: dict[str, int] = {}
    applied = None
    deadline = time.monotonic() + timeout
    try:
        with EngineClient.connect(rd.socket_path(run_dir)) as client:
            while not client.closed.is_set() and time.monotonic() < deadline:
                for push in client.pushes(timeout=0.5):
                    if push.get("type") != "diagnosis" or push.get("status") != "fired":
                        continue
                    fired.setdefault(push["rule"], push.get("epoch"))
                    suggestion = push.get("suggestion") or {}
                    if not (apply_fix and applied is None and push["rule"] == case.rule
                            and "to" in suggestion):
                        continue
                    if suggestion.get("live"):
                        reply = client.request("set", key=suggestion["key"],
                                               value=suggestion["to"])
                        applied = {"key": suggestion["key"], "to": suggestion["to"],
                                   "epoch": push.get("epoch"), "ok": reply.get("ok"),
                                   "applies": reply.get("applies")}
                    else:  # what the user would do: stop, and train again with the change
                        client.request("stop", checkpoint=False)
                        applied = {"key": suggestion["key"], "to": suggestion["to"],
                                   "epoch": push.get("epoch"), "restart": True}
    finally:
        if handle.poll() is None and time.monotonic() >= deadline:
            handle.process.terminate()
        handle.wait(60)
    result = {"seed": seed, "run": str(run_dir), "fired": fired, "applied": applied,
              "score": final_score(run_dir), "autopilot": autopilot_changes(run_dir),
              **cost(run_dir)}
    if applied and applied.get("restart"):
        again = train(case, seed, runs_root, False, timeout,
                      {**(overrides or {}), applied["key"]: applied["to"]})
        result.update(score=again["score"], restarted=again)
    return result


AUTOPILOT = {"train.autopilot": True}


def autopilot_changes(run_dir: Path) -> list[str]:
    """The autopilot's changes in the run's event log (applied and reverted), as logged."""
    try:
        lines = (run_dir / rd.EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [line for line in lines if "autopilot applied" in line or "autopilot reverted" in line]


def trace_from_metrics(run_dir: Path, out: Path, epochs: int | None = None) -> int:
    """A run's metrics.jsonl as a trace (the rules' signals found in each row, the engine's
    own `row_signals`, and the settings from its config.toml): the epochs of a run trained
    without a trace, e.g. a healthy run on which a rule once fired. The batch's signals (reward
    and observation scales, ends, returns' spread) are not in the rows: the rules that read
    them stay quiet on such a trace. Returns the epochs written."""
    import tomllib

    config = tomllib.loads((run_dir / "config.toml").read_text())
    train_, vec = config.get("train", {}), config.get("vec", {})
    settings = {k: train_[k] for k in ("learning_rate", "ent_coef", "vf_coef", "gamma",
                                       "max_grad_norm", "total_timesteps") if k in train_}
    settings["num_workers"] = vec.get("num_workers", 1)
    rows, last = read_metrics(run_dir)[:epochs], 0
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            signals = row_signals(grouped(row), int(row["global_step"]) - last)
            last = int(row["global_step"])
            f.write(json.dumps({"signals": signals, "settings": settings,
                                "uptime": row.get("uptime")}) + "\n")
    return len(rows)


def cost(run_dir: Path) -> dict:
    """The engine's time spent diagnosing against its training time (the trace's last line)."""
    try:
        last = json.loads((run_dir / TRACE_FILE).read_text().splitlines()[-1])
    except (OSError, IndexError, ValueError):
        return {"diagnosis_seconds": None, "uptime": None}
    return {"diagnosis_seconds": last.get("seconds"), "uptime": last.get("uptime")}


def run_case(case: Case, seeds: int, runs_root: Path, fixtures: Path | None) -> dict:
    seeds = seeds if case.fix else 1  # the medians of seeds are for the fixes' comparison
    runs = range(case.first_seed, case.first_seed + seeds)
    without = [train(case, seed, runs_root, False) for seed in runs]
    result = {"case": case.name, "rule": case.rule, "env": case.env, "setting": case.setting,
              "without": without}
    if case.fix:
        result["with"] = [train(case, seed, runs_root, True) for seed in runs]
    if case.fix or case.rule is None:  # the autopilot alone; healthy runs: it must do nothing
        result["autopilot"] = [train(case, seed, runs_root, False, overrides=AUTOPILOT)
                               for seed in runs]
    if fixtures is not None:
        fixtures.mkdir(parents=True, exist_ok=True)
        name = case.name.replace(" ", "_").replace(":", "-")
        shutil.copy(Path(without[0]["run"]) / TRACE_FILE, fixtures / f"{name}.jsonl")
    return result


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(result: dict) -> dict:
    rule, runs = result["rule"], result["without"]
    fired_at = [r["fired"].get(rule) for r in runs] if rule else []
    row = {"case": result["case"], "setting": result["setting"],
           "fired": sum(e is not None for e in fired_at) if rule else None,
           "fired_at": _median(fired_at) if rule else None,
           "others": sorted({k for r in runs for k in r["fired"]} - {rule}),
           "score_without": _median([r["score"] for r in runs]), "runs": len(runs)}
    if "with" in result:
        row["score_with"] = _median([r["score"] for r in result["with"]])
        row["applied"] = [r["applied"] for r in result["with"]]
    if "autopilot" in result:
        row["score_autopilot"] = _median([r["score"] for r in result["autopilot"]])
        row["autopilot_changes"] = sum(len(r["autopilot"]) for r in result["autopilot"])
    spent = [(r["diagnosis_seconds"], r["uptime"]) for r in runs + result.get("with", [])
             if r.get("diagnosis_seconds") is not None and r.get("uptime")]
    row["cost_pct"] = max(100 * s / u for s, u in spent) if spent else None
    return row


def table(rows: list[dict]) -> str:
    def fmt(v, spec=".3f"):
        if v is not None and spec == ".3f" and abs(v) >= 1e4:  # CartPole x1000's scores
            spec = ".0f"  # fit the column
        return "-" if v is None else format(v, spec)

    lines = [f"{'case':<26}{'broken setting':<42}{'fired':>7}{'at epoch':>9}"
             f"{'score':>8}{'fixed':>8}{'auto':>8}{'changes':>8}{'cost %':>8}  also fired"]
    for r in rows:
        fired = "-" if r["fired"] is None else f"{r['fired']}/{r['runs']}"
        healthy = r["fired"] is None
        lines.append(
            f"{r['case']:<26}{r['setting']:<42}{fired:>7}{fmt(r['fired_at'], '.0f'):>9}"
            f"{fmt(r['score_without']):>8}{fmt(r.get('score_with')):>8}"
            f"{fmt(r.get('score_autopilot')):>8}{fmt(r.get('autopilot_changes'), 'd'):>8}"
            f"{fmt(r['cost_pct'], '.2f'):>8}  "
            f"{', '.join(r['others']) or ('none' if healthy else '-')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.doctor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3,
                        help="seeds of each fix comparison (default 3; other cases run once)")
    parser.add_argument("--only", default="", help="comma-separated case names or rules")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--report", action="append", type=Path, metavar="FILE",
                        help="run nothing: print the Markdown table of an earlier --json FILE "
                             "(repeatable), with its date, machine and commands")
    parser.add_argument("--fixtures", type=Path, help="copy each case's first trace here")
    parser.add_argument("--runs-dir", type=Path, help="keep the runs here (default: a temp dir)")
    parser.add_argument("--trace-from", nargs=2, type=Path, metavar=("RUN_DIR", "OUT"),
                        help="write RUN_DIR's metrics.jsonl as a trace to OUT, and stop")
    args = parser.parse_args(argv)
    if args.report:
        # lazy: the table's module, which a benchmark run does not need
        from puffer_tui.benchmarks.doctor_report import report

        try:
            print(report(args.report))
        except SystemExit as refused:  # a file that is not a doctor JSON: its one line
            parser.exit(2, f"{refused.code}\n")
        return 0
    if args.trace_from:
        run, out = args.trace_from
        if not (run / "metrics.jsonl").is_file():
            parser.exit(2, f"doctor: {run} has no metrics.jsonl; give a run directory\n")
        print(f"{trace_from_metrics(run, out)} epochs -> {out}")
        return 0
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    unknown = wanted - {c.name for c in CASES} - {c.rule for c in CASES} - {"healthy"}
    if unknown or args.seeds < 1:
        parser.exit(2, f"doctor: unknown case {sorted(unknown)[0]!r}; cases: "
                       f"{', '.join(c.name for c in CASES)}\n" if unknown else
                    "doctor: --seeds must be at least 1\n")
    cases = [c for c in CASES if not wanted or c.name in wanted or c.rule in wanted
             or ("healthy" in wanted and c.rule is None)]
    # lazy: torch (the CPU capability) and git, which --report and --trace-from do not need
    from puffer_tui.benchmarks.run_record import finish, record

    run_info = record(shlex.join(["python", "-m", "puffer_tui.benchmarks.doctor",
                                  *(sys.argv[1:] if argv is None else argv)]))
    root = args.runs_dir or Path(tempfile.mkdtemp(prefix="puffer-doctor-"))
    results, rows = [], []
    try:
        for case in cases:
            results.append(run_case(case, args.seeds, root, args.fixtures))
            rows.append(summarise(results[-1]))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    finally:
        if args.runs_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(f"python -m puffer_tui.benchmarks.doctor --seeds {args.seeds}"
          f"{' --only ' + args.only if args.only else ''}  ({time.strftime('%Y-%m-%d')})")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({**finish(run_info), "rows": rows,
                                         "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
