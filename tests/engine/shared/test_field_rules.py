"""One rule set: an env setting and the config field built from it accept the same values
and word a refusal the same way (engine/native/settings.py `check_allowed`)."""

import pytest

from puffer_tui.engine.native.settings import Setting, check_allowed
from puffer_tui.engine.shared import config as cfg
from puffer_tui.envs import ENV_NAMES, env_class


def test_every_env_setting_states_its_bounds_as_its_config_field_does():
    for name in ENV_NAMES:
        fields = {s.name: s for s in cfg.env_specs(name)}
        for setting in env_class(name).settings_schema:
            assert setting.bounds_text() == fields[setting.name].bounds_text(), \
                (name, setting.name)


def test_an_out_of_bounds_env_value_is_refused_in_the_same_words_both_ways():
    setting = next(s for s in env_class("snake").settings_schema if s.name == "num_food")
    with pytest.raises(ValueError) as direct:
        setting.check("snake", -1)
    with pytest.raises(cfg.ConfigError) as typed:
        cfg.apply(cfg.load_config("snake"), {"env.num_food": "-1"})
    assert str(direct.value) == "snake.num_food = -1 is out of bounds: int in [0, 1_000_000]"
    assert str(typed.value) == "env.num_food = -1 is out of bounds: int in [0, 1_000_000]"


@pytest.mark.parametrize("value, choices, error", [
    (0.5, None, None),
    (2.0, None, "x = 2.0 is out of bounds: float in [0, 1]"),
    ("ray", ("serial", "multiprocessing"), "x: 'ray' is not one of serial, multiprocessing"),
])
def test_check_allowed(value, choices, error):
    kind = str if choices else float
    if error is None:
        check_allowed("x", value, kind, 0.0, 1.0, choices)
    else:
        with pytest.raises(ValueError) as e:
            check_allowed("x", value, kind, 0.0 if not choices else None,
                          1.0 if not choices else None, choices)
        assert str(e.value) == error


def test_a_float_setting_names_its_bounds_as_people_write_them():
    assert Setting("p", 0.75, 0.5, 0.95).bounds_text() == "float in [0.5, 0.95]"
    assert Setting("r", 0.1, -10.0, 10.0).bounds_text() == "float in [-10, 10]"
