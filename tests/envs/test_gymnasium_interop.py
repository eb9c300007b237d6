"""Gymnasium interop: native envs as gymnasium.Env, Gymnasium envs as PufferEnv, and the
flattening of structured spaces (round trips checked with hypothesis)."""

from __future__ import annotations

import importlib
import pickle
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError, PufferEnv
from puffer_tui.envs import ActionLayout, ObservationLayout, from_gymnasium, make_gymnasium


def importable_env(name):
    """Skip while another developer's env module is not importable yet."""
    try:
        importlib.import_module(f"puffer_tui.envs.{name}")
    except ImportError as exc:
        pytest.skip(f"env {name!r} is not importable yet: {exc}")


# ---- make_gymnasium: native envs as gymnasium.Env ----------------------------------------


@pytest.mark.parametrize("name", envs.ENV_NAMES)
@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_every_native_env_passes_gymnasium_check_env(name, render_mode):
    importable_env(name)
    probe = make_gymnasium(name)
    if render_mode not in probe.metadata["render_modes"] and render_mode is not None:
        pytest.skip(f"{name} draws no frame, so it offers no ansi rendering")
    probe.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = make_gymnasium(name, seed=3, render_mode=render_mode)
        check_env(env)
        env.close()
    # Advice about unnormalised Box action bounds is a recommendation, not a defect; so is
    # the one about infinite observation bounds where they are the Gymnasium env's own
    # (cartpole_v1 ports CartPole-v1, whose velocities are unbounded).
    infinite = ("infinity. This is probably too",) if name == "cartpole_v1" else ()
    problems = [str(w.message) for w in caught if "recommend" not in str(w.message)
                and not any(text in str(w.message) for text in infinite)]
    assert not problems, problems


SQUARED_AGENT, SQUARED_TARGET, RIGHT = 1, 2, 4


def test_squared_gym_step_types_copies_and_same_step_autoreset():
    env = make_gymnasium("squared", seed=0, size=5, num_targets=1, max_ticks=2)
    obs, info = env.reset()
    assert info == {} and obs.dtype == np.uint8 and obs.shape == (25,)
    results = [env.step(RIGHT), env.step(np.int64(RIGHT))]
    for step_obs, reward, terminated, truncated, _ in results:
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
        assert not np.shares_memory(step_obs, env.unwrapped._env.observations), "a copy"
    obs, reward, terminated, truncated, info = results[1]
    assert terminated or truncated, "max_ticks=2 ends the episode on the second step"
    # the observation is already the first of the next episode: agent back at the centre
    grid = obs.reshape(5, 5)
    assert grid[2, 2] == SQUARED_AGENT and (grid == SQUARED_TARGET).sum() == 1
    assert info["episode"]["episode_length"] == 2.0
    assert set(info["episode"]) >= {"episode_return", "episode_length", "score"}
    assert results[0][4] == {}, "no episode stats on a step that ends nothing"


def test_gym_truncation_reports_the_final_observation():
    # squared moves right twice from the centre of a 7x7 grid; the time-out after 2 steps
    # keeps the observation with the agent two cells right of the centre
    env = make_gymnasium("squared", seed=0, size=7, num_targets=1, max_ticks=2)
    env.reset()
    first = env.step(RIGHT)
    assert "final_observation" not in first[4]
    obs, _, terminated, truncated, info = env.step(RIGHT)
    assert truncated and not terminated  # targets sit on the border, off the agent's path
    final = info["final_observation"].reshape(7, 7)
    assert final[3, 5] == SQUARED_AGENT and final[3, 3] != SQUARED_AGENT
    assert obs.reshape(7, 7)[3, 3] == SQUARED_AGENT  # the next episode's first observation
    assert not np.shares_memory(info["final_observation"], env.unwrapped._env.final_observations)


def test_gym_reset_seeding_is_reproducible():
    a, b = make_gymnasium("squared", seed=11), make_gymnasium("squared")
    first_a, _ = a.reset()
    first_b, _ = b.reset(seed=11)
    assert np.array_equal(first_a, first_b), "the constructor seed drives the first reset"
    unseeded = [a.reset()[0], b.reset()[0]]
    assert np.array_equal(*unseeded), "later resets draw seeds from the seeded np_random"
    seeds = {make_gymnasium("squared").reset(seed=s)[0].tobytes() for s in range(8)}
    assert len(seeds) > 1, "different seeds give different episodes"


