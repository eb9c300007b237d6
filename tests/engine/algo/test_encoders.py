"""Observation encoders (engine/algo/encoders.py): the CNN for images, one encoder per leaf for
Dict/Tuple observations, dropped subspaces, the choice by train.policy, checkpoints."""

import dataclasses
import io
import warnings

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from puffer_tui.engine.algo.encoders import (
    ImageEncoder,
    LeafEncoders,
    ObservationEncoder,
    check_encoder_choice,
    image_layout,
)
from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.shared.config import TrainConfig
from puffer_tui.envs import gym_spaces
from puffer_tui.envs.gym_spaces import ObservationLayout, StructuredBox

ATARI = spaces.Box(0, 255, (4, 84, 84), np.uint8)
RGB = spaces.Box(0, 255, (64, 48, 3), np.uint8)
MINIGRID = spaces.Dict({"direction": spaces.Discrete(4),
                        "image": spaces.Box(0, 255, (7, 7, 3), np.uint8),
                        "mission": spaces.Text(20)})
MIXED = spaces.Dict({"pixels": spaces.Box(0, 255, (20, 20, 3), np.uint8),
                     "pose": spaces.Box(-1.0, 1.0, (3,), np.float32)})


def _config(**changes):
    return dataclasses.replace(TrainConfig(), hidden_size=32, cnn_channels=8, **changes)


def _flat_layout(space):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ObservationLayout(space)


@pytest.mark.parametrize("shape, layout", [
    ((4, 84, 84), "chw"), ((210, 160, 3), "hwc"), ((84, 84), "hw"), ((16, 16, 16), "hwc"),
    ((7, 7, 3), None), ((121,), None), ((3, 15, 40), None), ((2, 3, 4, 5), None),
])
def test_image_layout_reads_channels_first_and_last(shape, layout):
    assert image_layout(shape) == layout


def test_auto_picks_the_cnn_for_images_and_the_mlp_for_vectors():
    assert isinstance(make_policy(ATARI, spaces.Discrete(6), _config()).encoder, ImageEncoder)
    assert isinstance(make_policy(RGB, spaces.Discrete(6), _config()).encoder, ImageEncoder)
    vector = spaces.Box(-1.0, 1.0, (8,), np.float32)
    assert isinstance(make_policy(vector, spaces.Discrete(2), _config()).encoder,
                      ObservationEncoder)
    # mlp forces the MLP even for images; cnn without an image is refused by name
    forced = make_policy(ATARI, spaces.Discrete(6), _config(policy="mlp")).encoder
    assert isinstance(forced, ObservationEncoder)
    with pytest.raises(ValueError, match="train.policy cnn needs an image observation"):
        make_policy(vector, spaces.Discrete(2), _config(policy="cnn"))
    with pytest.raises(ValueError, match="use train.policy auto or mlp"):
        check_encoder_choice(vector, "cnn")  # what preflight asks before a run dir exists
    check_encoder_choice(ATARI, "cnn")
    check_encoder_choice(vector, "lstm")


def test_uint8_pixels_are_scaled_inside_forward():
    encoder = ImageEncoder(RGB, 16, channels=4)
    pixels = torch.randint(0, 256, (3, 64, 48, 3), dtype=torch.uint8)
    # the same function as floats already in [0, 1], handed over channels first
    as_floats = ImageEncoder(spaces.Box(0.0, 1.0, (3, 64, 48), np.float32), 16, channels=4)
    as_floats.load_state_dict(encoder.state_dict())
    expected = as_floats(pixels.permute(0, 3, 1, 2).float() / 255)
    torch.testing.assert_close(encoder(pixels), expected)


def _frames_then_convs(encoder, pixels):
    """The encoder's function spelled out: float32 frames in [0, 1], channels first, through
    the convs (under autocast, the conv casts them itself)."""
    x = pixels.contiguous(memory_format=torch.channels_last).float() * encoder.scale
    return nn.functional.relu(encoder.linear(encoder.convs(x)))


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_pixels_reach_the_convs_as_autocast_would_cast_the_float_frames(precision):
    """forward() converts, scales and casts uint8 frames in one pass (in bfloat16 directly);
    the result is bit-identical to scaling float32 frames and letting autocast cast them, and
    the caller's frames are untouched."""
    encoder = ImageEncoder(ATARI, 32, channels=8)
    pixels = torch.randint(0, 256, (5, *ATARI.shape), dtype=torch.uint8)
    kept = pixels.clone()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        got, expected = encoder(pixels), _frames_then_convs(encoder, pixels)
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)
    assert torch.equal(pixels, kept)
    floats = ImageEncoder(spaces.Box(0.0, 1.0, ATARI.shape, np.float32), 32, channels=8)
    frames = pixels.float() / 255
    before = frames.clone()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        floats(frames)
    assert torch.equal(frames, before)  # float frames are not scaled in place either


def test_a_one_channel_image_without_a_channel_axis_gets_the_cnn():
    gray = spaces.Box(0, 255, (32, 40), np.uint8)
    policy = make_policy(gray, spaces.Discrete(3), _config())
    assert isinstance(policy.encoder, ImageEncoder) and policy.encoder.layout == "hw"
    frames = torch.randint(0, 256, (4, 32, 40), dtype=torch.uint8)
    params, values, _ = policy.step(frames)
    assert params.shape == (4, 3) and values.shape == (4,)


def test_small_images_get_the_small_conv_stack():
    encoder = ImageEncoder(spaces.Box(0, 255, (3, 16, 16), np.uint8), 8, channels=4)
    assert encoder(torch.zeros(2, 3, 16, 16, dtype=torch.uint8)).shape == (2, 8)
    nature = ImageEncoder(ATARI, 8, channels=4)
    assert [m.kernel_size for m in nature.convs if isinstance(m, torch.nn.Conv2d)] == [
        (8, 8), (4, 4), (3, 3)]


