"""Rules of cpr (moves, grey and two-agent yellow food, regrowth, HP, death masks, episode end),
its food lists, the scaling of the spawn pass, seeded determinism and a random-action fuzz."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError
from puffer_tui.envs.cpr import AGENT, EMPTY, GREY, LEFT, RIGHT, STAY, UP, WALL, YELLOW

# no spawning, no walls, no initial food: scenarios come from load_layout
QUIET = dict(grey_spawn_rate=0.0, yellow_spawn_rate=0.0, random_spawn_rate=0.0, wall_density=0.0,
             initial_grey=0, initial_yellow=0)


def make(num_envs=1, seed=0, **settings):
    return envs.make("cpr", num_envs=num_envs, seed=seed, log_interval=10**9, **settings)


def layout(rows):
    """A tile grid from strings: . empty, g grey, y yellow, # wall, a agent."""
    codes = {".": EMPTY, "g": GREY, "y": YELLOW, "#": WALL, "a": AGENT}
    return np.array([[codes[ch] for ch in row] for row in rows], np.uint8)


def step(env, *actions):
    return env.step(np.array(actions, np.int32))


def test_reset_places_agents_walls_and_the_initial_food():
    env = make(num_envs=3, seed=1, width=20, height=15, num_agents=6, initial_grey=30,
               initial_yellow=7, wall_density=0.1)
    env.reset()
    for i in range(3):
        frame = env.frame(i)
        assert (frame == AGENT).sum() == 6
        assert (frame == GREY).sum() == 30 and (frame == YELLOW).sum() == 7
        assert 0 < (frame == WALL).sum() < 0.25 * frame.size
    assert env.masks.all()


def test_moves_are_blocked_by_walls_agents_and_yellow_food_and_grey_food_is_eaten():
    env = make(width=5, height=3, num_agents=2, max_hp=50, hp_loss=1, grey_hp=20,
               grey_reward=0.25, **QUIET)
    env.load_layout(layout(["#a.y.",
                            ".ag..",
                            "....."]))
    _, rew, *_ = step(env, UP, UP)          # agent 0 hits the wall, agent 1 hits agent 0
    assert (env.frame() == layout(["#a.y.", ".ag..", "....."])).all()
    assert rew.tolist() == [0, 0] and env.agent_hp() == [49, 49]
    _, rew, *_ = step(env, LEFT, RIGHT)     # 0: wall; 1 eats the grey food
    assert (env.frame() == layout(["#a.y.", "..a..", "....."])).all()
    assert rew.tolist() == [0, 0.25] and env.agent_hp() == [48, 49], "HP is capped at max_hp"
    assert env.food_cells(GREY) == []
    _, rew, *_ = step(env, RIGHT, STAY)     # 0 moves right: now next to the yellow food alone
    _, rew, *_ = step(env, RIGHT, STAY)     # the yellow food blocks
    assert (env.frame() == layout(["#.ay.", "..a..", "....."])).all()
    assert rew.tolist() == [0, 0] and env.food_cells(YELLOW) == [(0, 3)]


def test_yellow_food_needs_two_agents_in_its_four_neighbourhood_and_feeds_all_of_them():
    env = make(width=5, height=5, num_agents=4, yellow_reward=0.5, yellow_hp=30, max_hp=100,
               hp_loss=1, **QUIET)
    env.load_layout(layout([".....",
                            ".a...",
                            "..y..",
                            "...a.",
                            "a...a"]))
    _, rew, *_ = step(env, STAY, STAY, STAY, STAY)
    assert env.food_cells(YELLOW) == [(2, 2)], "diagonal agents do not count"
    assert not rew.any()
    _, rew, *_ = step(env, RIGHT, STAY, STAY, STAY)   # agent 0 now above the food: still alone
    assert env.food_cells(YELLOW) == [(2, 2)] and not rew.any()
    _, rew, *_ = step(env, STAY, LEFT, STAY, STAY)    # agent 1 (row 3) moves next to it
    assert env.food_cells(YELLOW) == [] and env.frame()[2, 2] == EMPTY
    assert rew.tolist() == [0.5, 0.5, 0, 0]
    assert env.agent_hp() == [99, 99, 97, 97], "fed to max_hp, then this step's loss"
    log_before = env.log()
    assert log_before == {}, "no episode has ended"