def test_gym_render_draws_the_palette_glyphs():
    env = make_gymnasium("squared", render_mode="ansi", size=7, num_targets=3)
    env.reset(seed=2)
    text = env.render()
    rows = text.split("\n")
    assert len(rows) == 7 and all(len(row) == 7 for row in rows)
    glyph = {tile: g for tile, (g, _) in env.unwrapped._env.palette.items()}
    assert rows[3][3] == glyph[SQUARED_AGENT]
    assert text.count(glyph[SQUARED_TARGET]) == 3
    assert make_gymnasium("squared").render() is None, "no render_mode, no frame"
    with pytest.raises(ValueError, match="render mode"):
        make_gymnasium("squared", render_mode="rgb_array")


def test_gym_bad_actions_and_misuse_raise_clear_errors():
    env = make_gymnasium("squared")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ActionError, match="shape"):
        env.step(np.array([1, 2]))
    with pytest.raises(ActionError, match="out of range"):
        env.step(5)
    with pytest.raises(ActionError, match="integer dtype"):
        env.step(1.0)
    with pytest.raises(KeyError, match="unknown env"):
        make_gymnasium("no-such-env")
    env.close()
    env.close()


def test_multi_agent_env_appears_as_one_joint_gymnasium_env():
    importable_env("snake")
    env = make_gymnasium("snake", seed=1, width=10, height=10, num_snakes=3, num_food=4)
    native = env.unwrapped._env
    obs, _ = env.reset()
    assert obs.shape == (3, *native.single_observation_space.shape)
    assert env.action_space.shape == (3,)
    with pytest.raises(ActionError, match="shape"):
        env.step(0)
    env.action_space.seed(0)
    for _ in range(30):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs.shape == (3, *native.single_observation_space.shape)
        assert reward == pytest.approx(float(info["rewards"].sum()))
        assert terminated == bool(info["terminals"].all())
        assert truncated == bool(info["truncations"].all())
        assert info["masks"].shape == (3,) and info["masks"].dtype == np.bool_


# ---- from_gymnasium: Gymnasium envs as PufferEnv ------------------------------------------


class ScriptedEnv(gymnasium.Env):
    """A structured test env: episodes last `length` steps; reward = action["a"]; it records
    the actions it receives so the tests can see what the adapter unflattened."""

    metadata = {"render_modes": []}
    observation_space = spaces.Dict(
        {
            "t": spaces.Discrete(8),
            "nested": spaces.Tuple((spaces.MultiBinary(2), spaces.Discrete(3, start=-1))),
            "vec": spaces.Box(-1.0, 1.0, (2,), np.float64),
        }
    )
    action_space = spaces.Dict(
        {"a": spaces.Discrete(3, start=1), "b": spaces.MultiDiscrete([2, 4])}
    )

    def __init__(self, length=3, truncate=False, score=None):
        self.length, self.truncate, self.score = length, truncate, score
        self.received = []
        self.t = 0

    def _obs(self):
        noise = self.np_random.uniform(-1, 1, 2)
        return {"t": self.t, "nested": (np.array([1, 0], np.int8), self.t % 3 - 1), "vec": noise}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.received.append(action)
        self.t += 1
        done = self.t >= self.length
        info = {"score": self.score} if done and self.score is not None else {}
        terminated, truncated = (False, done) if self.truncate else (done, False)
        return self._obs(), float(action["a"]), terminated, truncated, info


def test_from_gymnasium_unflattens_actions_and_autoresets_in_the_same_step():
    env = from_gymnasium(ScriptedEnv, log_interval=1, length=3)(num_envs=2, seed=4)
    assert isinstance(env, PufferEnv)
    assert env.single_action_space == spaces.MultiDiscrete([3, 2, 4])
    obs, _ = env.reset()
    assert env.unflatten_observations(obs)["t"].tolist() == [0, 0]
    rewards = []
    for step in range(3):
        obs, rew, term, trunc, infos = env.step(np.array([[2, 1, 3], [0, 0, step]]))
        rewards.append(rew.copy())
    received = env.envs[0].received[0]
    assert received["a"] == 3 and received["b"].tolist() == [1, 3], "start offset added back"
    assert env.envs[1].received[2]["b"].tolist() == [0, 2]
    assert term.tolist() == [True, True] and trunc.tolist() == [False, False]
    assert env.unflatten_observations(obs)["t"].tolist() == [0, 0], "first obs of next episode"
    assert infos == [{"episode_return": 6.0, "episode_length": 3.0, "score": 6.0, "n": 2.0}]
    assert np.array(rewards)[:, 0].tolist() == [3.0, 3.0, 3.0]


