"""benchmarks/gpu_check.py on the CPU (its dry run), the cuda marker's skip, and
tools/gpu_prepare.py's check of the wheel set (network: skipped where PyPI is out of reach)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import torch
from tree_paths import REPO_ROOT

from puffer_tui.benchmarks.gpu_report import PHASES, markdown

ROOT = REPO_ROOT
TINY = ["--set", "vec.num_envs=16", "--set", "train.horizon=16",
        "--set", "train.minibatch_size=128", "--set", "train.hidden_size=16",
        "--set", "train.torch_threads=1"]


def _gpu_check(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "puffer_tui.benchmarks.gpu_check", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_cpu_dry_run_writes_the_json_and_the_table(tmp_path):
    done = _gpu_check("--out", str(tmp_path), "--device", "cpu", "--envs", "squared,nosuchenv",
                      "--rounds", "2", "--seconds", "0.3", "--no-tests", *TINY)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["environment"]["device"] == "cpu"
    assert report["settings"]["precisions"] == ["float32"]
    good, bad = report["ours"]
    assert good["env"] == "squared" and good["device"] == "cpu"
    assert len(good["round_sps"]) == 2 and good["sps"] > 0 and good["steps"] > 0
    assert min(good["round_sps"]) <= good["sps"] <= max(good["round_sps"])
    assert set(good["timing_pct"]) == set(PHASES)
    assert abs(sum(good["timing_pct"].values()) - 100) < 1e-6
    assert good["parameters"] > 0 and good["gpu_memory_peak_bytes"] is None
    assert bad["env"] == "nosuchenv" and "nosuchenv" in bad["error"]  # one case fails alone
    assert report["tests"]["status"] == "skipped"
    assert "needs more than one" in report["nproc"]["skipped"]
    assert "no --peer-dir" in report["peer"]["skipped"]
    table = (tmp_path / "gpu_check.md").read_text()
    assert table == markdown(report)
    assert f"| squared | float32 | {good['sps']:,.0f} |" in table
    if not torch.cuda.is_available():
        assert "no CUDA" in table


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message where CUDA is absent")
def test_without_cuda_it_says_so_and_measures_nothing(tmp_path):
    done = _gpu_check("--out", str(tmp_path), "--envs", "squared", "--no-tests")
    assert done.returncode == 1
    assert "no CUDA" in done.stderr and "--device cpu" in done.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert "no CUDA" in report["error"] and report["ours"] == []


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    done = _gpu_check("--out", str(tmp_path / "x"), "--device", "cpu", "--rounds", "0")
    assert done.returncode == 2 and "--rounds >= 1" in done.stderr
    assert not (tmp_path / "x").exists()


def test_a_missing_peer_sdist_is_skipped_with_the_reason(tmp_path):
    done = _gpu_check("--out", str(tmp_path), "--device", "cpu", "--envs", "squared",
                      "--rounds", "1", "--seconds", "0.2", "--no-tests",
                      "--peer-dir", str(tmp_path), *TINY)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert "no pufferlib-3.0*.tar.gz" in report["peer"]["skipped"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip where CUDA is absent")
def test_cuda_marked_tests_are_skipped_with_the_reason():
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-rs", "-q", "-p",
                           "no:cacheprovider", "tests/engine/algo/test_cuda_paths.py"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          # a run of its own: not the options of the run around it (.ci/run
                          # adds a plugin there that this child cannot import)
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})
    assert done.returncode == 0, done.stdout[-2000:]
    assert "needs CUDA" in done.stdout and "sees no CUDA device" in done.stdout
    assert " passed" not in done.stdout and " skipped" in done.stdout


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(os.environ.get("PUFFER_TEST_NETWORK") != "1" or not _pypi_reachable(),
                    reason="downloads ~50 MB from PyPI: set PUFFER_TEST_NETWORK=1 (and reach it)")
def test_the_wheel_set_is_complete_and_fits(tmp_path):
    """The prepare script's own check: pip resolves every requirement for Python 3.12 from
    the folder alone (and what the target has), and it fits the 64 MiB with the tree."""
    folder = ".gpu_wheels"
    done = subprocess.run([sys.executable, "tools/gpu_prepare.py", "--folder", folder],
                          capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "python3 -m puffer_tui.benchmarks.gpu_check" in done.stdout.replace("$P", "python3")
    line = (ROOT / folder / "command.txt").read_text().strip()
    assert len(line) < 2000
    assert list((ROOT / folder).glob("pufferlib-3.0*-trimmed.tar.gz"))
