"""Build the sdist and the wheel, install the wheel where no compiler can be found, and use it.

    python tools/wheel_check.py                 # build from this checkout into dist/
    python tools/wheel_check.py --wheel dist/puffer_tui-0.1.0-cp311-cp311-linux_x86_64.whl
    python tools/wheel_check.py --pipx          # also `pipx install` the wheel

What a user of `pip install puffer_tui-*.whl` gets is checked, not what a clone has:

1. `python -m build` makes both; the wheel must hold every compiled extension (one per env
   folder with a binding.pyx, one per engine/native .pyx), the styles (.tcss), the presets
   and env configs (.toml), and the C headers and .pxd files a plugin env builds against;
   the sdist the sources those come from.
2. A fresh virtualenv gets torch (by version, as the README's install does) and then the
   wheel, with PATH holding only the virtualenv's bin/ and CC/CXX pointing nowhere: an
   install that needed to compile anything fails here.
3. With that PATH: `puffer-tui --help`, `puffer-tui envs`, a short headless squared run that
   finishes, the launcher's first screen under Textual's Pilot, and the Python API.
4. The example plugin env (examples/puffer_tui_corridor, a C env of another package) builds
   against the installed wheel's headers (with the compiler back) and trains.
5. The README's ONNX example: a CartPole policy trained and exported with the wheel (the
   README's API example) solves CartPole-v1 in another fresh virtualenv that holds only
   onnxruntime and gymnasium: no torch, no puffer-tui.
6. `--pipx`: `pipx install` of the wheel gives a `puffer-tui` that answers `envs`.

Run by .ci/run after the test runs. Exits non-zero, naming the step, on the first failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"  # the README's install line picks torch first, by version
PILOT = """
import asyncio
from puffer_tui.app.app import PufferApp
from puffer_tui.screens.launcher.screen import LauncherScreen

async def main():
    app = PufferApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert isinstance(app.screen, LauncherScreen), app.screen
        print("launcher up:", type(app.screen).__name__)
        await pilot.press("q")

asyncio.run(main())
"""
API = """
import puffer_tui
run = puffer_tui.train("squared", total_timesteps=8192, vec={"num_envs": 64},
                       train={"minibatch_size": 512}, runs_dir="api-runs")