def test_from_gymnasium_truncation_and_reported_score():
    env = from_gymnasium(ScriptedEnv, log_interval=2, length=2, truncate=True, score=0.25)(
        num_envs=1
    )
    env.reset(seed=0)
    _, _, term, trunc, infos = env.step(np.array([[0, 0, 0]]))
    assert infos == [] and not trunc[0]
    _, _, term, trunc, infos = env.step(np.array([[0, 0, 0]]))
    assert trunc[0] and not term[0], "truncation is not termination"
    assert infos[0]["score"] == 0.25 and infos[0]["episode_return"] == 2.0


def test_from_gymnasium_seeds_env_i_with_seed_plus_i():
    env = from_gymnasium("CartPole-v1")(num_envs=3, seed=10)
    obs, _ = env.reset()
    for i in range(3):
        expected, _ = gymnasium.make("CartPole-v1").reset(seed=10 + i)
        assert np.array_equal(obs[i], expected)
    again = from_gymnasium("CartPole-v1")(num_envs=3, seed=0)
    assert np.array_equal(again.reset(seed=10)[0], obs)


def test_from_gymnasium_refuses_bad_actions_before_stepping_any_env():
    env = from_gymnasium(ScriptedEnv)(num_envs=2)
    env.reset(seed=0)
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros((2, 2), np.int32))
    with pytest.raises(ActionError, match="integer dtype"):
        env.step(np.zeros((2, 3), np.float32))
    with pytest.raises(ActionError, match=r"out of range \[0, 4\)"):
        env.step(np.array([[0, 0, 0], [0, 0, 4]], np.int32))
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([[0, -1, 0], [0, 0, 0]], np.int64))
    assert env.envs[0].received == [] and env.envs[1].received == []
    box = from_gymnasium("Pendulum-v1")(num_envs=1)
    box.reset(seed=0)
    with pytest.raises(ActionError, match="not finite"):
        box.step(np.array([[np.nan]], np.float32))


def _mixed_action_env():
    env = ScriptedEnv()
    env.action_space = spaces.Tuple((spaces.Discrete(2), spaces.Box(-1, 1, (1,))))
    return env


def _text_observation_env():
    env = ScriptedEnv()
    env.observation_space = spaces.Text(5)
    return env


def test_unsupported_spaces_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"mixes discrete \(0\) and continuous \(1\)"):
        from_gymnasium(_mixed_action_env)
    with pytest.raises(TypeError, match="unsupported space Text"):
        from_gymnasium(_text_observation_env)
    with pytest.raises(ValueError, match="integer dtype"):
        ActionLayout(spaces.Box(0, 5, (2,), np.int64))
    with pytest.raises(TypeError, match="Gymnasium env id or a callable"):
        from_gymnasium(42)


def test_creators_pickle():
    for creator in (from_gymnasium("CartPole-v1"), from_gymnasium(ScriptedEnv, length=5)):
        env = pickle.loads(pickle.dumps(creator))(num_envs=2, seed=1)
        obs, _ = env.reset()
        assert obs.shape == (2, *env.single_observation_space.shape)
        env.close()


# ---- flattening: dtypes and round trips ---------------------------------------------------


@pytest.mark.parametrize(
    "space,dtype",
    [
        (spaces.Dict({"a": spaces.Discrete(3), "b": spaces.MultiBinary(4)}), np.uint8),
        (spaces.Tuple((spaces.Discrete(3), spaces.MultiDiscrete([300]))), np.uint16),
        (spaces.Tuple((spaces.MultiDiscrete([3], start=[-5]), spaces.Discrete(2))), np.int8),
        (spaces.Tuple((spaces.Box(0, 1, (2,), np.float32), spaces.Discrete(9))), np.float32),
        (spaces.Tuple((spaces.Box(0, 1, (2,), np.float32), spaces.MultiDiscrete([70000]))),
         np.float32),
        (spaces.Tuple((spaces.Box(0, 1, (2,), np.float32), spaces.Box(0, 9, (1,), np.int32))),
         np.float32),
        (spaces.Tuple((spaces.Box(0, 1, (2,), np.float32), spaces.Box(0, 2**30, (1,), np.int32))),
         np.float64),
    ],
)
def test_flat_observation_dtype_is_the_narrowest_lossless_one(space, dtype):
    assert ObservationLayout(space).space.dtype == dtype


def test_lossy_observation_mix_is_refused_naming_the_leaf():
    space = spaces.Dict({"big": spaces.Box(0, 2**62, (1,), np.int64), "x": spaces.Box(0, 1)})
    with pytest.raises(ValueError, match="leaf big"):
        ObservationLayout(space)


def test_top_level_box_passes_through_with_its_shape_and_dtype():
    space = spaces.Box(0, 255, (4, 3), np.uint8)
    layout = ObservationLayout(space)
    assert layout.space is space
    value = space.sample()
    assert np.array_equal(layout.unflatten(layout.flatten(value)), value)


