"""PufferLib 3.0 as gpu_check's peer: built from its sdist where it runs, timed on the same envs.

    build(sdist, workdir) -> {"ok": ..., "src": DIR, "cuda_kernel": ..., "reason": ...}
    measure(src, env, mode, ...) -> {"sps": ..., "parameters": ..., ...} or {"error": ...}

The build unpacks the sdist and runs its own setup.py (`build_ext --inplace`): the CUDA
advantage kernel (pufferlib/extensions/cuda/pufferlib.cu, with nvcc when nvcc is on PATH) and
the C bindings of the ocean envs measured, nothing else. Its setup.py downloads raylib for the
web and Box2D at build time; the machine it targets reaches no network, and neither is needed
for these envs (raylib for Linux ships in the sdist), so empty folders stand in for them.
tools/gpu_prepare.py trims the 60 MB sdist to what this build reads (docs/gpu.md).

Each timed case runs in its own process (`python -m puffer_tui.benchmarks.gpu_peer run ...`)
through PufferLib's own entry points (pufferl.load_config, load_env, load_policy, PuffeRL),
with its dashboard's output sent to a log: modes "preset" (its config file as shipped) and
"matched" (the model set to ours: hidden size and recurrence; its env counts kept).

Tested in: tests/benchmarks/test_gpu_check.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# our env name -> PufferLib's (ocean)
PEER_ENVS = {"squared": "puffer_squared", "breakout": "puffer_breakout",
             "snake": "puffer_snake", "cartpole": "puffer_cartpole"}
# what its setup.py would download (skipped when the folder exists); unused by these envs
_DOWNLOADED = ("raylib-5.5_webassembly", "box2d-web", "box2d-linux-amd64")


def find_sdist(folder: Path) -> Path | None:
    found = sorted(Path(folder).glob("pufferlib-3.0*.tar.gz")) if folder else []
    return found[-1] if found else None


def _extract(sdist: Path, dest: Path) -> Path:
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        tar.extractall(dest, filter="data")
    return dest / top


def build(sdist: Path, workdir: Path, envs, jobs: int, timeout: float,
          cuda: bool = True) -> dict:
    """Unpack and build PufferLib in `workdir`; keeps only the ocean bindings of `envs`.
    `cuda` False (a CPU dry run) hides nvcc from its setup.py: the CPU kernel alone."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "pufferlib-build.log"
    try:
        src = _extract(sdist, workdir)
    except (OSError, tarfile.TarError) as e:
        return {"ok": False, "reason": f"cannot unpack {sdist.name}: {e}"}
    keep = {PEER_ENVS[e].removeprefix("puffer_") for e in envs if e in PEER_ENVS}
    ocean = src / "pufferlib" / "ocean"
    for binding in ocean.glob("*/binding.c"):  # setup.py globs every ocean binding
        if binding.parent.name not in keep:
            binding.unlink()
    for name in _DOWNLOADED:
        (src / name).mkdir(exist_ok=True)
    # Its C envs compile with -flto; the GPU image's gcc (/opt/gcc) cannot run lto-wrapper at
    # the link, so every binding failed there (2026-11-27). Each binding is one translation
    # unit linked to a static raylib: -O2 without LTO steps the same.
    setup_py = src / "setup.py"
    setup_py.write_text(setup_py.read_text().replace("'-flto',", ""))
    env = dict(os.environ)
    if not cuda:
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if not (Path(d) / "nvcc").exists())
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc:
        import torch

        if torch.cuda.is_available():  # only this card's architecture: a quicker build
            major, minor = torch.cuda.get_device_capability()
            env.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
    env.setdefault("MAX_JOBS", str(jobs))
    command = [sys.executable, "setup.py", "build_ext", "--inplace", "-j", str(jobs)]
    start = time.perf_counter()
    try:
        with open(log, "w") as out:
            done = subprocess.run(command, cwd=src, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "reason": f"build ran past {timeout:.0f} s (log: {log})"}
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return {"ok": False, "reason": f"setup.py build_ext exited {done.returncode}: "
                                       + " | ".join(tail), "log": str(log)}
    return {"ok": True, "src": str(src), "seconds": seconds, "log": str(log), "flags": "-O2, no -flto",
            "cuda_kernel": bool(nvcc) and "pufferlib.cu" in log.read_text(errors="replace"),
            "nvcc": nvcc}


