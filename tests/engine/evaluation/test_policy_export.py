"""Exported policies (engine/evaluation/policy_export.py) choose the actions `eval` chooses.

For a discrete (CartPole), a continuous normalized (MuJoCo's Hopper), an image (Atari's CNN)
and an LSTM policy: 1,000 observations recorded by playing the env are fed to the policy
(`Policy.act(..., deterministic=True)`, what `puffer-tui eval --deterministic` runs), to the
ONNX file under onnxruntime and to the TorchScript file under torch.jit.load; the actions must
agree (discrete: equal, except where two logits tie to float rounding; continuous: to 1e-5).
The policies are freshly built with random observation statistics, so the normalization is
not the identity: what matters is that the file computes what the policy computes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.evaluation.policy_export import ExportError, export, format_for
from puffer_tui.engine.shared.config import load_config
from puffer_tui.envs import env_class, make

OBSERVATIONS = 1000


def built_policy(env_name: str, overrides: dict | None = None):
    config = load_config(env_name, overrides or {})
    cls = env_class(env_name)
    layout = cls.layout(cls.resolve(dict(config.env)))
    torch.manual_seed(0)
    policy = make_policy(layout.observation_space, layout.action_space, config.train)
    if policy.obs_norm is not None:  # statistics that move every input
        generator = torch.Generator().manual_seed(1)
        for name, buffer in policy.obs_norm.named_buffers():
            if buffer.is_floating_point():
                if "var" in name or "std" in name:
                    buffer.copy_(0.5 + torch.rand(buffer.shape, generator=generator))
                else:
                    buffer.copy_(torch.randn(buffer.shape, generator=generator))
    return policy.eval(), config


def recorded_observations(policy, config, count: int = OBSERVATIONS):
    """(observations, episode starts) from playing the env with random actions (the
    policy's own would cost a CNN forward per Atari step and find the same inputs)."""
    env = make(config.env_name, num_envs=1, seed=3, evaluation=True, **config.env)
    try:
        obs, _ = env.reset(3)
        space = env.single_action_space
        space.seed(4)
        rows, starts, start = [], [], np.ones(obs.shape[0], bool)
        while len(rows) < count:
            rows.append(np.array(obs[0]))
            starts.append(bool(start[0]))
            actions = np.stack([space.sample() for _ in range(obs.shape[0])])
            obs, _, terminals, truncations, _ = env.step(actions)
            start = np.logical_or(terminals, truncations)
        return np.stack(rows), np.array(starts)
    finally:
        env.close()


def reference_actions(policy, observations, starts):
    """Policy.act as eval plays: the whole batch, or for the LSTM one observation at a time
    with its state carried."""
    if not policy.recurrent:
        return policy.act(observations, deterministic=True)[0]
    actions, state = [], None
    for obs, start in zip(observations, starts):
        action, state = policy.act(obs[None], state, deterministic=True, starts=np.array([start]))
        actions.append(action[0])
    return np.stack(actions)


def run_file(path, policy, observations, starts, runtime: str):
    """The exported file's actions: the whole batch (its batch dimension is dynamic), or for
    the LSTM one observation at a time, the state zeroed where an episode starts."""
    if runtime == "onnx":
        ort = pytest.importorskip("onnxruntime")
        session = ort.InferenceSession(str(path))

        def call(*inputs):
            names = [i.name for i in session.get_inputs()]
            return session.run(None, dict(zip(names, inputs)))
    else:
        module = torch.jit.load(str(path))

        def call(*inputs):
            with torch.no_grad():
                return [t.numpy() for t in module(*map(torch.as_tensor, inputs))]
    if not policy.recurrent:
        return call(observations)[0]
    actions = []
    h = c = np.zeros((1, policy.hidden_size), np.float32)
    for obs, start in zip(observations, starts):
        if start:
            h, c = np.zeros_like(h), np.zeros_like(c)
        action, _, h, c = call(obs[None], h, c)
        actions.append(action[0])
    return np.stack(actions)


def logit_gap(policy, observations):
    """Per observation, the gap between its two largest logits (discrete heads)."""
    with torch.no_grad():
        obs = torch.as_tensor(observations)
        if policy.obs_norm is not None:
            obs = policy.obs_norm(obs)
        params, _, _ = policy.step(obs) if not policy.recurrent else (None, None, None)
    top = params.topk(2, -1).values
    return (top[:, 0] - top[:, 1]).numpy()


def check_parity(tmp_path, env_name, overrides=None, runtimes=("onnx", "torchscript")):
    policy, config = built_policy(env_name, overrides)
    observations, starts = recorded_observations(policy, config)
    expected = reference_actions(policy, observations, starts)
    for runtime in runtimes:
        if runtime == "onnx":
            pytest.importorskip("onnx")
        path = export(policy, tmp_path / f"policy.{'onnx' if runtime == 'onnx' else 'pt'}")
        got = run_file(path, policy, observations, starts, runtime)
        assert got.shape == expected.shape, runtime
        if np.issubdtype(expected.dtype, np.floating):
            np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=runtime)
        else:
            differ = np.flatnonzero((got != expected).reshape(len(got), -1).any(-1))
            if len(differ) and not policy.recurrent:  # only float ties may differ
                assert (logit_gap(policy, observations[differ]) < 1e-5).all(), runtime
            else:
                assert len(differ) == 0, (runtime, differ[:10])
    return policy


def test_discrete_cartpole_policy_exports_with_the_same_actions(tmp_path):
    check_parity(tmp_path, "gym:CartPole-v1")


def test_grid_policy_with_one_hot_cells_exports_with_the_same_actions(tmp_path):
    # squared: uint8 cells one-hot encoded; training's sparse C kernel is replaced by the
    # dense product in the traced graph
    check_parity(tmp_path, "squared")


def test_lstm_policy_exports_its_state_as_inputs_and_outputs(tmp_path):
    policy = check_parity(tmp_path, "gym:CartPole-v1", {"train.policy": "lstm"})
    assert policy.recurrent


def test_continuous_normalized_mujoco_policy_exports_with_the_same_actions(tmp_path):
    pytest.importorskip("mujoco", reason="MuJoCo envs need the mujoco extra")
    policy = check_parity(tmp_path, "gym:Hopper-v5")
    assert policy.obs_norm is not None  # the MuJoCo family normalizes observations


def test_atari_cnn_policy_exports_with_the_same_actions(tmp_path):
    pytest.importorskip("ale_py", reason="Atari envs need the atari extra")
    policy, _ = built_policy("gym:ALE/Pong-v5")
    assert policy.observation_space.dtype == np.uint8 and len(policy.observation_space.shape) == 3
    check_parity(tmp_path, "gym:ALE/Pong-v5")


def test_the_format_comes_from_the_suffix_or_is_refused_in_one_line():
    assert format_for("a.onnx") == "onnx"
    assert format_for("a.pt") == "torchscript"
    assert format_for("a.bin", "onnx") == "onnx"
    with pytest.raises(ExportError, match="name the file .onnx or .pt"):
        format_for("a.bin")
    with pytest.raises(ExportError, match="unknown export format"):
        format_for("a.onnx", "tflite")


def test_a_failed_export_leaves_no_file(tmp_path, monkeypatch):
    policy, _ = built_policy("gym:CartPole-v1")

    def broken(*args, **kwargs):
        raise RuntimeError("tracer refused")

    monkeypatch.setattr(torch.jit, "trace", broken)
    with pytest.raises(RuntimeError, match="tracer refused"):
        export(policy, tmp_path / "policy.pt")
    assert list(tmp_path.iterdir()) == []
