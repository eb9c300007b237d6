"""How minibatches are drawn, where a preset or the defaults chose it, gives way to the flag
that rules it out (engine/shared/config.py `_sampling_yields_to_flags`); both sides given by
the user are still refused by the config's rules."""

import pytest

from puffer_tui.engine.shared.config import ConfigError, load_config


def test_an_lstm_flag_runs_on_a_preset_that_shuffles_steps_with_a_separate_critic():
    # Acrobot-v1.toml: separate critic, single steps shuffled, minibatches of 64 of 256-step segments
    preset = load_config("gym:Acrobot-v1")
    assert preset.train.shuffle_steps and preset.train.separate_critic
    config = load_config("gym:Acrobot-v1", {"train.policy": "lstm"})
    assert config.train.policy == "lstm"
    assert not config.train.shuffle_steps and not config.train.separate_critic
    assert config.train.minibatch_size == config.train.horizon == 256  # whole segments
    assert config.train.learning_rate == preset.train.learning_rate  # the rest of the preset


def test_prioritized_segments_asked_for_turn_the_preset_s_single_steps_off():
    config = load_config("gym:Acrobot-v1", {"train.prio_alpha": 0.5})
    assert config.train.prio_alpha == 0.5 and not config.train.shuffle_steps


def test_single_steps_asked_for_draw_uniformly():
    assert load_config("squared").train.prio_alpha > 0  # the defaults prioritize segments
    config = load_config("squared", {"train.shuffle_steps": True})
    assert config.train.shuffle_steps and config.train.prio_alpha == 0.0


@pytest.mark.parametrize("flags, names", [
    ({"train.policy": "lstm", "train.shuffle_steps": True}, "shuffle_steps is for feedforward"),
    ({"train.policy": "lstm", "train.separate_critic": True}, "separate_critic is for MLP"),
    ({"train.prio_alpha": 0.5, "train.shuffle_steps": True}, "set prio_alpha 0"),
])
def test_both_sides_given_are_still_refused(flags, names):
    with pytest.raises(ConfigError, match=names):
        load_config("gym:Acrobot-v1", flags)
