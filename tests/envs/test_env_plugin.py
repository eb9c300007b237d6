"""Third-party native envs through the entry-point group `puffer_tui.envs`: the example
package examples/puffer_tui_corridor (a C env built with Cython against puffer-tui's
headers) is listed, configured from its own preset, and trains from the command line.
CI installs it (.ci/run); elsewhere: pip install --no-build-isolation examples/puffer_tui_corridor
"""

import json
from importlib.metadata import EntryPoint

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.envs import env_class, env_names, env_plugins, registry


@pytest.fixture
def fake_plugins(monkeypatch):
    """Entry points as an installed package would register them (no package needed)."""
    points = {
        "my_squared": EntryPoint("my_squared", "puffer_tui.envs.squared:Squared",
                                 env_plugins.GROUP),
        "broken": EntryPoint("broken", "no_such_plugin_pkg:Env", env_plugins.GROUP),
        "not_a_class": EntryPoint("not_a_class", "os:getcwd", env_plugins.GROUP),
        "squared": EntryPoint("squared", "os:getcwd", env_plugins.GROUP),  # cannot shadow
    }
    monkeypatch.setattr(registry, "plugin_entry_points", lambda: points)
    monkeypatch.setattr(env_plugins, "plugin_entry_points", lambda: points)
    return points


def test_entry_points_are_listed_and_loaded(fake_plugins):
    names = env_names()
    assert names[:len(registry.ENV_NAMES)] == registry.ENV_NAMES and names.count("squared") == 1
    assert {"my_squared", "broken", "not_a_class"} <= set(names)
    assert env_class("my_squared").__name__ == "Squared"
    assert env_class("squared").__module__ == "puffer_tui.envs.squared"  # built-in wins
    config = cfg.load_config("my_squared", {"env.size": "5"})
    assert config.env_name == "my_squared" and config.env["size"] == 5


@pytest.mark.parametrize("name, message", [
    ("broken", "failed to load: ModuleNotFoundError"),
    ("not_a_class", "is not a NativeEnv class"),
])
def test_a_broken_plugin_is_a_clear_error(fake_plugins, tmp_path, capsys, name, message):
    assert main(["train", name, "--headless", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not (tmp_path / "runs").exists()


def test_envs_lists_a_broken_plugin_with_why(fake_plugins, capsys):
    assert main(["envs", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["envs"]}
    assert rows["my_squared"]["source"].startswith("plugin")
    assert rows["broken"]["description"].startswith("unavailable: plugin env 'broken'")


def _corridor_installed() -> bool:
    return "corridor" in env_plugins.plugin_entry_points()


@pytest.mark.skipif(not _corridor_installed(), reason=(
    "the example plugin is not installed: pip install --no-build-isolation "
    "examples/puffer_tui_corridor (CI does, see .ci/run)"))
def test_example_plugin_is_listed_and_trains_headless(tmp_path, capsys):
    assert main(["envs", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["envs"]}
    assert rows["corridor"]["source"] == "plugin (puffer_tui_corridor)"
    assert cfg.load_config("corridor").vec.num_envs == 256  # its own preset
    runs = tmp_path / "runs"
    assert main(["train", "corridor", "--headless", "--runs-dir", str(runs),
                 "--env.length", "6", "--train.total-timesteps", "16384",
                 "--train.torch-threads", "1", "--train.horizon", "16",
                 "--train.minibatch-size", "1024"]) == 0, capsys.readouterr().err
    (run,) = rd.list_runs(runs)
    saved = cfg.load(run / rd.CONFIG_FILE)
    assert (saved.env_name, saved.env["length"]) == ("corridor", 6)
    assert rd.read_status(run)["state"] == "finished"
