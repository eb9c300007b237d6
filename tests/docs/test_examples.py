"""Every example of the README and the docs runs, exactly as printed, and prints what it says.

The convention, in the Markdown: a comment line before a fenced block.

    <!-- example:NAME -->             the block below runs (bash: each line in one shell;
                                      python: as a script), in a fresh folder
    <!-- example-file:NAME PATH -->   the block below is written to PATH in NAME's folder first
    <!-- not-run: WHY -->             a bash or python block that is not an example (a file's
                                      contents, a command for a GPU machine...), and why
    <!-- ci:STEP -->                  the README's install and test commands, which .ci/run
                                      runs (tests/test_ci_script.py)

EXAMPLES below says, for each NAME, what its output must show and what it needs. A guide page's
bash or python block without one of the three markers fails `test_every_block_is_marked`, and
a marker without an entry here fails `test_every_example_is_checked`, so a new example cannot go
untested. Commands that open the dashboard run here headless (`HEADLESS`): the dashboard itself
is drawn from a real run by tools/docs_screenshots.py (tests/test_docs_screenshots.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the pages a user reads for how-to; the reference pages (architecture, protocol, design, GPU
# and many-machines runbooks, the generated CLI reference) hold commands for other machines
GUIDES = ["README.md", *(f"docs/{name}.md" for name in (
    "index", "getting-started", "dashboard", "train-any-env", "configuration", "runs",
    "evaluation", "diagnosis", "sweeps", "trackers-and-browser", "api", "speed", "benchmarks",
    "contributing"))]
MARKER = re.compile(r"^<!-- (example-file|example|not-run|ci):? ?(.*?) -->\n```(\w+)\n(.*?)^```",
                    re.M | re.S)
FENCE = re.compile(r"^```(bash|python)\n", re.M)
INDENTED_COMMAND = re.compile(r"^    (puffer-tui|python) .*$", re.M)
# what the test appends to a command that would open the dashboard, so that it ends by itself
HEADLESS = " --headless --train.total-timesteps 65536"


@dataclass(frozen=True)
class Example:
    expect: tuple[str, ...] = ()  # each a regex the output must match
    needs: tuple[str, ...] = ()  # modules of an extra: skipped (naming it) without them
    before: str = ""  # a command run first in the same folder (e.g. a run to evaluate)
    dashboard: bool = False  # its `puffer-tui train` lines open the dashboard: run headless
    marks: tuple[str, ...] = ()


FINISHED = r"finished: [\d,]+ steps; checkpoint "
EXAMPLES = {
    "readme-builtin": Example(expect=(FINISHED,)),
    "readme-gym": Example(expect=(FINISHED,)),
    "readme-own-env": Example(expect=(FINISHED,)),
    "readme-api": Example(expect=(r"evaluation return: [\d.]+",)),
    "readme-eval": Example(
        expect=(r"gym:CartPole-v1: 10 episodes", r"recording saved to .*play\.gif", r"wrote policy\.pt"),
        needs=("imageio",), before="puffer-tui train gym:CartPole-v1 --headless "
                                   "--train.total-timesteps 4096"),
    "readme-sweep": Example(expect=(r"sweep bandit-\S+ finished: 2 complete",),
                            needs=("optuna",), marks=("slow",)),
    "readme-first-run": Example(expect=(FINISHED,), dashboard=True),
    "first-run": Example(expect=(FINISHED,), dashboard=True),
    "sweep-best": Example(expect=(r"finished: [\d,]+ steps",), needs=("optuna",),
                          marks=("slow",)),
    "first-run-headless": Example(expect=(FINISHED, r"squared-\d+")),
    "config-preset": Example(expect=(FINISHED,)),
    "eval-play": Example(expect=(r'"episode_return"',)),
    "eval-during-training": Example(expect=(FINISHED, r"10 episodes from best\.pt",
                                            r"\.(gif|mp4)"), needs=("imageio",),
                                    marks=("slow",)),
    "eval-record": Example(expect=(r"recording saved to \S+/recordings/best\.gif",
                                   r"recording saved to overlay\.gif"), needs=("imageio", "PIL"),
                           marks=("slow",)),
    "runs-lifecycle": Example(expect=(r"stopped: [\d,]+ steps", r"branch of squared-",
                                      r"└─squared-"), marks=("slow",)),
    "autotune": Example(expect=(r"saved .* to cartpole-fast\.toml", FINISHED), marks=("slow",)),
    "diagnosis-kl-blowup": Example(expect=(r"warning diagnosis kl_blowup: .*suggested: "
                                           r"train\.learning_rate 0\.15 -> 0\.015",)),
    "env-own-module": Example(expect=(FINISHED,)),
    "env-gym-id": Example(expect=(FINISHED,)),
    "env-pettingzoo": Example(expect=(FINISHED,), needs=("pettingzoo", "mpe2")),
    "env-minigrid": Example(expect=(FINISHED,), needs=("minigrid",)),
    "env-atari": Example(expect=(FINISHED,), needs=("ale_py",), marks=("slow",)),
    "env-mujoco": Example(expect=(FINISHED,), needs=("mujoco",)),
    # pip installs the plugin into a folder of the test's (--target), not into the test's
    # virtualenv: the folder goes on PYTHONPATH, where its entry point is found
    "env-c-plugin": Example(expect=(r"corridor", FINISHED), needs=("Cython",), marks=("slow",)),
    # the API examples that train to a threshold: test_api_examples_reach_their_thresholds
    "api-cartpole": Example(marks=("learning",)),
    "onnx-only": Example(marks=("learning",)),
    "api-seeds": Example(marks=("learning",)),
    # run three ways: test_vec_example_runs_as_a_script_from_stdin_and_from_c
    "vec-api": Example(),
}
RUN_APART = {"api-cartpole", "onnx-only", "api-seeds", "vec-api"}


@dataclass(frozen=True)
class Block:
    kind: str  # example, example-file, not-run
    name: str
    path: str  # example-file's PATH
    language: str
    code: str
    page: str


def blocks() -> list[Block]:
    found = []
    for page in GUIDES:
        for m in MARKER.finditer((ROOT / page).read_text()):
            kind, arg, language, code = m.groups()
            name, _, path = arg.partition(" ")
            found.append(Block(kind, name, path, language, code, page))
    return found


def example(name: str) -> Block:
    matches = [b for b in blocks() if b.kind == "example" and b.name == name]
    assert len(matches) == 1, f"{len(matches)} blocks marked example:{name}"
    return matches[0]


def test_every_example_is_checked():
    names = [b.name for b in blocks() if b.kind == "example"]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert set(names) == set(EXAMPLES), (set(names) ^ set(EXAMPLES))
    files = {b.name for b in blocks() if b.kind == "example-file"}
    assert files <= set(names), files - set(names)


def test_every_block_is_marked():
    unmarked = []
    for page in GUIDES:
        text = (ROOT / page).read_text()
        marked = {m.start(3) - 3 for m in MARKER.finditer(text)}  # where each marked fence opens
        unmarked += [f"{page}:{text.count(chr(10), 0, fence.start()) + 1} ({fence.group(1)})"
                     for fence in FENCE.finditer(text) if fence.start() not in marked]
        # a command as an indented block, outside any fence, would escape the marker rule
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        unmarked += [f"{page}: indented {m.group(0).strip()[:40]!r}"
                     for m in INDENTED_COMMAND.finditer(prose)]
    assert not unmarked, ("blocks without <!-- example:NAME -->, <!-- example-file:NAME PATH -->"
                          " or <!-- not-run: WHY --> before them: " + ", ".join(unmarked))


def shell_env(tmp_path: Path) -> dict:
    """The test's own virtualenv first on PATH (its `puffer-tui`, `python` and `pip`)."""
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "PUFFER_TUI_RUNS"}
    return {**env, "PATH": bin_dir + os.pathsep + env.get("PATH", ""), "COLUMNS": "120",
            "NO_COLOR": "1"}


