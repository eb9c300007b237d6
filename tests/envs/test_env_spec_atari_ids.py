"""ale-py's ids without the ALE/ namespace (envs/env_spec.py): PongNoFrameskip-v4, the id SB3's
and rl-zoo's docs use, is the same Atari pipeline as ALE/Pong-v5 (preset, preprocessing, vector
env) with its own registration's sticky actions; the ids whose emulator skips a random number
of frames are refused with the ids that work; ids of other packages are left alone."""

import subprocess
import sys

import pytest

pytest.importorskip("ale_py.vector_env", reason="needs ale-py >= 0.11 (the atari extra)")

from puffer_tui.envs import env_class  # noqa: E402
from puffer_tui.envs.ale_vector import AleVectorBlock  # noqa: E402
from puffer_tui.envs.env_spec import EnvSpecError, is_atari_id  # noqa: E402

CLI = [sys.executable, "-m", "puffer_tui.app.cli"]
TINY = ["--train.horizon", "16", "--train.minibatch-size", "32", "--train.total-timesteps", "64",
        "--train.hidden-size", "32", "--train.cnn-channels", "8"]


def test_a_noframeskip_id_is_the_atari_pipeline_with_its_own_sticky_actions():
    source = env_class("gym:PongNoFrameskip-v4")
    assert source.preset_path().name == "ALE.toml"
    assert "ale_py" in source.imports({})  # what a worker process imports before make
    creator = source.make_creator({})
    assert creator.func is AleVectorBlock
    options = creator.args[1]
    assert options["game"] == "pong" and options["repeat_action_probability"] == 0.0
    assert options["frameskip"] == 4  # the preprocessing's skip, not the registration's 1
    assert creator.layout.observation_space.shape == (4, 84, 84)
    v5 = env_class("gym:ALE/Pong-v5").make_creator({}).args[1]
    assert v5["repeat_action_probability"] == 0.25


def test_a_random_frameskip_id_is_refused_naming_the_ids_that_work():
    source = env_class("gym:Pong-v4")
    with pytest.raises(EnvSpecError) as refused:
        source.check_new_settings({})
    text = str(refused.value)
    assert "random 2 to 4 frames" in text
    assert "gym:PongNoFrameskip-v4" in text and "gym:ALE/Pong-v5" in text


def test_other_packages_ids_are_not_atari():
    assert not is_atari_id("CartPole-v1")
    assert env_class("gym:CartPole-v1").imports({}) == ()
    assert is_atari_id("ALE/Pong-v5")


def test_the_cli_refuses_a_random_frameskip_id_before_creating_anything(tmp_path):
    result = subprocess.run([*CLI, "train", "gym:Breakout-v4", "--headless",
                             "--runs-dir", str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert "gym:BreakoutNoFrameskip-v4" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_noframeskip_id_trains_in_worker_processes_through_gymnasium(tmp_path):
    # --env.ale-vector false: one Gymnasium env per game in two worker processes, which
    # must import ale-py themselves to know the id
    trained = subprocess.run(
        [*CLI, "train", "gym:BreakoutNoFrameskip-v4", "--headless", "--runs-dir", str(tmp_path),
         "--env.ale-vector", "false", "--vec.num-envs", "2", "--vec.num-workers", "2", *TINY],
        capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    (run,) = tmp_path.iterdir()
    assert "preset ALE.toml" in (run / "events.log").read_text()
    played = subprocess.run([*CLI, "eval", str(run), "--episodes", "1", "--num-envs", "1"],
                            capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