def test_dict_observation_has_one_encoder_per_leaf_and_drops_text_with_one_warning(monkeypatch):
    monkeypatch.setattr(gym_spaces, "_warned_drops", set())  # once per process: reset it
    with pytest.warns(UserWarning, match=r"dropped .*mission \(Text\)") as caught:
        layout = ObservationLayout(MINIGRID)
    assert len(caught) == 1 and layout.dropped == ("mission",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ObservationLayout(MINIGRID)  # the same layout again: no second warning
    assert isinstance(layout.space, StructuredBox)
    assert [leaf.name for leaf in layout.space.leaves] == ["direction", "image"]
    policy = make_policy(layout.space, spaces.Discrete(3), _config())
    assert isinstance(policy.encoder, LeafEncoders)
    assert policy.encoder.names == ("direction", "image")
    # both leaves reach the output: changing either changes the action distribution
    obs = {"direction": 1, "image": np.ones((7, 7, 3), np.uint8), "mission": "go"}
    rows = np.stack([layout.flatten(obs)] * 3)
    rows[1, :4] = [0, 0, 1, 0]           # another direction
    rows[2, 4:] = 5                      # another image
    with torch.no_grad():
        params, values, _ = policy.step(torch.as_tensor(rows))
    assert not torch.allclose(values[0], values[1]) and not torch.allclose(values[0], values[2])


def test_image_leaf_next_to_floats_gets_the_cnn_scaled_by_its_own_bounds():
    layout = _flat_layout(MIXED)
    assert layout.space.dtype == np.float32  # pixels stored as floats next to the pose
    encoders = make_policy(layout.space, spaces.Discrete(2), _config()).encoder.encoders
    assert isinstance(encoders[0], ImageEncoder) and encoders[0].scale == pytest.approx(1 / 255)
    assert isinstance(encoders[1], ObservationEncoder)


@pytest.mark.parametrize("kind", ["auto", "lstm"])
@pytest.mark.parametrize("space", [ATARI, MINIGRID, MIXED], ids=["cnn", "minigrid", "mixed"])
def test_policies_act_and_replay_sequences(space, kind):
    flat = _flat_layout(space).space
    policy = make_policy(flat, spaces.Discrete(4), _config(policy=kind))
    obs = np.stack([flat.sample() for _ in range(6)])
    actions, state = policy.act(obs)
    assert actions.shape == (6,) and (state is not None) == (kind == "lstm")
    seq = torch.as_tensor(obs).reshape(2, 3, *flat.shape)
    params, values = policy.forward_sequence(seq)
    assert values.shape == (6,)


@pytest.mark.parametrize("space", [ATARI, MINIGRID], ids=["cnn", "dict"])
def test_cnn_and_dict_policies_save_and_load_weights_only(space):
    flat = _flat_layout(space).space
    config = _config()
    policy = make_policy(flat, spaces.Discrete(4), config)
    buffer = io.BytesIO()
    torch.save({"policy": policy.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    torch.manual_seed(123)  # a differently initialised twin takes the saved weights exactly
    twin = make_policy(_flat_layout(space).space, spaces.Discrete(4), config)
    twin.load_state_dict(state["policy"])
    obs = torch.as_tensor(np.stack([flat.sample() for _ in range(4)]))
    with torch.no_grad():
        torch.testing.assert_close(policy.step(obs)[:2], twin.step(obs)[:2])


def test_vector_policy_keeps_its_state_dict_names():
    # checkpoints of earlier runs (MLP on a vector) still load: same parameter names
    policy = make_policy(spaces.Box(0, 2, (9,), np.uint8), spaces.Discrete(2), _config())
    assert {"encoder.table", "encoder.bias", "hidden.weight"} <= set(policy.state_dict())


def _train_save_and_load(spec, overrides, tmp_path):
    from puffer_tui.engine.algo.policy import load_policy
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.checkpoint import save_checkpoint
    from puffer_tui.engine.shared.config import load_config

    base = {"train.torch_threads": 1, "vec.backend": "serial", "vec.num_envs": 2,
            "train.horizon": 4, "train.minibatch_size": 8, "train.hidden_size": 16,
            "train.cnn_channels": 4, "train.total_timesteps": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = load_config(spec, {**base, **overrides})
        with Trainer(config) as trainer:
            trainer.run_epoch()
            path = save_checkpoint(tmp_path, trainer.state_dict())
            saved = trainer.policy
        loaded, loaded_config = load_policy(path)
    assert loaded_config.env_name == spec
    for name, value in saved.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], value, msg=name)
    return loaded


def test_a_dict_policy_checkpoint_loads_through_load_policy(tmp_path):
    pytest.importorskip("minigrid", reason="minigrid not installed (pip install "
                        "'puffer-tui[minigrid]')")
    loaded = _train_save_and_load("gym:MiniGrid-Empty-5x5-v0", {}, tmp_path)
    assert isinstance(loaded.encoder, LeafEncoders)


def test_a_cnn_policy_checkpoint_loads_through_load_policy(tmp_path):
    pytest.importorskip("ale_py", reason="ale-py not installed (pip install 'puffer-tui[atari]')")
    loaded = _train_save_and_load("gym:ALE/Pong-v5", {"vec.num_envs": 1, "train.minibatch_size": 4},
                                   tmp_path)
    assert isinstance(loaded.encoder, ImageEncoder)
    assert loaded.observation_space.shape == (4, 84, 84)
