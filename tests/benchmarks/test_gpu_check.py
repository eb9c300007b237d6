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
    assert f"WHEELS={folder} bash tools/gpu_run.sh" in done.stdout
    line = (ROOT / folder / "command.txt").read_text().strip()
    assert len(line) < 2000
    assert list((ROOT / folder).glob("pufferlib-3.0*-trimmed.tar.gz"))
    # the image's torch pins setuptools below 82; shipping 84 stopped the install there
    assert not list((ROOT / folder).glob("setuptools-*.whl"))


def test_set_env_overrides_one_env_only_and_bad_items_are_one_line(tmp_path):
    from puffer_tui.benchmarks.gpu_check import env_sets

    assert env_sets(["squared:vec.num_envs=8192", "gym:ALE/Pong-v5:vec.num_envs=16",
                     "squared:train.minibatch_size=32768"]) == {
        "squared": ["vec.num_envs=8192", "train.minibatch_size=32768"],
        "gym:ALE/Pong-v5": ["vec.num_envs=16"]}
    done = _gpu_check("--out", str(tmp_path), "--device", "cpu", "--set-env", "vec.num_envs=8")
    assert done.returncode == 2
    assert done.stderr.strip() == ("gpu_check: error: --set-env takes ENV:KEY=VALUE, got "
                                   "'vec.num_envs=8'")
    assert not (tmp_path / "gpu_check.json").exists()


def test_peer_cases_left_out_for_time_are_reported_not_dropped(tmp_path):
    """On the H100 the cartpole cases were skipped for time and the report said nothing of
    them: the generator only yielded after a measured case."""
    import argparse

    from puffer_tui.benchmarks.gpu_check import Deadline, run_peer

    args = argparse.Namespace(deadline=Deadline(0.0), rounds=3, seconds=2.0, device="cpu",
                              case_timeout=10.0, peer_deps=None)
    reports = list(run_peer(["squared", "cartpole", "gym:CartPole-v1"], [], args, tmp_path,
                            {"src": str(tmp_path)}))
    assert reports, "nothing was reported"
    assert reports[-1] == [{"env": env, "mode": mode, "skipped": "out of time"}
                           for env in ("squared", "cartpole") for mode in ("preset", "matched")]


def test_the_peer_build_drops_lto_that_the_gpu_image_cannot_link(tmp_path):
    """The GPU image's gcc could not run lto-wrapper, so every PufferLib binding failed to link
    with its -flto; the build now runs its setup.py without it."""
    import io
    import tarfile

    from puffer_tui.benchmarks import gpu_peer

    setup_py = ("import sys\nextra_compile_args = [\n    '-O2',\n    '-flto',\n]\n"
                "open('seen_args.txt', 'w').write(repr(extra_compile_args))\n")
    sdist = tmp_path / "pufferlib-3.0.0-trimmed.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, text in (("pufferlib-3.0.0/setup.py", setup_py),
                           ("pufferlib-3.0.0/pufferlib/ocean/squared/binding.c", "")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    result = gpu_peer.build(sdist, tmp_path / "work", ["squared"], 1, 60, cuda=False)
    assert result["ok"], result
    seen = (tmp_path / "work" / "pufferlib-3.0.0" / "seen_args.txt").read_text()
    assert seen == "['-O2']"


def test_the_profiler_tables_name_the_ops_and_the_time_they_leave_out(tmp_path):
    out = tmp_path / "profile.txt"
    done = subprocess.run([sys.executable, "-m", "puffer_tui.benchmarks.gpu_profile", "squared",
                           "--out", str(out), "--epochs", "1", "--set", "train.device=cpu",
                           *TINY], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("squared on cpu (float32), 16 agents, 1 epoch(s), 256 agent steps")
    assert "ops' own time: host" in text
    assert "## by host time" in text and "aten::addmm" in text
    assert "## by device time" not in text  # no device on the CPU
