"""`python -m puffer_tui.benchmarks.gpu_check --out DIR`: every GPU check in one call.

1. the CUDA-marked tests (`pytest -m cuda tests`), their closing line kept;
2. per env (squared, breakout, snake, cartpole, gym:ALE/Pong-v5, gym:HalfCheetah-v5) and per
   precision (float32, bfloat16): training agent-steps/s, the median of rounds after a warm-up
   epoch, the share of each phase (env, forward, copy, learn, misc), peak GPU memory and
   utilisation (benchmarks/gpu_measure.py, a process per case);
3. `--train.nproc N` where N > 1 GPUs exist (a headless run through torchrun);
4. PufferLib 3.0 built from its sdist in --peer-dir and timed on the same native envs, with its
   own presets and with our model (benchmarks/gpu_peer.py), and our ratio to it.
Writes DIR/gpu_check.json and DIR/gpu_check.md, rewritten (atomically) after every case, so a
run cut short leaves what it measured. Without CUDA it says so; `--device cpu` measures on the
CPU instead (a dry run of the same code, for testing it where there is no GPU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from puffer_tui.benchmarks import gpu_peer
from puffer_tui.benchmarks.gpu_report import markdown, write_atomic

ENVS = ("squared", "breakout", "snake", "cartpole", "gym:ALE/Pong-v5", "gym:HalfCheetah-v5")
PRECISIONS = ("float32", "bfloat16")


def environment(device: str) -> dict:
    import torch

    cuda = torch.cuda.is_available()
    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version(),
            "torch": torch.__version__, "torch_cuda": torch.version.cuda,
            "cuda_available": cuda, "gpus": torch.cuda.device_count() if cuda else 0,
            "gpu_names": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if cuda else [], "nvcc": shutil.which("nvcc"), "cpus": os.cpu_count(),
            "device": device, "command": " ".join(sys.argv)}
    if not cuda:
        info["note"] = (f"no CUDA: torch {torch.__version__} ({'a CPU-only build' if torch.version.cuda is None else 'CUDA ' + torch.version.cuda}) "
                        "sees no GPU here; nothing below ran on a GPU")
    return info


class Deadline:
    """Cases start only while enough of the budget is left for them; the rest are recorded as
    skipped with the reason, so one call always ends inside its limit."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def run_tests(out: Path, timeout: float) -> dict:
    log = out / "cuda_tests.log"
    command = [sys.executable, "-m", "pytest", "-m", "cuda", "-rs", "-q", "-p",
               "no:cacheprovider", "tests"]
    try:
        with open(log, "w") as f:
            done = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "closing_line": f"ran past {timeout:.0f} s", "log": log.name}
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    closing = next((ln for ln in reversed(lines) if re.search(
        r"\b(passed|failed|skipped|deselected|error|no tests ran)\b", ln)), "")
    return {"status": "ok" if done.returncode in (0, 5) else "failed",
            "exit_code": done.returncode, "closing_line": closing, "log": log.name}


def _child(command: list[str], timeout: float, marker: str) -> dict:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith(marker):
            return json.loads(line[len(marker):])
    tail = (done.stderr or done.stdout).strip().splitlines()[-2:]
    return {"error": f"exited {done.returncode}: " + " | ".join(tail)}


def env_sets(items: list[str]) -> dict[str, list[str]]:
    """`--set-env ENV:KEY=VALUE` items by env (ENV may hold ':' itself: gym:ALE/Pong-v5)."""
    out: dict[str, list[str]] = {}
    for item in items:
        head, sep, value = item.partition("=")
        env, colon, key = head.rpartition(":")
        if not (sep and colon and env and key):
            raise ValueError(f"--set-env takes ENV:KEY=VALUE, got {item!r}")
        out.setdefault(env, []).append(f"{key}={value}")
    return out


