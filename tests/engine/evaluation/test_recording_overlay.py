"""`eval --record --overlay` and `eval --render`: a policy's play with its view drawn in,
every image the same size, the saliency as heat, the view paired with the frame decided on."""

import importlib.util

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.policy import make_policy
from puffer_tui.engine.evaluation.evaluate import Evaluator
from puffer_tui.engine.evaluation.policy_view import EvaluatorWatch
from puffer_tui.engine.evaluation.recording_overlay import MIN_HEIGHT, PANEL_WIDTH, overlay_frames
from puffer_tui.engine.shared.config import load_config
from puffer_tui.envs import env_class

# the overlay draws with Pillow, which the record extra brings (imageio)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("PIL") is None,
                                reason="needs Pillow: pip install \"puffer-tui[record]\"")


def evaluator(episodes=2):
    config = load_config("squared", {"env.size": 5, "env.num_targets": 1, "env.max_ticks": 8})
    cls = env_class("squared")
    layout = cls.layout(cls.resolve(dict(config.env)))
    torch.manual_seed(0)
    policy = make_policy(layout.observation_space, layout.action_space, config.train)
    return Evaluator(policy, config, None, 1, 7, False, episodes)


def test_overlay_frames_are_one_size_with_the_panel_and_the_heat():
    player = evaluator()
    try:
        images = list(overlay_frames(player, {0: (".", "grey39"), 1: ("@", "cyan"),
                                              2: ("*", "yellow")}, scale=20))
    finally:
        player.close()
    assert len(images) >= 3 and len({im.shape for im in images}) == 1
    height, width, _ = images[0].shape
    assert width == 5 * 20 + PANEL_WIDTH and height == max(5 * 20, MIN_HEIGHT)
    frame = images[1][:100, :100].astype(int)
    assert (frame[..., 0] > frame[..., 2] + 100).any()  # a salient cell glows red-orange
    assert images[1][:, 100:].any()  # the panel has text and bars


def test_the_view_goes_with_the_frame_it_decided_on():
    player = evaluator(episodes=2)
    try:
        pairs = list(EvaluatorWatch(player).frames())
    finally:
        player.close()
    views = [v for _, v in pairs if v is not None]
    assert len(views) == len(pairs) and views[0]["step"] == 1
    assert all(abs(sum(v["heads"][0]) - 1) < 1e-3 for v in views)
    assert any("episode" in v for v in views)  # the first episode ended while playing
    episode = next(v["episode"] for v in views if "episode" in v)
    assert len(episode["values"]) == len(episode["returns"]) == episode["length"]
    assert np.isfinite(episode["error"])
