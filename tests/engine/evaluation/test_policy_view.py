"""The policy's view of a watched agent (engine/evaluation/policy_view.py), on a real trainer:
nothing is computed without a viewer, the critic's error on an episode tells a trained critic
from a fresh one, and the saliency of a trained squared policy lights the target."""

import copy
import time

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.evaluation import policy_view
from puffer_tui.engine.evaluation.policy_view import PolicyWatch, discounted_returns
from puffer_tui.engine.runtime import frame_source
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.shared.config import load_config

# one target on a 5 x 5 grid, 40 steps to reach it: trained to a score of 1 in ~150k steps
SMALL = {"vec.num_envs": 32, "train.horizon": 32, "train.minibatch_size": 512,
         "env.size": 5, "env.num_targets": 1, "env.max_ticks": 40,
         "train.total_timesteps": 10**6, "train.seed": 1}


def small_trainer(safe_point=None, **overrides) -> Trainer:
    return Trainer(load_config("squared", {**SMALL, **overrides}), safe_point=safe_point)


def test_discounted_returns_bootstrap_from_the_end():
    returns = discounted_returns(np.array([0.0, 0.0, 1.0]), 0.5, bootstrap=2.0)
    assert returns.tolist() == [0.5, 1.0, 2.0]


def test_nothing_is_computed_without_a_viewer_of_the_policy(monkeypatch):
    calls = {"observe": 0, "view": 0}
    for name in calls:
        original = getattr(PolicyWatch, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(PolicyWatch, name, counted)
    monkeypatch.setattr(frame_source, "FRAME_INTERVAL", 0.0)  # a capture at every safe point
    holder = {}
    frames = FrameSource(lambda env, view="env": holder["trainer"].frame(env, view),
                         lambda: holder["trainer"])
    trainer = small_trainer(lambda between_steps=False: frames.capture() if frames.due() else None)
    holder["trainer"] = trainer
    try:
        frames.want(frozenset({1}))  # frames watched, the policy not
        trainer.run_epoch()
        assert calls == {"observe": 0, "view": 0}
        assert trainer.step_watch is None and 1 in frames.frames and frames.views == {}

        frames.want(frozenset({1}), {1: None})
        trainer.run_epoch()
        assert calls["observe"] >= SMALL["train.horizon"] - 1 and calls["view"] > 0
        seq, view = frames.views[1]
        assert view["env"] == 1 and len(view["heads"][0]) == 5 and "saliency" not in view
        assert abs(sum(view["heads"][0]) - 1.0) < 1e-3

        frames.want(frozenset({1}))  # the viewer stops asking: the trainer copies nothing
        before = dict(calls)
        trainer.run_epoch()
        assert calls == before and trainer.step_watch is None
    finally:
        trainer.close()


def episode_errors(trainer: Trainer, epochs: int) -> list[float]:
    """The critic's RMS error on each episode of env 0 finished in `epochs` epochs."""
    watch = PolicyWatch(trainer.policy, lambda: trainer.config.train.gamma, 1,
                        trainer.frame_shape)
    watch.follow(0)
    errors = []

    def observe(*args):
        before = watch.episodes
        watch.observe(*args)
        if watch.episodes != before:
            errors.append(watch.episode["error"])

    trainer.step_watch = observe
    try:
        for _ in range(epochs):
            trainer.run_epoch()
    finally:
        trainer.step_watch = None
    return errors


@pytest.fixture(scope="module")
def trained():
    trainer = small_trainer()
    fresh = episode_errors(trainer, 12)
    while trainer.global_step < 160_000:
        trainer.run_epoch()
    yield trainer, fresh
    trainer.close()


@pytest.mark.learning
def test_the_critics_error_is_small_when_trained_and_large_when_fresh(trained):
    trainer, fresh = trained
    errors = episode_errors(trainer, 4)
    assert len(fresh) >= 2 and len(errors) >= 5
    assert np.mean(errors) < 0.1
    assert np.mean(fresh) > 2 * np.mean(errors)


@pytest.mark.learning
def test_saliency_of_a_trained_squared_policy_lights_the_target(trained):
    trainer, _ = trained
    policy = trainer.policy
    watch = PolicyWatch(policy, lambda: 0.99, 1, (5, 5))
    rng = np.random.default_rng(0)
    for _ in range(20):
        target, agent = rng.choice(25, 2, replace=False)
        obs = np.zeros(25, np.uint8)
        obs[agent], obs[target] = 1, 2
        with torch.no_grad():
            params, _, _ = policy.step(torch.from_numpy(obs)[None])
        watch.observe(obs[None], np.array([0]), params.argmax(-1), np.zeros(1), np.zeros(1),
                      np.zeros(1, bool), np.zeros(1, bool))
        view = watch.view()
        for of in ("action", "value"):
            grid = np.asarray(watch.gradient(of)).reshape(-1)
            ranked = [int(c) for c in np.argsort(-grid) if c != agent]
            assert ranked[0] == target, (of, agent, target, grid.round(3))
            assert grid[target] > 0 and np.count_nonzero(grid) == 2  # empty cells read 0
        saliency = view if "saliency" in view else None
        assert saliency is None  # asked for by follow() only
    watch.follow(0, saliency="action")
    view = watch.view()
    assert view["saliency"]["of"] == "action" and view["saliency"]["height"] == 5


def test_a_flat_vector_observation_ranks_its_dimensions():
    trainer = Trainer(load_config("gym:CartPole-v1", {"vec.num_envs": 2, "train.horizon": 16,
                                                      "train.minibatch_size": 32}))
    try:
        watch = PolicyWatch(trainer.policy, lambda: 0.99, 1, trainer.frame_shape,
                            ["cart position", "cart velocity", "pole angle", "pole velocity"])
        watch.follow(1, saliency="value")
        trainer.step_watch = watch.observe
        trainer.run_epoch()
        view = watch.view()
        dims = view["saliency"]["dims"]
        assert sorted(d[0] for d in dims) == [0, 1, 2, 3]
        assert dims[0][1] == 1.0 and dims[0][2] in watch.obs_names
        assert [d[1] for d in dims] == sorted((d[1] for d in dims), reverse=True)
    finally:
        trainer.close()


def test_multi_discrete_and_box_heads_are_read_per_head():
    from gymnasium import spaces

    from puffer_tui.engine.algo.policy import Policy

    obs_space = spaces.Box(-1, 1, (3,), np.float32)
    for action_space, check in (
        (spaces.MultiDiscrete([3, 2]), lambda v: [len(h) for h in v["heads"]] == [3, 2]),
        (spaces.Box(-1, 1, (2,), np.float32),
         lambda v: len(v["mean"]) == 2 and all(s > 0 for s in v["std"])),
    ):
        policy = Policy(obs_space, action_space, hidden_size=8)
        watch = PolicyWatch(policy, lambda: 0.9)
        actions, _ = policy.actor.sample(policy.step(torch.zeros(1, 3))[0])
        watch.observe(np.zeros((1, 3), np.float32), np.array([0]), actions, np.zeros(1),
                      np.zeros(1), np.zeros(1, bool), np.zeros(1, bool))
        view = watch.view()
        assert view["kind"] == policy.actor.kind and check(view), view
        assert len(view["action"]) == 2


def test_a_series_longer_than_the_chart_is_averaged_down():
    series = policy_view._series(np.arange(1000, dtype=float))
    assert len(series) == policy_view.SERIES_POINTS and series[0] < series[-1]


def test_a_costly_saliency_map_is_reused_for_longer(monkeypatch):
    """A map whose backward pass took 10 ms is kept for 10 ms / SALIENCY_SHARE (2 s), not
    recomputed at every SALIENCY_INTERVAL: the viewer's cost stays a bounded share of training."""
    trainer = small_trainer()
    try:
        watch = PolicyWatch(trainer.policy, lambda: 0.99, 1, (5, 5))
        obs = np.zeros((1, 25), np.uint8)
        obs[0, 3], obs[0, 17] = 1, 2
        watch.observe(obs, np.array([0]), np.array([0]), np.zeros(1), np.zeros(1),
                      np.zeros(1, bool), np.zeros(1, bool))
        watch.follow(0, saliency="action")
        made = []

        def costly(of="action"):
            time.sleep(0.01)
            made.append(of)
            return {"of": of}

        monkeypatch.setattr(watch, "saliency_map", costly)
        clock = {"now": 100.0}
        monkeypatch.setattr(policy_view.time, "monotonic", lambda: clock["now"])
        for _ in range(8):  # 8 frames at 4 a second: 1.75 s
            assert watch.view()["saliency"] == {"of": "action"}
            clock["now"] += 0.25
        assert len(made) == 1
        clock["now"] += 10 * 0.01 / policy_view.SALIENCY_SHARE  # well past its interval
        watch.view()
        assert len(made) == 2
    finally:
        trainer.close()


def test_the_frame_sources_repeated_wish_keeps_the_saliency_map(monkeypatch):
    """The frame source repeats its wish (follow) at every capture: that alone must not throw
    the map away, or it is recomputed at every frame whatever its interval."""
    made = []
    original = PolicyWatch.saliency_map

    def counted(self, of="action"):
        made.append(of)
        return original(self, of)

    monkeypatch.setattr(PolicyWatch, "saliency_map", counted)
    monkeypatch.setattr(frame_source, "FRAME_INTERVAL", 0.0)  # a capture at every safe point

    class FrozenClock:  # the watch's clock stands still: every map is younger than its interval
        perf_counter = staticmethod(time.perf_counter)
        monotonic = staticmethod(lambda: 100.0)

    monkeypatch.setattr(policy_view, "time", FrozenClock)
    monkeypatch.setattr(frame_source, "time", FrozenClock)  # one clock for the keep_from time
    holder = {}
    frames = FrameSource(lambda env, view="env": holder["trainer"].frame(env, view),
                         lambda: holder["trainer"])
    frames.policy_interval = 0.0  # a view at every capture
    trainer = small_trainer(lambda between_steps=False: frames.capture() if frames.due() else None)
    holder["trainer"] = trainer
    try:
        frames.want(frozenset({0}), {0: "action"})
        trainer.run_epoch()
        watch = frames.watches[0]
        assert watch.computed > 5 and made == ["action"]
        assert frames.views[0][1]["saliency"]["of"] == "action"
        frames.want(frozenset({0}), {0: "value"})  # a new kind asked for: a new map at once
        trainer.run_epoch()
        assert made == ["action", "value"]
    finally:
        trainer.close()


def test_a_view_reads_the_head_output_the_step_drew_from(monkeypatch):
    """The strip is the distribution the step sampled from (its params, kept with the row),
    with no forward pass of its own, in the torch collection (squared) and the numpy one
    (CartPole's plain MLP)."""
    for env, overrides in (("squared", SMALL),
                           ("gym:CartPole-v1", {"vec.num_envs": 4, "train.horizon": 16,
                                                "train.minibatch_size": 64})):
        trainer = Trainer(load_config(env, overrides))
        try:
            watch = PolicyWatch(trainer.policy, lambda: 0.99, 1, trainer.frame_shape)
            watch.follow(0)
            collecting = copy.deepcopy(trainer.policy)  # the weights the steps drew with
            trainer.step_watch = watch.observe
            trainer.run_epoch()  # its update comes after the steps
            trainer.step_watch = None
            monkeypatch.setattr(trainer.policy, "step", _no_forward)
            view = watch.view()
            monkeypatch.undo()
            assert view is not None, env
            with torch.no_grad():  # the same row through the policy again: the same numbers
                params, value, _ = collecting.step(_tensor_of(watch._obs)[None])
            expected = torch.softmax(params.float()[0], -1).numpy()
            assert np.allclose(view["heads"][0], expected, atol=1e-3), env
            assert abs(view["value"] - float(value.reshape(-1)[0])) < 1e-3, env
        finally:
            trainer.close()


def _no_forward(*args, **kwargs):
    raise AssertionError("a forward pass in the view")


def _tensor_of(row):
    return row if isinstance(row, torch.Tensor) else torch.from_numpy(np.asarray(row))


def test_steps_between_views_copy_only_their_scalars(monkeypatch):
    """A viewer at 4 frames a second: the row's arrays are copied in the steps just before each
    view, not at every step."""
    copies = []
    original = policy_view._row
    monkeypatch.setattr(policy_view, "_row", lambda x, pos: copies.append(1) or original(x, pos))
    holder = {}
    frames = FrameSource(lambda env, view="env": holder["trainer"].frame(env, view),
                         lambda: holder["trainer"])
    frames.policy_interval = 0.25
    trainer = small_trainer(lambda between_steps=False: frames.capture() if frames.due() else None)
    holder["trainer"] = trainer
    try:
        frames.want(frozenset({0}), {0: None})
        began = time.monotonic()
        while time.monotonic() - began < 3.0:
            trainer.run_epoch()
        watch = frames.watches[0]
        assert watch.computed >= 2
        # a kept step copies its observation, action and head output (squared's torch
        # collection gives it); the code before copied two arrays at every step
        assert len(copies) < watch.observed, (len(copies), watch.observed)
        assert frames.views[0][1]["heads"]
    finally:
        trainer.close()


def test_a_view_waits_for_a_kept_step_rather_than_show_an_older_one():
    trainer = small_trainer()
    try:
        watch = PolicyWatch(trainer.policy, lambda: 0.99, 1, (5, 5))
        watch.follow(0)
        trainer.step_watch = watch.observe
        trainer.run_epoch()  # keep_from 0: every step kept
        assert watch.ready and watch.view() is not None
        watch.keep_from = time.monotonic() + 3600  # no view due for an hour
        trainer.run_epoch()
        assert not watch.ready and watch.view() is None  # its last kept step is stale
        watch.keep_from = time.monotonic()
        trainer.run_epoch()
        assert watch.ready and watch.view()["step"] == watch._steps
    finally:
        trainer.step_watch = None
        trainer.close()


def test_an_image_pixel_reads_its_contrast_with_its_neighbourhood():
    """A uniform field or wall reads 0 (blurring it there changes nothing); a small object
    reads most at itself, in every layout."""
    frame = np.full((4, 20, 24), 87, np.uint8)
    frame[:, :3, :] = 236  # a wall: uniform inside
    frame[-1, 10, 12] = 236  # the ball, in the newest frame
    off = policy_view._off_background(frame)
    assert off.shape == frame.shape
    assert off[:, 15:, :5].max() == 0 and off[:, 0, :].max() == 0  # the field, the wall
    assert np.unravel_index(off[-1].argmax(), off[-1].shape) == (10, 12)
    assert off[:3, 8:13, 10:15].max() == 0  # no ball in the older frames
    hwc = policy_view._off_background(np.moveaxis(frame, 0, -1))
    assert np.allclose(np.moveaxis(hwc, -1, 0), off)
    assert np.allclose(policy_view._off_background(frame[-1]), off[-1])