def test_three_agents_around_a_yellow_food_all_share_it():
    env = make(width=3, height=3, num_agents=3, yellow_reward=0.5, **QUIET)
    env.load_layout(layout([".a.",
                            "ay.",
                            ".a."]))
    _, rew, *_ = step(env, STAY, STAY, STAY)
    assert rew.tolist() == [0.5, 0.5, 0.5] and env.food_cells(YELLOW) == []


def test_observation_is_the_window_around_the_agent_then_its_hp_level():
    env = make(width=4, height=3, num_agents=2, vision=1, max_hp=8, hp_loss=1, **QUIET)
    env.load_layout(layout(["a.g.",
                            "..#y",
                            "...a"]))
    obs = env.observations
    assert obs.shape == (2, 9 + 1)
    assert obs[0, :9].reshape(3, 3).tolist() == [[WALL, WALL, WALL],
                                                 [WALL, AGENT, EMPTY],
                                                 [WALL, EMPTY, EMPTY]]
    assert obs[1, :9].reshape(3, 3).tolist() == [[WALL, YELLOW, WALL],
                                                 [EMPTY, AGENT, WALL],
                                                 [WALL, WALL, WALL]]
    levels = []
    for _ in range(7):
        levels.append(int(obs[0, 9]))
        step(env, STAY, STAY)
    # HP 8, 7, ..., 2 out of 8: levels ceil(4 * hp / 8)
    assert levels == [4, 4, 3, 3, 2, 2, 1]


def test_food_regrows_only_next_to_food_of_its_kind():
    env = make(seed=3, width=30, height=30, num_agents=1, initial_grey=5, initial_yellow=5,
               grey_spawn_rate=0.2, yellow_spawn_rate=0.2, random_spawn_rate=0.0, hp_loss=0)
    env.reset()
    grown = 0
    for _ in range(25):
        before = env.frame()
        step(env, STAY)
        after = env.frame()
        for kind in (GREY, YELLOW):
            new = np.argwhere((after == kind) & (before != kind))
            padded = np.pad(before == kind, 1)
            for r, c in new:
                assert padded[r : r + 3, c : c + 3].any(), f"food {kind} at {(r, c)} has no parent"
            grown += len(new)
    assert grown > 20


def test_an_empty_map_recovers_through_random_spawns():
    env = make(seed=4, width=12, height=12, num_agents=1, initial_grey=0, initial_yellow=0,
               grey_spawn_rate=0.0, yellow_spawn_rate=0.01, random_spawn_rate=0.5, hp_loss=0,
               wall_density=0.0)
    env.reset()
    for _ in range(60):
        step(env, STAY)
    assert (env.frame() == YELLOW).sum() > 5, "all random food is yellow when grey never seeds"
    assert (env.frame() == GREY).sum() == 0


def test_dead_agents_are_masked_until_the_episode_resets():
    env = make(width=6, height=2, num_agents=2, max_hp=3, hp_loss=1, grey_hp=1, grey_reward=0.0,
               death_reward=-2.0, max_ticks=100, **QUIET)
    env.load_layout(layout(["aggggg",
                            "a....."]))
    # agent 0 eats along the top row and keeps its HP; agent 1 starves after 3 steps
    for _ in range(3):
        obs, rew, term, trunc, _ = step(env, RIGHT, STAY)
    assert term.tolist() == [False, True] and rew.tolist() == [0, -2.0]
    assert env.masks.tolist() == [True, False] and not obs[1].any()
    assert (env.frame() == AGENT).sum() == 1
    for _ in range(2):
        obs, rew, term, trunc, _ = step(env, RIGHT, UP)
        assert env.masks.tolist() == [True, False], "dead stays masked, whatever its action"
        assert rew[1] == 0 and not term[1] and not obs[1].any()
    assert env.food_cells(GREY) == [], "agent 0 ate the whole row"
    for _ in range(2):  # HP 2 without food: dead on the second step
        obs, rew, term, trunc, _ = step(env, LEFT, STAY)
    assert term.tolist() == [True, False] and not trunc.any()
    # every agent dead: the episode ended and a new one started in the same step
    assert env.masks.all() and env.tick() == 0
    log = env.log()
    assert log["n"] == 1 and log["episode_length"] == 7 and log["agents_alive"] == 0
    assert log["grey_eaten"] == 5 and log["yellow_eaten"] == 0 and log["food_left"] == 0
    assert log["score"] == pytest.approx((7 + 3) / (2 * 100))
    assert log["episode_return"] == pytest.approx(-2.0)


