"""Search spaces from the schema, their overrides and refusals; `train --preset`."""

from __future__ import annotations

import math

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.sweep.space import (
    SpaceError,
    build_space,
    default_space,
    distributions,
    parse_range,
    space_from_json,
    space_to_json,
)


@pytest.fixture(scope="module")
def bandit():
    return cfg.load_config("bandit")


def test_every_default_distribution_sits_inside_its_field(bandit):
    searched = [s for s in cfg.schema("bandit") if s.search is not None]
    assert {s.key for s in searched} >= {"train.learning_rate", "train.ent_coef",
                                          "train.gamma", "train.total_timesteps"}
    space = default_space(bandit, include_cost=True)  # raises if a range leaves its bounds
    assert set(space) == {s.key for s in searched}
    assert space["train.learning_rate"].log and space["train.ent_coef"].log
    assert not space["train.gamma"].log
    assert space["train.update_epochs"].kind == "int"


def test_total_timesteps_is_searched_relative_to_the_preset_and_only_when_cost_counts(bandit):
    assert "train.total_timesteps" not in default_space(bandit, include_cost=False)
    dim = default_space(bandit, include_cost=True)["train.total_timesteps"]
    preset = bandit.train.total_timesteps  # 500_000 in envs/bandit/config.toml
    assert (dim.low, dim.high, dim.log) == (preset // 4, preset * 2, True)


def test_flags_override_the_preset_section_which_overrides_the_schema(bandit):
    preset = {"train": {"learning_rate": [1e-3, 1e-2], "gamma": "off"},
              "train.ent_coef": [1e-4, 1e-3, "log"]}
    space = build_space(bandit, preset, {"learning_rate": "2e-3,5e-3,log",
                                         "train.policy": "mlp,lstm"}, include_cost=False)
    lr = space["train.learning_rate"]
    assert (lr.low, lr.high, lr.log) == (2e-3, 5e-3, True)
    assert (space["train.ent_coef"].low, space["train.ent_coef"].high) == (1e-4, 1e-3)
    assert "train.gamma" not in space
    assert space["train.policy"].choices == ("mlp", "lstm")


def test_fixed_fields_are_not_searched(bandit):
    space = build_space(bandit, {}, {}, include_cost=False,
                        fixed=("train.learning_rate", "train.gamma"))
    assert "train.learning_rate" not in space and "train.gamma" not in space


@pytest.mark.parametrize("field,text,expected", [
    ("train.learning_rate", "0.5,2", "--sweep.train.learning_rate: [0.5, 2] leaves the field's "
                                     "bounds (float in [0, 1])"),
    ("train.learning_rate", "0,1e-2,log", "a log range needs low > 0, got 0 (float in [0, 1])"),
    ("train.gamma", "0.99,0.9", "low 0.99 must be below high 0.9 (float in [0, 1])"),
    ("train.gamma", "0.9,0.99,cubic", "the third part must be log or linear"),
    ("train.gamma", "a,b", "are not numbers"),
    ("train.gamma", "0.9", "expected low,high[,log]"),
    ("train.update_epochs", "1.2,1.8", "no two integers in the range (int in [1, 64])"),
    ("train.policy", "mlp,mlp", "give at least two different values (one of auto, mlp, cnn, lstm)"),
    ("train.policy", "mlp,gru", "'gru' is not one of auto, mlp, cnn, lstm"),
])
def test_bad_ranges_are_refused_naming_the_field_and_its_bounds(field, text, expected):
    spec = cfg.spec_for(field, "bandit")
    with pytest.raises(SpaceError) as info:
        parse_range(spec, text, f"--sweep.{spec.key}")
    assert expected in str(info.value)
    assert spec.key in str(info.value)


def test_ranges_become_optuna_distributions_and_survive_json(bandit):
    import optuna.distributions as od

    space = build_space(bandit, {}, {"train.policy": "mlp,lstm"}, include_cost=True)
    assert space_from_json(space_to_json(space)) == space
    dists = distributions(space)
    assert isinstance(dists["train.learning_rate"], od.FloatDistribution)
    assert dists["train.learning_rate"].log
    assert isinstance(dists["train.update_epochs"], od.IntDistribution)
    assert isinstance(dists["train.policy"], od.CategoricalDistribution)
    assert math.isclose(dists["train.total_timesteps"].high, 1_000_000)


@pytest.mark.parametrize("args,expected", [
    (["--sweep.train.learning-rate", "0.5,2"], "leaves the field's bounds (float in [0, 1])"),
    (["--sweep.train.nope", "1,2"], "unknown config key train.nope"),
    (["--sweep.train.gamma"], "--sweep.train.gamma needs a range"),
    (["--objective", "pareto", "--pruner", "median"], "cannot judge a pareto objective"),
    (["--parallel", "0"], "--parallel 0: must be at least 1"),
])
def test_the_cli_refuses_in_one_line_before_creating_anything(tmp_path, capsys, args,
                                                             expected):
    code = main(["sweep", "bandit", "--trials", "2", "--runs-dir", str(tmp_path), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert expected in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


def test_train_preset_applies_over_the_env_preset_below_the_flags(tmp_path):
    preset = tmp_path / "best.toml"
    preset.write_text('env_name = "bandit"\n[train]\nlearning_rate = 0.0042\ngamma = 0.9\n'
                      '[sweep]\ntrain.ent_coef = [1e-5, 1e-2, "log"]\n')
    from puffer_tui.app.cli import build_parser
    from puffer_tui.app.commands.train import prepare_run

    args = build_parser().parse_args(["train", "--preset", str(preset), "--train.gamma", "0.95",
                                      "--runs-dir", str(tmp_path / "runs")])
    args.extra = []
    run_dir, resuming = prepare_run(args)
    config = cfg.load(run_dir / rd.CONFIG_FILE)
    assert not resuming and config.env_name == "bandit"
    assert config.train.learning_rate == 0.0042  # from the file
    assert config.train.gamma == 0.95  # the flag wins
    assert config.vec.num_envs == 256  # the env's own preset still applies


def test_train_preset_for_another_env_is_refused(tmp_path, capsys):
    preset = tmp_path / "p.toml"
    preset.write_text('env_name = "cartpole"\n[train]\ngamma = 0.9\n')
    code = main(["train", "bandit", "--preset", str(preset), "--headless",
                 "--runs-dir", str(tmp_path / "runs")])
    assert code == 2
    assert f"--preset {preset} is for cartpole, not bandit" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
