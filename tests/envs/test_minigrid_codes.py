"""MiniGrid's code image gets its true bounds, so the policy one-hots each cell
(envs/minigrid_codes.py); pixel views and other envs keep the spaces they declare."""

import warnings

import gymnasium
import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.encoders import make_encoder
from puffer_tui.envs.gym_emulation import from_gymnasium
from puffer_tui.envs.minigrid_codes import observation_space_of

pytest.importorskip("minigrid", reason="minigrid not installed (pip install 'puffer-tui[minigrid]')")
from minigrid.wrappers import (  # noqa: E402
    FullyObsWrapper,
    ImgObsWrapper,
    RGBImgObsWrapper,
    RGBImgPartialObsWrapper,
    ViewSizeWrapper,
)

ENV_ID = "MiniGrid-DoorKey-5x5-v0"  # a door, a key and a goal: most object codes appear


def _observations(env, steps=300, seed=0):
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    yield observation
    for _ in range(steps):
        observation, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        yield observation
        if terminated or truncated:
            observation, _ = env.reset()
            yield observation


@pytest.mark.parametrize("view", [None, FullyObsWrapper, ImgObsWrapper],
                         ids=["partial", "full", "image-only"])
def test_code_images_are_narrowed_to_their_codes_and_hold_every_observation(view):
    env = gymnasium.make(ENV_ID)
    env = view(env) if view is not None else env
    declared = env.observation_space
    narrowed = observation_space_of(env)
    image = narrowed["image"] if isinstance(narrowed, gymnasium.spaces.Dict) else narrowed
    old = declared["image"] if isinstance(declared, gymnasium.spaces.Dict) else declared
    assert int(old.high.max()) == 255  # what MiniGrid declares
    assert image.shape == old.shape and image.dtype == np.uint8
    assert image.high[..., 0].max() == 10 and image.high[..., 1].max() == 5  # object, colour
    assert image.high[..., 2].max() == 3  # door state 0-2, the agent's direction 0-3
    seen = np.zeros(3, dtype=int)
    for observation in _observations(env):
        assert narrowed.contains(observation), "an observation outside the narrowed bounds"
        pixels = observation["image"] if isinstance(observation, dict) else observation
        seen = np.maximum(seen, pixels.reshape(-1, 3).max(0))
    assert seen[0] >= 5  # keys and doors were seen, so the test checked real codes
    env.close()


def test_a_smaller_view_set_by_its_wrapper_is_narrowed_too():
    env = ViewSizeWrapper(gymnasium.make("MiniGrid-Empty-8x8-v0"), agent_view_size=5)
    image = observation_space_of(env)["image"]
    assert image.shape == (5, 5, 3) and int(image.high.max()) == 10
    for observation in _observations(env, steps=50):
        assert image.contains(observation["image"])


@pytest.mark.parametrize("make", [
    lambda: RGBImgPartialObsWrapper(gymnasium.make(ENV_ID)),
    # a tile of one pixel: pixels in the shape of the code image
    lambda: RGBImgPartialObsWrapper(gymnasium.make(ENV_ID), tile_size=1),
    lambda: RGBImgObsWrapper(gymnasium.make(ENV_ID), tile_size=1),
    # a wrapper we do not know may have changed what the image holds
    lambda: gymnasium.wrappers.TransformObservation(
        gymnasium.make(ENV_ID), lambda o: o, gymnasium.make(ENV_ID).observation_space),
    # 16 cells a side: a full view the CNN takes, whose input scale the bounds set
    lambda: FullyObsWrapper(gymnasium.make("MiniGrid-Empty-16x16-v0")),
    lambda: gymnasium.make("CartPole-v1"),
], ids=["pixels", "pixels-tile-1", "full-pixels-tile-1", "unknown-wrapper", "full-16x16",
        "not-minigrid"])
def test_pixel_views_unknown_wrappers_cnn_sized_grids_and_other_envs_keep_their_spaces(make):
    env = make()
    assert observation_space_of(env) is env.observation_space
    env.close()


