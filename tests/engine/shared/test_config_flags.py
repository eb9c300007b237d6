"""engine/shared/config_flags.py: a `--section.name` flag per typed field, and the overrides a
parsed command line gives: the typed flags given, and `--env.*` settings in either spelling."""

import argparse

import pytest

from puffer_tui.engine.shared.config import ConfigError, spec_for
from puffer_tui.engine.shared.config_flags import add_arguments, overrides_from_args, take_flags


@pytest.fixture
def parser():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser


def test_every_typed_field_has_a_flag_with_its_help(parser):
    flags = {a.dest: a for a in parser._actions if "." in a.dest}
    learning_rate, num_envs = flags["train.learning_rate"], flags["vec.num_envs"]
    assert learning_rate.option_strings == [spec_for("train.learning_rate").flag]
    assert learning_rate.help.startswith(spec_for("train.learning_rate").help + " [live] (default ")
    assert "[live]" not in num_envs.help and "int in [1, 1_000_000]" in num_envs.help
    assert any(a.dest.startswith("eval.") for a in flags.values())


def test_overrides_are_the_flags_given_and_the_env_settings(parser):
    args, extra = parser.parse_known_args(
        ["--train.learning-rate", "1e-3", "--env.size", "9", "--env.num-food=3"])
    assert overrides_from_args(args, extra) == {
        "train.learning_rate": "1e-3", "env.size": "9", "env.num_food": "3"}
    assert overrides_from_args(parser.parse_args([]), []) == {}


@pytest.mark.parametrize("extra, error", [
    (["--bogus"], "unrecognized argument '--bogus'"),
    (["--env.size"], "--env.size needs a value"),
])
def test_a_token_that_is_no_setting_is_refused(parser, extra, error):
    with pytest.raises(ConfigError, match=error):
        overrides_from_args(parser.parse_args([]), extra)


def test_take_flags_keeps_the_other_tokens_in_order():
    values, others = take_flags(["a", "--sweep.lr", "1e-4,1e-2,log", "b", "--sweep.gamma=0.9,0.99"],
                                "--sweep.", "a range")
    assert values == {"lr": "1e-4,1e-2,log", "gamma": "0.9,0.99"}
    assert others == ["a", "b"]
