"""`puffer-tui export` (app/commands/export.py): a trained run's policy written as one file
that onnxruntime and torch.jit.load run, and each refusal one line with exit 2 and nothing
written. What the file computes is checked against the policy in
tests/engine/evaluation/test_policy_export.py."""

from __future__ import annotations

import numpy as np
import pytest

import puffer_tui
from puffer_tui.app.cli import main
from puffer_tui.engine.shared import exit_codes as ec


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(runs folder, run name) of one small finished run of squared."""
    root = tmp_path_factory.mktemp("runs")
    run = puffer_tui.train("squared", total_timesteps=4096, runs_dir=root,
                           vec={"num_envs": 64}, train={"minibatch_size": 512})
    return root, run.name


def export(capsys, root, *argv):
    code = main(["export", *map(str, argv), "--runs-dir", str(root)])
    out, err = capsys.readouterr()
    return code, out.strip().splitlines(), err.strip().splitlines()


def test_the_onnx_file_plays_the_env_s_observations(trained, tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime")
    root, name = trained
    target = tmp_path / "squared.onnx"
    code, out, err = export(capsys, root, name, "-o", target)
    assert (code, err) == (ec.FINISHED, [])
    assert len(out) == 1 and out[0].startswith(f"wrote {target} (onnx, "), out
    assert "inputs obs [N, " in out[0] and "outputs action, value" in out[0]

    policy = puffer_tui.load(name, runs_dir=root)
    obs = np.stack([policy.observation_space.sample() for _ in range(5)])
    session = ort.InferenceSession(str(target))
    action, value = session.run(["action", "value"], {"obs": obs})
    assert action.shape == (5,) and value.shape == (5,)
    assert np.array_equal(action, policy.act(obs))  # eval's deterministic choice


def test_the_format_follows_the_suffix_or_the_flag(trained, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    root, name = trained
    code, out, _ = export(capsys, root, name, "-o", tmp_path / "squared.bin",
                          "--format", "torchscript")
    assert code == ec.FINISHED and "(torchscript, " in out[0]
    module = torch.jit.load(str(tmp_path / "squared.bin"))
    policy = puffer_tui.load(name, runs_dir=root)
    obs = torch.as_tensor(np.stack([policy.observation_space.sample() for _ in range(3)]))
    action, value = module(obs)
    assert tuple(action.shape) == (3,) and tuple(value.shape) == (3,)


@pytest.mark.parametrize("argv, words", [
    (["{run}", "-o", "{tmp}/policy.txt"], "say the format (--format onnx|torchscript)"),
    (["{run}", "-o", "{tmp}/no-such-folder/policy.onnx"], "is not a folder"),
    (["no-such-run", "-o", "{tmp}/policy.onnx"], "no-such-run"),
    (["{run}", "--checkpoint", "nope.pt", "-o", "{tmp}/policy.onnx"], "nope.pt"),
])
def test_a_refusal_is_one_line_exit_2_and_writes_nothing(trained, tmp_path, capsys, argv, words):
    root, name = trained
    argv = [a.format(run=name, tmp=tmp_path) for a in argv]
    code, out, err = export(capsys, root, *argv)
    assert code == ec.USAGE and out == []
    assert len(err) == 1 and err[0].startswith("puffer-tui export: error: "), err
    assert words in err[0], err
    assert list(tmp_path.iterdir()) == []