def measure(src: str, env: str, mode: str, model: dict, rounds: int, seconds: float,
            device: str, workdir: Path, timeout: float, deps: str | None = None) -> dict:
    """One timed PufferLib case in a child process; its result or {"error": why}."""
    workdir.mkdir(parents=True, exist_ok=True)
    result_file = workdir / f"peer-{env}-{mode}.json"
    result_file.unlink(missing_ok=True)
    log = workdir / f"peer-{env}-{mode}.log"
    path = [src, deps, os.environ.get("PYTHONPATH")]
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    command = [sys.executable, "-m", "puffer_tui.benchmarks.gpu_peer", "run", PEER_ENVS[env],
               "--mode", mode, "--model", json.dumps(model), "--rounds", str(rounds),
               "--seconds", str(seconds), "--device", device, "--result", str(result_file)]
    try:
        with open(log, "w") as out:
            done = subprocess.run(command, cwd=workdir, env=child_env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {timeout:.0f} s (log: {log.name})"}
    if not result_file.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-2:]
        return {"error": f"exited {done.returncode}: " + " | ".join(tail)}
    return json.loads(result_file.read_text())


# -- the child: PufferLib's own loop, timed ------------------------------------------------


def _run(args) -> int:
    # PufferLib reads its settings from sys.argv (pufferl.load_config parses it)
    sys.argv = ["pufferl", "--train.device", args.device]
    import torch
    from pufferlib import pufferl

    config = pufferl.load_config(args.env)
    model = json.loads(args.model)
    if args.mode == "matched":
        config["policy"]["hidden_size"] = model["hidden_size"]
        if model.get("recurrent"):
            config["rnn"].update(input_size=model["hidden_size"],
                                 hidden_size=model["hidden_size"])
        else:
            config["rnn_name"] = None
        config["train"]["use_rnn"] = bool(model.get("recurrent"))
        config["train"]["precision"] = model.get("precision", "float32")
    # Its presets ask for up to 16 workers, and it refuses more workers than physical cores
    # (a VM may count hyperthreads as cores): run as shipped rather than not at all.
    config["vec"]["overwork"] = True
    config["train"]["total_timesteps"] = 10**12
    config["train"]["checkpoint_interval"] = 10**9  # no checkpoints while timed
    vecenv = pufferl.load_env(args.env, config)
    policy = pufferl.load_policy(config, vecenv)
    if not hasattr(policy, "forward_eval"):
        # Its Snake policy has forward() alone and gets forward_eval from the LSTM wrapper, so
        # without the LSTM its own loop failed (AttributeError, on the H100 2026-11-27); the
        # unwrapped step is forward(), which takes and returns what forward_eval does.
        policy.forward_eval = policy.forward
    trainer = pufferl.PuffeRL(dict(**config["train"], env=args.env), vecenv, policy)
    cuda = str(config["train"]["device"]).startswith("cuda")
    trainer.evaluate()  # warm-up epoch, as ours: not counted
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
    round_sps = []
    for _ in range(args.rounds):
        start_step, start = trainer.global_step, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            trainer.evaluate()
            trainer.train()
        if cuda:
            torch.cuda.synchronize()
        round_sps.append((trainer.global_step - start_step) / (time.perf_counter() - start))
    profile = {name: float(p.get("elapsed", 0.0)) for name, p in trainer.profile}
    import statistics

    result = {"env": args.env, "mode": args.mode, "sps": statistics.median(round_sps),
              "round_sps": round_sps, "num_agents": int(vecenv.num_agents),
              "parameters": sum(p.numel() for p in policy.parameters()),
              "precision": config["train"]["precision"],
              "optimizer": config["train"]["optimizer"],
              "hidden_size": config["policy"].get("hidden_size", 128),
              "recurrent": config["rnn_name"] is not None,
              "profile_s": profile,
              "gpu_memory_peak_bytes": torch.cuda.max_memory_allocated() if cuda else None}
    Path(args.result).write_text(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # PufferLib's utilisation thread and vec workers would keep the process up


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.gpu_peer")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="time one PufferLib case (a child of gpu_check)")
    r.add_argument("env")
    r.add_argument("--mode", choices=("preset", "matched"), default="preset")
    r.add_argument("--model", default="{}")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--seconds", type=float, default=5.0)
    r.add_argument("--device", default="cuda")
    r.add_argument("--result", required=True)
    args = p.parse_args(argv)
    try:
        return _run(args)
    except BaseException:
        # PufferLib's vec workers and threads would keep a failed child up until gpu_check's
        # timeout: say why, then end it now
        import traceback

        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
