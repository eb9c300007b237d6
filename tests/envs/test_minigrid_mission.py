"""MiniGrid's mission reaches the policy as one one-hot per slot of its template
(envs/minigrid_mission.py, envs/text_choices.py); missions with nothing to read stay dropped."""

import pickle
import warnings

import gymnasium
import numpy as np
import pytest

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


def test_single_word_slots_are_left_out_and_single_texts_dropped():
    corridor = mission_choices(_make("MiniGrid-KeyCorridorS3R1-v0").observation_space["mission"])
    assert corridor.slots == (tuple(COLORS),)  # "pick up the {color} ball": the colour only
    for env_id in ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-ObstructedMaze-1Dl-v0"):
        space = _make(env_id).observation_space
        assert with_mission_choices(space) is space  # one text: nothing to read
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert ObservationLayout(space).dropped == ("mission",)


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