def exactly_equal(a, b) -> bool:
    """Same structure, same container types, same dtypes and same values."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(
            exactly_equal(a[k], b[k]) for k in a
        )
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(exactly_equal, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


small_shape = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
box_leaf = st.one_of(
    st.builds(lambda s: spaces.Box(-2.0, 3.0, s, np.float32), small_shape),
    st.builds(lambda s: spaces.Box(-np.inf, np.inf, s, np.float64), small_shape),
    st.builds(lambda s: spaces.Box(0, 255, s, np.uint8), small_shape),
    st.builds(lambda s, lo: spaces.Box(lo, lo + 1000, s, np.int64), small_shape,
              st.integers(-5000, 5000)),
)
discrete_leaf = st.one_of(
    st.builds(spaces.Discrete, st.integers(1, 6), start=st.integers(-3, 3)),
    st.builds(lambda nvec: spaces.MultiDiscrete(nvec), st.lists(st.integers(1, 500), min_size=1,
                                                                  max_size=3)),
    st.builds(spaces.MultiBinary, st.integers(1, 4)),
)


def nested(leaves):
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda xs: spaces.Tuple(xs)),
            st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), children, min_size=1,
                            max_size=3).map(spaces.Dict),
        ),
        max_leaves=6,
    )


@settings(max_examples=60, deadline=None)
@given(space=nested(st.one_of(box_leaf, discrete_leaf)), seed=st.integers(0, 2**16))
def test_observation_flatten_then_unflatten_is_exact(space, seed):
    layout = ObservationLayout(space)
    space.seed(seed)
    samples = [space.sample() for _ in range(3)]
    flat = np.stack([layout.flatten(x) for x in samples])
    for i, sample in enumerate(samples):
        row = flat[i, ...]  # stays an array (not a scalar) for a 0-d top-level Box
        assert layout.space.contains(row)
        assert exactly_equal(layout.unflatten(row), sample)
    batch = layout.unflatten(flat)  # leading batch dimension on every leaf
    for leaf in layout.leaves:
        column = batch
        for key in leaf.path:
            column = column[key]
        assert column.shape[0] == 3


@settings(max_examples=60, deadline=None)
@given(space=nested(discrete_leaf), seed=st.integers(0, 2**16))
def test_discrete_action_flatten_then_unflatten_is_exact(space, seed):
    layout = ActionLayout(space)
    space.seed(seed)
    action = space.sample()
    row = layout.flatten(action)
    assert layout.space.contains(row.astype(np.int64))
    assert exactly_equal(layout.unflatten(row), action)


def test_unflatten_works_on_torch_batches():
    torch = pytest.importorskip("torch")
    space = ScriptedEnv.observation_space
    layout = ObservationLayout(space)
    space.seed(0)
    flat = np.stack([layout.flatten(space.sample()) for _ in range(4)])
    from_numpy = layout.unflatten(flat)
    from_torch = layout.unflatten(torch.from_numpy(flat))
    assert from_torch["t"].dtype == torch.int64
    assert np.array_equal(from_torch["t"].numpy(), from_numpy["t"])
    assert np.array_equal(from_torch["nested"][1].numpy(), from_numpy["nested"][1])
    assert np.allclose(from_torch["vec"].numpy(), from_numpy["vec"])


@pytest.mark.parametrize(
    "space,flat_space",
    [
        (spaces.Discrete(4, start=2), spaces.Discrete(4)),
        (spaces.MultiDiscrete([[2, 3], [4, 5]], start=[[1, 1], [0, -2]]),
         spaces.MultiDiscrete([2, 3, 4, 5])),
        (spaces.MultiBinary((2, 2)), spaces.MultiDiscrete([2, 2, 2, 2])),
        (spaces.Box(-1, 1, (2, 2), np.float64), spaces.Box(-1, 1, (2, 2), np.float32)),
        (spaces.Dict({"x": spaces.Box(-1, 1, (2,), np.float32), "y": spaces.Box(0, 5, (1,))}),
         spaces.Box(np.array([-1, -1, 0]), np.array([1, 1, 5]), (3,), np.float32)),
    ],
)
def test_action_layouts_of_every_supported_kind_round_trip(space, flat_space):
    layout = ActionLayout(space)
    assert layout.space == flat_space
    space.seed(1)
    action = space.sample()
    if isinstance(space, spaces.Box):
        action = action.astype(np.float32).astype(space.dtype)  # what a float32 buffer holds
    row = layout.flatten(action)
    assert layout.space.contains(row.astype(layout.space.dtype))
    assert exactly_equal(layout.unflatten(row), action)