def measure_ours(env: str, precision: str, args) -> dict:
    sets = [f"train.precision={precision}", f"train.device={args.device}", *args.set,
            *args.env_overrides.get(env, [])]
    command = [sys.executable, "-m", "puffer_tui.benchmarks.gpu_measure", env,
               "--rounds", str(args.rounds), "--seconds", str(args.seconds)]
    for s in sets:
        command += ["--set", s]
    result = _child(command, args.case_timeout, "GPU_MEASURE_RESULT ")
    return {"env": env, "precision": precision, **result}


def measure_nproc(gpus: int, args, work: Path) -> dict:
    """A headless run of squared with one learner per GPU; steps/s from its metrics rows."""
    runs = work / "nproc-runs"
    steps = 50_000_000
    command = [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
               "--runs-dir", str(runs), "--train.nproc", str(gpus), "--train.device", "cuda",
               "--train.total-timesteps", str(steps)]
    try:
        subprocess.run(command, capture_output=True, timeout=args.rounds * args.seconds + 60)
    except subprocess.TimeoutExpired:
        pass  # the budget is time, not steps: the rows written so far are the measurement
    rows = []
    for metrics in runs.glob("*/metrics.jsonl"):
        for line in metrics.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    sps = sorted(r["sps"] for r in rows[1:] if r.get("sps"))
    if not sps:
        return {"nproc": gpus, "error": "the run wrote no metrics rows"}
    return {"nproc": gpus, "sps": sps[len(sps) // 2], "rows": len(sps)}


def run_peer(envs, ours: list[dict], args, work: Path, build) -> list[dict]:
    rows = []
    for env in [e for e in envs if e in gpu_peer.PEER_ENVS]:
        mine = next((r for r in ours if r["env"] == env and r["precision"] == "float32"
                     and "sps" in r), None)
        model = {"hidden_size": (mine or {}).get("hidden_size", 128),
                 "recurrent": bool((mine or {}).get("recurrent")),
                 "precision": "float32"}
        for mode in ("preset", "matched"):
            if args.deadline.left() < args.rounds * args.seconds + 30:
                rows.append({"env": env, "mode": mode, "skipped": "out of time"})
                yield rows  # a skipped case is reported too, not dropped
                continue
            result = gpu_peer.measure(build["src"], env, mode, model, args.rounds,
                                      args.seconds, args.device, work / "peer",
                                      args.case_timeout, args.peer_deps)
            rows.append({**result, "peer_env": result.get("env"), "env": env, "mode": mode})
            yield rows


def print_reports(paths: list[Path]) -> int:
    """Each saved report's Markdown, as the run that measured it wrote it."""
    for i, path in enumerate(paths):
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"gpu_check: error: --report {path}: {e}", file=sys.stderr)
            return 2
        print(("\n" if i else "") + markdown(report), end="")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.gpu_check",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="folder for gpu_check.json, gpu_check.md (required to measure)")
    p.add_argument("--report", metavar="JSON", action="append", type=Path,
                   help="print the tables of saved gpu_check.json reports and measure nothing "
                        "(the docs' GPU tables are printed this way)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default), or cpu for a dry run where there is no GPU")
    p.add_argument("--envs", default=",".join(ENVS), help="comma-separated env specs")
    p.add_argument("--precisions", default=None,
                   help="comma-separated (default float32,bfloat16 on cuda, float32 on cpu)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0, help="per round")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for every case of ours (e.g. vec.num_envs=64)")
    p.add_argument("--set-env", action="append", default=[], metavar="ENV:KEY=VALUE",
                   help="an override for one env's cases (e.g. squared:vec.num_envs=8192, "
                        "to match the peer's env count)")
    p.add_argument("--budget", type=float, default=540.0,
                   help="wall seconds for the whole call; cases that would not fit are skipped")
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.add_argument("--no-tests", action="store_true", help="skip the CUDA-marked tests")
    p.add_argument("--peer-dir", default=None,
                   help="folder holding PufferLib's sdist (tools/gpu_prepare.py); none: no peer")
    p.add_argument("--peer-deps", default=None, help="extra PYTHONPATH for PufferLib's deps")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    args = p.parse_args(argv)
    if args.report:
        return print_reports(args.report)
    if not args.out:
        p.error("--out is required to measure (or --report JSON to print saved reports)")
    try:
        args.env_overrides = env_sets(args.set_env)  # parsed once, checked before anything runs
    except ValueError as e:
        print(f"gpu_check: error: {e}", file=sys.stderr)
        return 2
    envs = [e for e in args.envs.split(",") if e]
    precisions = (args.precisions.split(",") if args.precisions else
                  list(PRECISIONS) if args.device == "cuda" else ["float32"])
    bad = [x for x in precisions if x not in ("float32", "bfloat16", "auto")]
    if not envs or bad or args.rounds < 1 or not args.seconds > 0 or not args.budget > 0:
        print("gpu_check: error: give --envs, --precisions among float32,bfloat16,auto, "
              "--rounds >= 1, --seconds > 0 and --budget > 0", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    args.deadline = Deadline(args.budget)
    info = environment(args.device)
    report = {"environment": info, "settings": {
        "envs": envs, "precisions": precisions, "rounds": args.rounds,
        "seconds": args.seconds, "overrides": args.set,
        "env_overrides": args.env_overrides}, "tests": None, "ours": [],
        "nproc": None, "peer": None}

    def save():
        write_atomic(out / "gpu_check.json", json.dumps(report, indent=1) + "\n")
        write_atomic(out / "gpu_check.md", markdown(report))

    if args.device == "cuda" and not info["cuda_available"]:
        print(f"gpu_check: {info['note']}; --device cpu measures on the CPU instead",
              file=sys.stderr)
        report["error"] = info["note"]
        save()
        return 1
    save()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        peer_build = None
        sdist = None
        if args.peer_dir:
            sdist = gpu_peer.find_sdist(Path(args.peer_dir))
            if sdist is None:
                report["peer"] = {"skipped": f"no pufferlib-3.0*.tar.gz in {args.peer_dir}"}
        else:
            report["peer"] = {"skipped": "no --peer-dir (tools/gpu_prepare.py fetches the sdist)"}
        if sdist is not None:  # built while the tests run: neither is timed
            import concurrent.futures

            pool = concurrent.futures.ThreadPoolExecutor(1)
            peer_build = pool.submit(gpu_peer.build, sdist, work / "pufferlib", envs,
                                     os.cpu_count() or 1, min(420.0, args.budget / 2),
                                     args.device == "cuda")
        if args.no_tests:
            report["tests"] = {"status": "skipped", "closing_line": "--no-tests"}
        else:
            report["tests"] = run_tests(out, min(240.0, args.deadline.left()))
        print(f"cuda tests: {report['tests']['closing_line']}", flush=True)
        save()
        if peer_build is not None:
            build = peer_build.result()
            pool.shutdown()
            report["peer"] = {"build": build, "rows": []}
            save()
        for env in envs:
            for precision in precisions:
                if args.deadline.left() < args.rounds * args.seconds + 20:
                    report["ours"].append({"env": env, "precision": precision,
                                           "skipped": "out of time"})
                    continue
                row = measure_ours(env, precision, args)
                report["ours"].append(row)
                print(f"{env} {precision}: " + (f"{row['sps']:,.0f} steps/s" if "sps" in row
                                                else row.get("error", "")), flush=True)
                save()
        gpus = info["gpus"] if args.device == "cuda" else 0
        report["nproc"] = measure_nproc(gpus, args, work) if gpus > 1 else {
            "skipped": f"{gpus} CUDA device(s): --train.nproc needs more than one"}
        save()
        if report["peer"] and "build" in report["peer"]:
            if not report["peer"]["build"]["ok"]:
                report["peer"]["skipped"] = report["peer"]["build"]["reason"]
            else:
                for rows in run_peer(envs, report["ours"], args, work, report["peer"]["build"]):
                    report["peer"]["rows"] = list(rows)
                    save()
        save()
    print(markdown(report))
    failed = report["tests"] and report["tests"]["status"] == "failed"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
