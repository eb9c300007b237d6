"""tools/trained_fixture.py: a trained run's checkpoint slimmed to the policy in half precision
and the config, which load_policy reads back as the same policy (the trained Pong fixture of
tests/engine/evaluation/test_pong_saliency.py was made with it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from puffer_tui.engine.algo.policy import load_policy
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.checkpoint import latest_checkpoint, save_checkpoint
from puffer_tui.engine.shared.config import load_config

TOOL = Path(__file__).resolve().parents[1] / "tools" / "trained_fixture.py"


def _tool():
    spec = importlib.util.spec_from_file_location("trained_fixture", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fixture_holds_the_policy_in_half_precision_and_loads_as_it(tmp_path, capsys):
    trainer = Trainer(load_config("squared", {"vec.num_envs": 4, "train.horizon": 8,
                                              "train.minibatch_size": 32}))
    try:
        trainer.run_epoch()
        run = tmp_path / "run"
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    assert _tool().main([str(run), str(tmp_path / "fixture")]) == 0
    assert "fixture" in capsys.readouterr().out
    slim_path = latest_checkpoint(tmp_path / "fixture")
    state = torch.load(slim_path, weights_only=True)
    assert set(state) == {"config", "policy", "global_step", "epoch"}  # no optimizer state
    assert all(v.dtype == torch.float16 for v in state["policy"].values()
               if torch.is_floating_point(v))
    original, _ = load_policy(latest_checkpoint(run))
    slim, config = load_policy(slim_path)
    assert config.env_name == "squared"
    obs = torch.randint(0, 3, (16, *original.observation_space.shape), dtype=torch.uint8)
    with torch.no_grad():
        a, b = original.step(obs)[0], slim.step(obs)[0]
    assert torch.allclose(a, b, atol=1e-2)
    assert slim_path.stat().st_size < latest_checkpoint(run).stat().st_size / 2
