"""Env specs on the command line: every kind of bad spec fails with the reason and the fix,
exit code 2, before a run dir exists; a good spec and its kwargs survive config.toml, resume
and eval."""

import sys
import textwrap

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.envs import env_class
from puffer_tui.envs.env_spec import run_label

SMALL = ["--vec.backend", "serial", "--vec.num-envs", "4", "--train.horizon", "16",
         "--train.minibatch-size", "64", "--train.hidden-size", "16",
         "--train.torch-threads", "1"]


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module `user_envs` on sys.path with a Gymnasium env factory and non-env callables."""
    (tmp_path / "user_envs.py").write_text(textwrap.dedent('''
        import gymnasium

        def make_cartpole(max_episode_steps: int = 50):
            """CartPole cut short, from a user's module."""
            return gymnasium.make("CartPole-v1", max_episode_steps=max_episode_steps)

        def make_nothing():
            return 42

        def make_broken():
            raise RuntimeError("no licence file")

        NOT_CALLABLE = 3
    '''))
    (tmp_path / "user_envs_broken_import.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # undo what importing the spec adds
    monkeypatch.chdir(tmp_path)  # found as `python -m` would: from the working directory
    yield "user_envs"
    for name in ("user_envs", "user_envs_broken_import"):
        sys.modules.pop(name, None)


BAD_SPECS = [
    (["CartPole-v1"], "it is a Gymnasium id: use gym:CartPole-v1"),
    (["squard"], "did you mean squared?"),
    (["gym:CartPol-v1"], "close matches: gym:CartPole-v1"),
    (["gym:"], "names no id"),
    (["no_such_module_xyz:make"], "'no_such_module_xyz', which is not installed"),
    (["user_envs:missing"], "has no attribute 'missing'; its callables: make_broken"),
    (["user_envs:NOT_CALLABLE"], "is a int, not callable"),
    (["user_envs:make_nothing"], "returned int, not a gymnasium.Env"),
    (["user_envs:make_broken"], "RuntimeError: no licence file"),
    (["user_envs_broken_import:make"], "module 'no_such_dependency_xyz' is not installed"),
    (["user_envs"], "unknown env 'user_envs'"),
    (["pz:user_envs:make_cartpole"], "pz:user_envs:make_cartpole cannot be built"),
    (["gym:CartPole-v1", "--env.max-episode-steps", "many"], "not a valid int"),
    (["gym:CartPole-v1", "--env.import", "no_such_module_xyz"], "'no_such_module_xyz'"),
    (["gym:CartPole-v1", "--env.no-such-kwarg", "1"], "--env.no-such-kwarg is not a setting of "
                                                      "CartPole-v1 (known: "),
    (["gym:CartPole-v1", "--vec.num-envs", "2", "--vec.num-workers", "2"], "minibatch_size"),
]


@pytest.mark.parametrize("argv, message", BAD_SPECS, ids=[" ".join(a) for a, _ in BAD_SPECS])
def test_bad_spec_fails_clearly_before_a_run_dir(tmp_path, capsys, user_module, argv, message):
    runs = tmp_path / "runs"
    code = main(["train", *argv, "--headless", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and err.count("\n") == 1, err
    assert not runs.exists() or not any(runs.iterdir())


def test_missing_package_names_the_extra(tmp_path, capsys, monkeypatch):
    # An id whose registering package is absent: the pip extra that installs it.
    for module in ("ale_py", "minigrid"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    env_class.__globals__["resolve_spec"].cache_clear()
    for spec, extra in (("gym:ALE/Pong-v5", "atari"), ("gym:MiniGrid-Empty-8x8-v0", "minigrid")):
        assert main(["train", spec, "--headless", "--runs-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f'pip install "puffer-tui[{extra}]"' in err, err
    env_class.__globals__["resolve_spec"].cache_clear()


def test_gym_kwargs_are_typed_from_the_signature_else_toml_literals():
    config = cfg.load_config("gym:FrozenLake-v1", {
        "env.map_name": "8x8", "env.is_slippery": "false", "env.success_rate": "0.5",
        "env.desc": '["SF", "FG"]', "env.max_episode_steps": "40"})
    assert config.env == {"map_name": "8x8", "is_slippery": False, "success_rate": 0.5,
                          "desc": ["SF", "FG"], "max_episode_steps": 40}
    assert cfg.from_toml(cfg.to_toml(config)) == config


def test_python_envs_default_to_multiprocessing_sized_to_the_machine():
    config = cfg.load_config("gym:MountainCar-v0")
    defaults = cfg.python_env_defaults()
    assert config.vec.backend == "multiprocessing"
    assert config.vec.num_workers == defaults["vec"]["num_workers"]
    assert config.vec.num_envs % config.vec.num_workers == 0
    assert cfg.load_config("gym:MountainCar-v0", {"vec.backend": "serial"}).vec.backend == "serial"
    assert cfg.load_config("squared").vec.backend == "serial"  # native envs keep theirs
    # a Gymnasium id stepped by its C port is sized as a native env (envs/classic_ports.py)
    assert cfg.load_config("gym:Acrobot-v1").vec.backend == "serial"
    assert cfg.load_config("gym:Acrobot-v1", {"env.native": "false"}).vec.backend == \
        "multiprocessing"


def test_run_label_is_a_file_name():
    assert run_label("gym:ALE/Pong-v5") == "gym-ALE_Pong-v5"
    assert run_label("my.pkg:make_env") == "my.pkg_make_env"
    assert run_label("squared") == "squared"


def test_spec_and_kwargs_round_trip_through_the_run_dir_resume_and_eval(
        tmp_path, capsys, user_module):
    runs = tmp_path / "runs"
    spec = "user_envs:make_cartpole"
    argv = ["train", spec, "--headless", "--runs-dir", str(runs), *SMALL,
            "--env.max-episode-steps", "20", "--train.total-timesteps", "256"]
    assert main(argv) == 0, capsys.readouterr().err
    (run,) = rd.list_runs(runs)
    saved = cfg.load(run / rd.CONFIG_FILE)
    assert (saved.env_name, saved.env) == (spec, {"max_episode_steps": 20})
    assert saved.vec.backend == "serial"
    capsys.readouterr()

    # resume rebuilds the same env from config.toml alone and trains on
    assert main(["train", "--resume", str(run), "--headless",
                 "--train.total-timesteps", "512"]) == 0, capsys.readouterr().err
    assert cfg.load(run / rd.CONFIG_FILE).env == {"max_episode_steps": 20}
    assert main(["train", "--resume", str(run), "--headless", "--env.max-episode-steps",
                 "30"]) == 2
    assert "cannot change when resuming" in capsys.readouterr().err

    # eval plays it: episodes are capped by the saved kwarg
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "3", "--json"]) == 0
    import json

    outcome = json.loads(capsys.readouterr().out)
    assert 0 < outcome["episode_length"] <= 20


def test_worker_count_divides_the_presets_envs_on_any_machine(monkeypatch):
    real = cfg.python_env_defaults
    monkeypatch.setattr(cfg, "python_env_defaults", lambda: real(cores=3))
    from puffer_tui.envs import load_preset

    # its preset's envs (16 now, 64 before it was tuned): 3 cores, so 2 workers divide either
    preset_envs = load_preset("gym:CartPole-v1")["vec"]["num_envs"]
    assert preset_envs % 2 == 0 and preset_envs % 3 != 0  # what makes the check below count
    python_env = {"env.native": "false"}  # Gymnasium's own CartPole, not its C port
    config = cfg.load_config("gym:CartPole-v1", python_env)
    assert (config.vec.num_envs, config.vec.num_workers) == (preset_envs, 2)
    config = cfg.load_config("gym:CartPole-v1", {**python_env, "vec.num_envs": "9"})
    assert config.vec.num_workers == 3
    config = cfg.load_config("gym:CartPole-v1", {**python_env, "vec.num_envs": "9",
                                                  "vec.num_workers": "1"})
    assert config.vec.num_workers == 1  # what the user set stays
