"""The README's Python API examples, exactly as printed, run as scripts and reach their
thresholds: CartPole-v1 trained to 475+ and its curve, policy and evaluation read back;
three seeds of Pendulum-v1 with a median final return; the exported CartPole policy played
by onnxruntime with torch and puffer-tui out of reach."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example(name: str) -> str:
    text = README.read_text()
    marker = f"<!-- example:{name} -->"
    assert marker in text, f"README.md has no {marker}"
    match = re.search(r"```python\n(.*?)```", text[text.index(marker):], flags=re.S)
    assert match, f"README.md has no ```python block after {marker}"
    return match.group(1)


def run_script(code: str, cwd: Path, prelude: str = "") -> str:
    script = cwd / "example.py"
    script.write_text(prelude + code)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            cwd=cwd, timeout=600)
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
def test_cartpole_example_solves_and_its_export_runs_without_torch(tmp_path):
    pytest.importorskip("onnx", reason="the example exports ONNX: the export extra")
    pytest.importorskip("onnxruntime", reason="the ONNX example needs onnxruntime")
    code = readme_example("api-cartpole")
    assert len(code.strip().splitlines()) <= 10  # "a script of 10 lines"
    out = run_script(code, tmp_path)
    assert number_after("evaluation return:", out) >= 475, out
    assert (tmp_path / "cartpole.onnx").is_file()
    assert (tmp_path / "runs").is_dir()  # the runs root of a script is ./runs, as the CLI's
    out = run_script(readme_example("onnx-only"), tmp_path, prelude=NO_TORCH)
    assert number_after("return:", out) >= 475, out


@pytest.mark.learning
def test_seeds_example_prints_the_median_of_three_pendulum_runs(tmp_path):
    out = run_script(readme_example("api-seeds"), tmp_path)
    assert number_after("median final return:", out) > -300, out  # random: about -1,200
    assert len(list((tmp_path / "runs").iterdir())) == 3