assert run.state == "finished", run.state
print("api run:", run.state, run.global_step, puffer_tui.load(run))
"""




def readme_example(name: str) -> str:
    """A ```python block of the README or the docs, after its <!-- example:NAME --> marker."""
    import re

    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))])
    marker = f"<!-- example:{name} -->"
    match = re.search(r"```python\n(.*?)```", text[text.index(marker):], flags=re.S)
    return match.group(1)


class CheckFailed(RuntimeError):
    pass


def step(title: str, argv: list[str], env: dict | None = None, cwd: Path | None = None,
         expect: str | None = None, timeout: float = 900) -> str:
    print(f"+ [{title}] {' '.join(map(str, argv))}", flush=True)
    result = subprocess.run(list(map(str, argv)), env=env, cwd=cwd, capture_output=True,
                            text=True, timeout=timeout)
    out = result.stdout + result.stderr
    problem = None
    if result.returncode != 0:
        problem = f"{title}: exit status {result.returncode}\n{out[-4000:]}"
    elif expect is not None and expect not in out:
        problem = f"{title}: {expect!r} not in its output\n{out[-4000:]}"
    if problem:  # said now: removing the virtualenvs afterwards takes a while
        print(f"wheel check failed: {problem}", file=sys.stderr, flush=True)
        raise CheckFailed(problem)
    return out


def wheel_contents(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def extension_prefixes() -> list[str]:
    """Each compiled module's path in the wheel up to its ABI tag (".cpython-311-...so")."""
    envs = sorted(p.parent.name for p in (ROOT / "envs").glob("*/binding.pyx"))
    kernels = sorted(p.stem for p in (ROOT / "engine/native").glob("*.pyx"))
    return ([f"puffer_tui/envs/{env}/binding." for env in envs]
            + [f"puffer_tui/engine/native/{k}." for k in kernels])


def required_files() -> list[str]:
    """Files the wheel must hold as they are: styles, headers a plugin builds against, the
    env configs and presets, the API."""
    wanted = ["puffer_tui/app/panels.tcss", "puffer_tui/screens/screens.tcss",
              "puffer_tui/engine/native/puffer_env.h", "puffer_tui/engine/native/puffer_env.pxd",
              "puffer_tui/engine/native/vecenv.pxi", "puffer_tui/engine/native/build.py",
              "puffer_tui/envs/squared/config.toml", "puffer_tui/envs/squared/squared.h",
              "puffer_tui/api.py"]
    return wanted + [f"puffer_tui/envs/gym_presets/{p.name}"
                     for p in sorted((ROOT / "envs/gym_presets").glob("*.toml"))]


def check_contents(wheel: Path, sdist: Path | None) -> None:
    names = wheel_contents(wheel)
    prefixes = extension_prefixes()
    missing = [f"{prefix}*.so" for prefix in prefixes
               if not any(n.startswith(prefix) and n.endswith(".so") for n in names)]
    missing += [name for name in required_files() if name not in names]
    if missing:
        raise CheckFailed("the wheel lacks: " + ", ".join(missing))
    print(f"wheel holds {len(prefixes)} compiled modules, the styles, presets and headers "
          f"({len(names)} files)", flush=True)
    if sdist is not None:
        import tarfile

        with tarfile.open(sdist) as archive:
            sources = archive.getnames()
        needed = ["setup.py", "pyproject.toml", "engine/native/puffer_env.h",
                  "envs/squared/binding.pyx", "app/panels.tcss"]
        lacking = [n for n in needed if not any(s.endswith("/" + n) for s in sources)]
        if lacking:
            raise CheckFailed("the sdist lacks: " + ", ".join(lacking))


def build(out: Path) -> tuple[Path, Path]:
    """sdist and wheel of a clean copy of the committed tree (no in-place build outputs)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        step("clean copy", ["git", "clone", "-q", ROOT, tree])
        step("build", [sys.executable, "-m", "build", "--outdir", out, tree])
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    if not wheels or not sdists:
        raise CheckFailed(f"python -m build made no wheel or sdist in {out}")
    return wheels[-1], sdists[-1]


def no_compiler_env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=str(venv / "bin"), CC="/nonexistent/cc", CXX="/nonexistent/c++",
               VIRTUAL_ENV=str(venv), PUFFER_TUI_RUNS=str(venv.parent / "runs"))
    return env


def check(wheel: Path, sdist: Path | None, pipx: bool) -> None:
    check_contents(wheel, sdist)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        venv = work / "venv"
        step("venv", [sys.executable, "-m", "venv", venv])
        python = venv / "bin" / "python"
        bare = no_compiler_env(venv)
        for tool in ("gcc", "cc", "clang"):
            if shutil.which(tool, path=bare["PATH"]):
                raise CheckFailed(f"{tool} is on the check's PATH; it must not be")
        step("torch", [python, "-m", "pip", "install", "-q", TORCH], env=bare)
        step("install the wheel without a compiler",
             [python, "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[export]"],
             env=bare)
        cli = venv / "bin" / "puffer-tui"
        step("--help", [cli, "--help"], env=bare, cwd=work, expect="train")
        step("envs", [cli, "envs"], env=bare, cwd=work, expect="squared")
        step("headless run", [cli, "train", "squared", "--headless", "--train.total-timesteps",
                              "8192", "--vec.num-envs", "64", "--train.minibatch-size", "512"],
             env=bare, cwd=work, expect="finished")
        (work / "pilot.py").write_text(PILOT)
        step("launcher under Pilot", [python, work / "pilot.py"], env=bare, cwd=work,
             expect="launcher up")
        (work / "api.py").write_text(API)
        step("Python API", [python, work / "api.py"], env=bare, cwd=work, expect="api run:")
        (work / "cartpole.py").write_text(readme_example("api-cartpole"))
        step("README API example", [python, work / "cartpole.py"], env=bare, cwd=work,
             expect="evaluation return:")
        onnx_venv = work / "onnx-venv"
        step("venv for onnxruntime alone", [sys.executable, "-m", "venv", onnx_venv])
        lean = no_compiler_env(onnx_venv)
        step("onnxruntime and gymnasium", [onnx_venv / "bin" / "python", "-m", "pip", "install",
                                           "-q", "onnxruntime", "gymnasium"], env=lean)
        (work / "onnx_only.py").write_text(readme_example("onnx-only"))
        out = step("exported policy without torch", [onnx_venv / "bin" / "python",
                                                     work / "onnx_only.py"], env=lean, cwd=work)
        returned = float(out.split("return:")[-1].split()[0])
        if returned < 475:
            raise CheckFailed(f"the exported CartPole policy returned {returned} (< 475)")
        print(f"exported policy under onnxruntime alone: return {returned}", flush=True)
        # the plugin env is C: it needs the compiler this check hid until now
        full = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
                "VIRTUAL_ENV": str(venv), "PUFFER_TUI_RUNS": str(work / "runs")}
        full.pop("PYTHONPATH", None)
        step("cython", [python, "-m", "pip", "install", "-q", "cython>=3.0", "setuptools>=77",
                        "wheel"], env=full)
        plugin = work / "corridor"
        shutil.copytree(ROOT / "examples" / "puffer_tui_corridor", plugin)
        step("plugin env against the wheel",
             [python, "-m", "pip", "install", "-q", "--no-build-isolation", plugin], env=full)
        step("plugin listed", [cli, "envs"], env=bare, cwd=work, expect="corridor")
        if pipx:
            step("pipx", [python, "-m", "pip", "install", "-q", "pipx"], env=full)
            home = work / "pipx"
            pipx_env = {**full, "PIPX_HOME": str(home), "PIPX_BIN_DIR": str(home / "bin")}
            step("pipx install", [venv / "bin" / "pipx", "install", "--pip-args", TORCH,
                                  wheel], env=pipx_env, timeout=1800)
            step("pipx's puffer-tui", [home / "bin" / "puffer-tui", "envs"], env=pipx_env,
                 cwd=work, expect="squared")
    print("wheel check passed", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="check this wheel instead of building one")
    parser.add_argument("--sdist", type=Path, help="with --wheel: check this sdist too")
    parser.add_argument("--out", type=Path, default=ROOT / "dist",
                        help="where the build writes (default dist/)")
    parser.add_argument("--pipx", action="store_true", help="also pipx install the wheel")
    args = parser.parse_args(argv)
    try:
        if args.wheel:
            wheel, sdist = args.wheel.resolve(), args.sdist
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            wheel, sdist = build(args.out.resolve())
        check(wheel, sdist, args.pipx)
    except CheckFailed as e:
        print(f"wheel check failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
