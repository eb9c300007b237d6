"""gym:Acrobot-v1, gym:CartPole-v1 and gym:Pendulum-v1 step through their C ports (envs/classic_ports.py)
unless told `--env.native false`; the run says which; settings map or send it to Gymnasium."""

import numpy as np
import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared.config import ConfigError, from_dict, load_config
from puffer_tui.envs import env_class
from puffer_tui.envs.env_spec import EnvSpecError, resolve_spec
from puffer_tui.envs.registry import make, stepping_note

SMALL = ["--train.total-timesteps", "2048", "--train.horizon", "16",
         "--train.minibatch-size", "256", "--train.torch-threads", "1"]


@pytest.mark.parametrize("env_id, port", [("Acrobot-v1", "acrobot"),
                                          ("CartPole-v1", "cartpole_v1"),
                                          ("Pendulum-v1", "pendulum")])
def test_the_id_steps_through_its_port_by_default(env_id, port):
    env = make(f"gym:{env_id}", num_envs=3, seed=1)
    try:
        assert env.name == port and env.num_envs == 3
        source = env_class(f"gym:{env_id}")
        assert source.layout({}).observation_space == env.single_observation_space
        assert source.layout({}).action_space == env.single_action_space
        assert source.palette == env_class(port).palette  # its frames are the port's tiles
    finally:
        env.close()
    config = load_config(f"gym:{env_id}")
    assert config.vec.backend == "serial", "a C env needs no worker processes"
    assert "C port" in stepping_note(f"gym:{env_id}", {})


def test_native_false_steps_gymnasiums_own_env_in_worker_processes():
    env = make("gym:Acrobot-v1", num_envs=2, seed=1, native=False)
    try:
        assert env.name != "acrobot"
        assert len(env.envs) == 2 and type(env.envs[0].unwrapped).__name__ == "AcrobotEnv"
    finally:
        env.close()
    config = load_config("gym:Acrobot-v1", {"env.native": "false"})
    assert config.vec.backend == "multiprocessing" and config.env == {"native": False}
    assert stepping_note("gym:Acrobot-v1", {"native": False}) == \
        "gym:Acrobot-v1 steps through Gymnasium's own env (--env.native false)"


def test_gymnasium_settings_map_onto_the_port_or_choose_gymnasium():
    env = make("gym:Pendulum-v1", num_envs=1, seed=0, max_episode_steps=3, g=9.81)
    try:
        assert env.name == "pendulum"
        env.reset()
        for t in range(1, 4):
            _, _, _, trunc, _ = env.step(np.zeros((1, 1), np.float32))
            assert bool(trunc[0]) == (t == 3), "max_episode_steps is the port's max_steps"
    finally:
        env.close()
    # a setting the port does not know: Gymnasium's env, which does
    env = make("gym:Pendulum-v1", num_envs=1, seed=0, render_mode="rgb_array")
    try:
        assert env.name != "pendulum"
    finally:
        env.close()
    # a bad value of a mapped setting fails with the port's bounds, before anything runs
    with pytest.raises(ValueError, match=r"--env\.max-episode-steps 0: .*C port acrobot"):
        make("gym:Acrobot-v1", num_envs=1, max_episode_steps=0)


def test_a_run_says_it_steps_the_port_and_eval_plays_it(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["train", "gym:Acrobot-v1", "--headless", "--runs-dir", str(runs), *SMALL]) == 0
    out = capsys.readouterr().out
    assert "gym:Acrobot-v1 steps through its C port (acrobot" in out
    assert "--env.native false" in out
    run = next(p for p in runs.iterdir() if (p / "config.toml").exists())
    assert main(["eval", str(run), "--episodes", "2", "--num-envs", "1"]) == 0
    assert "episode" in capsys.readouterr().out


def test_native_is_refused_where_it_cannot_apply_and_a_fallback_says_why():
    # an id without a port: --env.native true was swallowed, and Gymnasium's env ran
    with pytest.raises(ConfigError, match=r"gym:MountainCar-v0 has no C port \(the ports: "
                                          r"gym:Acrobot-v1, gym:CartPole-v1, gym:Pendulum-v1\)"):
        load_config("gym:MountainCar-v0", {"env.native": "true"})
    # native true with a setting the port does not take: Gymnasium's env ran anyway
    with pytest.raises(ConfigError, match=r"does not take --env\.render-mode; drop it, or "
                                          r"--env\.native false"):
        load_config("gym:Acrobot-v1", {"env.native": "true", "env.render_mode": "rgb_array"})
    # false asks for what runs: taken
    assert load_config("gym:CartPole-v1", {"env.native": "false"}).env == {"native": False}
    # a saved run that holds what a new run is refused still loads (resume, eval, branch)
    saved = load_config("gym:CartPole-v1").as_dict()
    saved["env"] = {"native": True}
    assert from_dict(saved).env == {"native": True}
    # without native the settings choose Gymnasium's env, and the run says why
    assert resolve_spec("gym:Acrobot-v1").check_settings({"render_mode": "rgb_array"})
    assert stepping_note("gym:Acrobot-v1", {"render_mode": "rgb_array"}) == (
        "gym:Acrobot-v1 steps through Gymnasium's own env: its C port acrobot does not take "
        "--env.render-mode")
    # a value out of the port's bounds is named by its flag, before anything is built
    with pytest.raises(EnvSpecError, match=r"--env\.g -5\.0: env\.g = -5\.0 is out of "
                                           r"bounds.*C port pendulum"):
        resolve_spec("gym:Pendulum-v1").check_settings({"g": -5.0})
    # Gymnasium's own Pendulum takes it (its bounds are Gymnasium's, not the port's)
    assert resolve_spec("gym:Pendulum-v1").check_settings({"g": -5.0, "native": False})


def test_a_misspelled_gymnasium_setting_names_the_flag_and_the_closest_one():
    # Gymnasium's own "AcrobotEnv.__init__() got an unexpected keyword argument" came through
    # as it was, with no pointer to --env.max-episode-steps
    with pytest.raises(EnvSpecError, match=r"gym:Acrobot-v1: --env\.max-episode-step is not a "
                                           r"setting of Acrobot-v1 \(known: .*"
                                           r"--env\.max-episode-steps.*\); did you mean "
                                           r"--env\.max-episode-steps\?"):
        resolve_spec("gym:Acrobot-v1").make_creator({"max_episode_step": 5})