def test_agents_left_out_of_a_layout_are_masked_and_all_dead_ends_the_episode():
    env = make(width=8, height=8, num_agents=3, max_hp=2, hp_loss=1, max_ticks=50, **QUIET)
    env.load_layout(layout(["a......."] + ["........"] * 3 + ["...a...."] + ["........"] * 3))
    assert env.masks.tolist() == [True, True, False] and not env.observations[2].any()
    _, _, term, _, _ = step(env, STAY, STAY, STAY)
    assert not term.any()
    _, _, term, trunc, _ = step(env, STAY, STAY, STAY)
    assert term.tolist() == [True, True, False] and not trunc.any()
    assert env.masks.all() and (env.frame() == AGENT).sum() == 3, "a new episode with all three"
    assert env.log()["agents_alive"] == 0


def test_truncation_at_max_ticks_marks_the_live_agents():
    env = make(seed=2, width=8, height=8, num_agents=2, max_hp=100, max_ticks=5, **QUIET)
    env.load_layout(layout(["a.......", "a......."] + ["........"] * 6))
    for t in range(5):
        _, _, term, trunc, _ = step(env, STAY, STAY)
        assert trunc.tolist() == [t == 4] * 2 and not term.any()
    log = env.log()
    assert log["n"] == 1 and log["agents_alive"] == 2 and log["score"] == 1.0
    assert log["episode_length"] == 5 and env.tick() == 0


def food_list_matches_grid(env, i):
    frame = env.frame(i)
    for kind in (GREY, YELLOW):
        cells = env.food_cells(kind, i)
        assert len(cells) == len(set(cells)), "no duplicates in the food list"
        assert sorted(cells) == sorted(map(tuple, np.argwhere(frame == kind).tolist()))


@pytest.mark.parametrize(
    "settings",
    [
        dict(width=3, height=3, num_agents=1, initial_grey=2, initial_yellow=2),
        dict(width=3, height=3, num_agents=9, initial_grey=0, initial_yellow=0),
        dict(width=10, height=10, num_agents=64, initial_grey=0, initial_yellow=0,
             wall_density=0.5, grey_spawn_rate=1.0,
             yellow_spawn_rate=1.0, random_spawn_rate=1.0, max_hp=5),
        dict(width=255, height=4, num_agents=40, vision=15, initial_grey=200, initial_yellow=200,
             grey_spawn_rate=0.3, yellow_spawn_rate=0.3, max_ticks=50),
        dict(width=40, height=40, num_agents=1024, initial_grey=100, initial_yellow=100,
             vision=1, max_hp=30, grey_hp=5),
    ],
)
def test_random_actions_keep_food_lists_agents_and_masks_consistent(settings):
    env = make(num_envs=2, seed=9, **settings)
    env.reset()
    n = settings["num_agents"]
    rng = np.random.default_rng(0)
    masks = env.masks.copy()
    for _ in range(80):
        obs, rew, term, trunc, _ = step(env, *rng.integers(0, 5, 2 * n))
        assert obs.max() <= AGENT and np.isfinite(rew).all()
        assert not obs[~env.masks].any(), "dead agents see zeros"
        died = masks & ~env.masks
        assert term[died].all(), "an agent that dies reports terminal"
        assert not (term & ~masks).any(), "only live agents terminate"
        for i in range(2):
            frame = env.frame(i)
            assert (frame == AGENT).sum() == env.masks[i * n : (i + 1) * n].sum()
            food_list_matches_grid(env, i)
        masks = env.masks.copy()