def headless(code: str) -> str:
    return "\n".join(line + HEADLESS if line.startswith("puffer-tui train ") else line
                     for line in code.splitlines())


def plugin_into(code: str, target: Path) -> str:
    return code.replace("pip install --no-build-isolation ./examples/",
                        f"pip install -q --no-build-isolation --no-deps --target {target} "
                        f"{ROOT}/examples/")


@pytest.mark.parametrize("name", [pytest.param(n, marks=[getattr(pytest.mark, m)
                                                         for m in e.marks])
                                  for n, e in EXAMPLES.items() if n not in RUN_APART])
def test_example_runs_and_prints_what_it_says(name, tmp_path):
    spec = EXAMPLES[name]
    for module in spec.needs:
        pytest.importorskip(module, reason=f"example:{name} needs {module} (its extra)")
    block = example(name)
    for file in blocks():
        if file.kind == "example-file" and file.name == name:
            (tmp_path / file.path).write_text(file.code)
    env = shell_env(tmp_path)
    code = headless(block.code) if spec.dashboard else block.code
    if name == "env-c-plugin":
        target = tmp_path / "site"
        code = plugin_into(code, target)
        env["PYTHONPATH"] = str(target)
    if spec.before:
        before = subprocess.run(["bash", "-euo", "pipefail", "-c", spec.before], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=300)
        assert before.returncode == 0, before.stderr[-3000:]
    argv = (["bash", "-euo", "pipefail", "-c", code] if block.language == "bash"
            else [sys.executable, "-c", code])
    result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"{block.page}: example:{name}\n{out[-3000:]}"
    for pattern in spec.expect:
        assert re.search(pattern, out), f"{block.page}: example:{name}: no {pattern!r} in\n{out[-3000:]}"