def test_the_policy_one_hots_each_cell_of_a_minigrid_image():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "observation subspaces dropped")
        creator = from_gymnasium(ENV_ID)
    encoder = make_encoder(creator.layout.observation_space, 64)
    direction, image = encoder.encoders
    assert direction.one_hot_values == 2  # the Discrete direction's one-hot bits
    assert image.one_hot_values == 11  # object codes 0-10: read as 11 categories, not a number
    envs = creator(num_envs=2, seed=0)
    try:
        envs.reset(seed=0)
        features = encoder(torch.as_tensor(envs.observations.copy()))
        assert features.shape == (2, 64)
    finally:
        envs.close()


def _old_checkpoint_policy(trainer):
    """`trainer`'s policy state as the code before the narrowing saved it: the image's table
    one row a cell (values read as numbers), its optimizer moments that shape too."""
    state = trainer.state_dict()
    image_key = next(k for k, v in state["policy"].items()
                     if k.endswith("encoders.1.table") and v.shape[0] == 1470)
    old_table = torch.randn(147, state["policy"][image_key].shape[1]) * 0.05
    state["policy"][image_key] = old_table
    position = [i for i, p in enumerate(trainer.optimizer.params)
                if p.shape == (1470, old_table.shape[1])]
    for i in position:
        moments = state["optimizer"]["state"].get(i)
        if moments:
            moments["exp_avg"] = torch.zeros_like(old_table)
            moments["exp_avg_sq"] = torch.zeros_like(old_table)
    return state, image_key, old_table


def test_a_checkpoint_that_read_the_codes_as_numbers_loads_as_the_same_function():
    from puffer_tui.engine.algo.encoders import ObservationEncoder
    from puffer_tui.envs.gym_spaces import ObservationLayout

    env = gymnasium.make(ENV_ID)
    declared = ObservationLayout(env.observation_space).space  # 0..255: the old encoding
    narrowed = ObservationLayout(observation_space_of(env)).space
    old = make_encoder(declared, 32)
    new = make_encoder(narrowed, 32)
    assert old.encoders[1].one_hot_values == 0 and new.encoders[1].one_hot_values == 11
    new.load_state_dict(old.state_dict())
    assert new.encoders[1].loaded_from_numbers
    layout = ObservationLayout(env.observation_space)
    rows = np.stack([layout.flatten(o) for o in _observations(env, steps=64)])
    with torch.no_grad():
        torch.testing.assert_close(new(torch.as_tensor(rows)), old(torch.as_tensor(rows)))
    assert isinstance(new.encoders[1], ObservationEncoder)
    env.close()


def test_resuming_such_a_checkpoint_says_the_optimizer_starts_afresh():
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    overrides = {"vec.num_envs": 4, "train.horizon": 8, "train.minibatch_size": 16,
                 "train.update_epochs": 1, "train.hidden_size": 16,
                 "train.total_timesteps": 10_000, "train.torch_threads": 1}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "observation subspaces dropped")
        config = load_config(f"gym:{ENV_ID}", overrides)
        with Trainer(config) as first:
            first.run_epoch()
            state, image_key, old_table = _old_checkpoint_policy(first)
        with Trainer(config) as resumed, pytest.warns(UserWarning, match="moments start afresh"):
            resumed.load_state_dict(state)
            # what engine/runtime/recovery.py writes to events.log on a resume
            assert "moments start afresh" in resumed.fresh_moments
            resumed.load_state_dict(resumed.state_dict())  # its own, new-format state again
            assert resumed.fresh_moments is None
        with Trainer(config) as resumed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                resumed.load_state_dict(state)
            table = resumed.policy.state_dict()[image_key]
            torch.testing.assert_close(table[:147], old_table)  # value 1: the row itself
            torch.testing.assert_close(table[147 * 9:], 10 * old_table)  # value 10: 10 times
            resumed.run_epoch()  # and it trains on