def spawn_work_per_step(env, steps):
    works, foods = [], []
    for _ in range(steps):
        foods.append(len(env.food_cells(GREY)) + len(env.food_cells(YELLOW)))
        step(env, STAY)
        works.append(env.spawn_work())
    return np.array(works), np.array(foods)


def test_spawn_work_is_proportional_to_food_not_to_grid_area():
    rows = ["g.g.g.g.g.", "..........", ".g.g.g.g.g", "..........", "a........."]
    foods = layout(rows)
    rate = 0.05
    ratios = {}
    for size in (10, 255):
        env = make(seed=5, width=size, height=size, num_agents=1, hp_loss=0, vision=1,
                   grey_spawn_rate=rate, yellow_spawn_rate=0.0, random_spawn_rate=0.0,
                   wall_density=0.0)
        tiles = np.zeros((size, size), np.uint8)
        tiles[: foods.shape[0], : foods.shape[1]] = foods
        env.load_layout(tiles)
        work, food = spawn_work_per_step(env, 100)
        # one draw per geometric gap plus one per seeding food: about 1 + 2 * food * rate
        ratios[size] = work.sum() / (1 + 2 * food * rate).sum()
        assert 0.5 < ratios[size] < 1.5, (size, ratios[size])
    assert ratios[255] < 2 * ratios[10], "a bigger grid adds no spawning work"
    empty = make(width=200, height=200, num_agents=1, initial_grey=0, initial_yellow=0, hp_loss=0,
                 random_spawn_rate=0.0)
    empty.reset()
    step(empty, STAY)
    assert empty.spawn_work() == 0, "no food, no spawning work"


def test_spawn_rate_one_seeds_from_every_food():
    env = make(width=9, height=9, num_agents=1, grey_spawn_rate=1.0, yellow_spawn_rate=0.0,
               random_spawn_rate=0.0, wall_density=0.0, hp_loss=0)
    tiles = np.zeros((9, 9), np.uint8)
    tiles[4, 4], tiles[0, 0] = GREY, AGENT
    env.load_layout(tiles)
    step(env, STAY)
    assert env.spawn_work() == 1 and (env.frame() == GREY).sum() == 2
    step(env, STAY)
    assert env.spawn_work() == 2


def test_same_seed_same_trajectories_and_different_seeds_differ():
    def rollout(seed):
        env = make(num_envs=2, seed=seed, width=16, height=16, num_agents=4, max_hp=30,
                   max_ticks=60)
        env.reset()
        rng = np.random.default_rng(1)
        out = []
        for _ in range(150):
            o, r, t, tr, _ = step(env, *rng.integers(0, 5, 8))
            out.append((o.copy(), r.copy(), t.copy(), tr.copy(), env.masks.copy()))
        return out, env.log()

    (a, log_a), (b, log_b), (c, _) = rollout(6), rollout(6), rollout(7)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert np.array_equal(u, v)
    assert log_a == log_b and log_a["n"] >= 2
    assert any(not np.array_equal(x[0], z[0]) for x, z in zip(a, c))


def test_bad_settings_layouts_and_actions_are_refused_with_clear_errors():
    with pytest.raises(ValueError, match="exceed"):
        make(width=3, height=3, num_agents=5, initial_grey=5, initial_yellow=0)
    with pytest.raises(ValueError, match="width"):
        make(width=256)
    env = make(width=4, height=3, num_agents=1, initial_grey=0, initial_yellow=0)
    env.reset()
    with pytest.raises(ValueError, match="shape"):
        env.load_layout(np.zeros((4, 3), np.uint8))
    with pytest.raises(ValueError, match="2 agents"):
        env.load_layout(layout(["aa..", "....", "...."]))
    with pytest.raises(ActionError, match="out of range"):
        step(env, 5)
    with pytest.raises(IndexError):
        env.food_cells(GREY, env_index=1)