def run_script(code: str, cwd: Path, prelude: str = "") -> str:
    script = cwd / "example.py"
    script.write_text(prelude + code)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            cwd=cwd, timeout=600, env=shell_env(cwd))
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def number_after(label: str, out: str) -> float:
    match = re.search(rf"{re.escape(label)}\s*(-?[\d.]+)", out)
    assert match, out
    return float(match.group(1))


# torch and puffer_tui made unimportable: what a machine with only onnxruntime and gymnasium has
NO_TORCH = ("import sys\n"
            "for _name in ('torch', 'puffer_tui'):\n"
            "    sys.modules[_name] = None\n")


@pytest.mark.learning
def test_api_example_solves_cartpole_and_its_export_runs_without_torch(tmp_path):
    """The API page's CartPole script reaches 475+ in evaluation, and the ONNX file it exports
    plays CartPole-v1 as well with onnxruntime alone (the evaluation page's example)."""
    pytest.importorskip("onnx", reason="the example exports ONNX: the export extra")
    pytest.importorskip("onnxruntime", reason="the ONNX example needs onnxruntime")
    code = example("api-cartpole").code
    assert len(code.strip().splitlines()) <= 10  # "a script of 10 lines"
    out = run_script(code, tmp_path)
    assert number_after("evaluation return:", out) >= 475, out
    assert (tmp_path / "cartpole.onnx").is_file()
    assert (tmp_path / "runs").is_dir()  # the runs root of a script is ./runs, as the CLI's
    out = run_script(example("onnx-only").code, tmp_path, prelude=NO_TORCH)
    assert number_after("return:", out) >= 475, out


@pytest.mark.learning
def test_seeds_example_prints_the_median_of_three_pendulum_runs(tmp_path):
    out = run_script(example("api-seeds").code, tmp_path)
    assert number_after("median final return:", out) > -300, out  # random: about -1,200
    assert len(list((tmp_path / "runs").iterdir())) == 3


@pytest.mark.parametrize("how", ["script", "stdin", "-c"])
def test_vec_example_runs_as_a_script_from_stdin_and_from_c(tmp_path, how):
    """The vectorizer example works however Python is given it: the multiprocessing workers
    must not need the caller's __main__."""
    code = example("vec-api").code
    assert "vec.make(" in code and 'backend="multiprocessing"' in code  # the part that broke
    if how == "script":
        script = tmp_path / "example.py"
        script.write_text(code)
        argv, stdin = [sys.executable, str(script)], None
    elif how == "stdin":
        argv, stdin = [sys.executable, "-"], code
    else:
        argv, stdin = [sys.executable, "-c", code], None
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Discrete(5) (4096,) (4096, 121)" in result.stdout, result.stdout
