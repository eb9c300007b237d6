"""MiniGrid's mission reaches the policy as one one-hot per slot of its template
(envs/minigrid_mission.py, envs/text_choices.py); missions with nothing to read stay dropped."""

import pickle
import warnings

import gymnasium
import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.encoders import make_encoder
from puffer_tui.envs.gym_emulation import from_gymnasium
from puffer_tui.envs.gym_spaces import ObservationLayout, flatten_by_leaves
from puffer_tui.envs.minigrid_mission import mission_choices, with_mission_choices
from puffer_tui.envs.text_choices import TextChoices

pytest.importorskip("minigrid", reason="minigrid not installed (pip install 'puffer-tui[minigrid]')")

COLORS = ["blue", "green", "grey", "purple", "red", "yellow"]  # GoToDoor's slot, in its order


def _make(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gymnasium.make(env_id)


def _mission_part(creator, row):
    leaf = next(leaf for leaf in creator.layout.observation_space.leaves if leaf.name == "mission")
    return row[leaf.offset: leaf.offset + leaf.size]


def test_goto_door_rows_say_which_door_the_mission_names():
    creator = from_gymnasium("MiniGrid-GoToDoor-5x5-v0")
    envs = creator(num_envs=1, seed=0)
    try:
        seen = {}
        for seed in range(40):
            observation, _ = envs.envs[0].reset(seed=seed)
            row = envs.observation_layout.flatten(observation)
            part = _mission_part(creator, row)
            assert part.sum() == 1  # one slot (the colour), one 1
            color = observation["mission"].split()[3]
            assert int(part.argmax()) == COLORS.index(color)
            seen[color] = part.copy()
            assert envs.observation_layout.unflatten(row)["mission"] == observation["mission"]
        assert len(seen) >= 4  # rows differ by the door asked for
    finally:
        envs.close()


@pytest.mark.parametrize("env_id", ["MiniGrid-Fetch-5x5-N2-v0", "MiniGrid-PutNear-6x6-N2-v0",
                                    "MiniGrid-LockedRoom-v0", "MiniGrid-GoToObject-6x6-N2-v0"])
def test_every_mission_an_env_gives_is_listed_and_comes_back(env_id):
    env = _make(env_id)
    space = with_mission_choices(env.observation_space)
    assert isinstance(space["mission"], TextChoices)
    layout = ObservationLayout(space)
    assert layout.dropped == ()
    rows = []
    for seed in range(30):
        observation, _ = env.reset(seed=seed)
        row = layout.flatten(observation)
        assert layout.unflatten(row)["mission"] == observation["mission"]
        rows.append(row)
    texts = layout.unflatten(np.stack(rows))["mission"]  # a batch: an array of texts
    assert texts.shape == (30,) and len(set(texts)) > 1


def test_single_word_slots_are_left_out_and_single_texts_taken_out_without_a_note(capfd):
    corridor = mission_choices(_make("MiniGrid-KeyCorridorS3R1-v0").observation_space["mission"])
    assert corridor.slots == (tuple(COLORS),)  # "pick up the {color} ball": the colour only
    for env_id in ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-ObstructedMaze-1Dl-v0"):
        space = _make(env_id).observation_space
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dropped = ObservationLayout(space)  # the mission dropped, as before
        capfd.readouterr()
        read = with_mission_choices(space)  # one text, the same every episode
        assert "mission" not in read.spaces and set(read.spaces) == set(space.spaces) - {"mission"}
        layout = ObservationLayout(read)
        assert layout.dropped == () and layout.space == dropped.space  # the same rows
        assert "dropped" not in capfd.readouterr().err  # nothing lost, so no note says so


def test_a_text_outside_the_list_is_a_clear_error():
    space = with_mission_choices(_make("MiniGrid-GoToDoor-5x5-v0").observation_space)
    observation, _ = _make("MiniGrid-GoToDoor-5x5-v0").reset(seed=0)
    with pytest.raises(ValueError, match="mission.*'go to the pink door' is none of the 6"):
        ObservationLayout(space).flatten({**observation, "mission": "go to the pink door"})


def test_the_flat_space_pickles_and_a_policy_reads_the_mission():
    creator = from_gymnasium("MiniGrid-GoToDoor-5x5-v0")
    flat = creator.layout.observation_space
    restored = pickle.loads(pickle.dumps(flat))  # checkpoints and worker processes carry it
    observation, _ = _make("MiniGrid-GoToDoor-5x5-v0").reset(seed=3)
    row = flatten_by_leaves(observation, restored)  # what a trained policy's predict uses
    assert _mission_part(creator, row).sum() == 1
    encoder = make_encoder(flat, 16)
    names = dict(zip(encoder.names, encoder.encoders, strict=True))
    assert names["mission"].one_hot_values == 2 and names["mission"].cells == len(COLORS)


def test_a_checkpoint_from_before_the_mission_was_read_loads_as_the_same_function():
    env = _make("MiniGrid-GoToDoor-5x5-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dropped = ObservationLayout(env.observation_space)  # the mission dropped: the old rows
    read = ObservationLayout(with_mission_choices(env.observation_space))
    old, new = make_encoder(dropped.space, 16), make_encoder(read.space, 16)
    assert len(old.encoders) == 2 and len(new.encoders) == 3
    new.load_state_dict(old.state_dict())
    assert new.loaded_without_text == ("mission",)
    observations = [env.reset(seed=seed)[0] for seed in range(12)]
    old_rows = torch.as_tensor(np.stack([dropped.flatten(o) for o in observations]))
    new_rows = torch.as_tensor(np.stack([read.flatten(o) for o in observations]))
    with torch.no_grad():
        torch.testing.assert_close(new(new_rows), old(old_rows))
    new.load_state_dict(new.state_dict())  # a checkpoint that has the mission: nothing moved
    assert new.loaded_without_text == ()


def test_resuming_such_a_run_warns_that_the_optimizer_starts_afresh(tmp_path):
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    overrides = {"vec.num_envs": 2, "train.horizon": 8, "train.minibatch_size": 16,
                 "train.update_epochs": 1, "train.hidden_size": 16,
                 "train.total_timesteps": 10_000, "train.torch_threads": 1}
    config = load_config("gym:MiniGrid-GoToDoor-5x5-v0", overrides=overrides)
    trainer = Trainer(config)
    try:
        state = trainer.state_dict()
        env = _make("MiniGrid-GoToDoor-5x5-v0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dropped = ObservationLayout(env.observation_space).space
        old = make_encoder(dropped, 16)
        policy = {k: v for k, v in state["policy"].items() if not k.startswith("encoder.")}
        policy.update({f"encoder.{k}": v for k, v in old.state_dict().items()})
        state["policy"] = policy
        with pytest.warns(UserWarning, match="did not read mission.*moments start afresh"):
            trainer.load_state_dict(state)
        assert trainer.fresh_moments
    finally:
        trainer.close()
