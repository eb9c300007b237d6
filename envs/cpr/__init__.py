"""cpr: a common-pool-resource grid world; agents harvest regrowing food (multi-agent)."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.cpr import binding

# tile ids (cpr.h)
EMPTY, GREY, YELLOW, WALL, AGENT = range(5)
# actions
UP, DOWN, LEFT, RIGHT, STAY = range(5)
# The last observation byte is the agent's HP level, 1 (starving) to HP_LEVELS (full).
HP_LEVELS = 4


class CPR(NativeEnv):
    name = "cpr"
    order = 8
    description = (
        "common-pool resource: agents eat regrowing food (yellow needs two agents) or starve"
    )
    binding = binding
    palette = {
        EMPTY: ("·", "grey23"),
        GREY: ("●", "grey70"),
        YELLOW: ("◆", "bold yellow"),
        WALL: ("█", "grey42"),
        AGENT: ("@", "bold bright_cyan"),
    }
    settings_schema = (
        Setting("width", 32, 1, 255, "columns of the field"),
        Setting("height", 32, 1, 255, "rows of the field"),
        Setting("num_agents", 8, 1, 1024, "agents per env"),
        Setting("vision", 5, 1, 15, "radius of the square window each agent sees"),
        Setting("max_ticks", 1000, 1, 10_000_000, "steps before the episode is truncated"),
        Setting("initial_grey", 48, 0, 65025, "grey food placed at reset"),
        Setting("initial_yellow", 16, 0, 65025, "yellow food placed at reset"),
        Setting("wall_density", 0.05, 0.0, 0.5, "chance that each field cell is a wall"),
        Setting("grey_spawn_rate", 0.005, 0.0, 1.0, "per step, chance a grey food seeds a neighbour"),
        Setting("yellow_spawn_rate", 0.002, 0.0, 1.0, "per step, chance a yellow food seeds a neighbour"),
        Setting("random_spawn_rate", 0.005, 0.0, 1.0, "per step, chance a food appears anywhere"),
        Setting("max_hp", 100, 1, 1_000_000, "HP at reset and the most an agent can have"),
        Setting("hp_loss", 1, 0, 1_000_000, "HP lost per step"),
        Setting("grey_hp", 20, 0, 1_000_000, "HP gained from a grey food"),
        Setting("yellow_hp", 50, 0, 1_000_000, "HP gained by each agent sharing a yellow food"),
        Setting("grey_reward", 0.1, -10.0, 10.0, "reward for a grey food"),
        Setting("yellow_reward", 0.5, -10.0, 10.0, "reward for each agent sharing a yellow food"),
        Setting("death_reward", -1.0, -10.0, 10.0, "reward on the step an agent dies"),
    )

    @classmethod
    def resolve(cls, settings):
        s = super().resolve(settings)
        cells = s["width"] * s["height"]
        wanted = s["num_agents"] + s["initial_grey"] + s["initial_yellow"]
        if wanted > cells:
            raise ValueError(
                f"cpr: num_agents + initial_grey + initial_yellow = {wanted} exceed the {cells} "
                f"cells of a {s['width']}x{s['height']} field"
            )
        return s

    @classmethod
    def layout(cls, s):
        window = 2 * s["vision"] + 1
        return EnvLayout(
            observation_space=spaces.Box(0, max(AGENT, HP_LEVELS), (window * window + 1,), np.uint8),
            action_space=spaces.Discrete(5),
            agents_per_env=s["num_agents"],
            frame_shape=(s["height"], s["width"]),
        )

    # -- inspection and scenarios (tests, tools) ----------------------------------------------

    def load_layout(self, tiles, env_index: int = 0) -> None:
        """Start env `env_index`'s episode on `tiles` ((height, width) tile ids; agents are
        numbered in reading order, agents without a tile sit the episode out, masked)."""
        tiles = np.ascontiguousarray(tiles, dtype=np.uint8)
        shape = (self.settings["height"], self.settings["width"])
        if tiles.shape != shape:
            raise ValueError(f"cpr: layout has shape {tiles.shape}, expected {shape}")
        if tiles.max(initial=0) > AGENT:
            raise ValueError(f"cpr: layout tiles must be in [0, {AGENT}], got {tiles.max()}")
        agents = int((tiles == AGENT).sum())
        if agents > self.settings["num_agents"]:
            raise ValueError(
                f"cpr: layout has {agents} agents, the env has {self.settings['num_agents']}"
            )
        binding.load_layout(self._c, env_index, tiles)
        self._reset_done = True

    def food_cells(self, kind: int, env_index: int = 0) -> list[tuple[int, int]]:
        """(row, col) of the foods of `kind` (GREY or YELLOW), as the env's food list has them."""
        return binding.food_cells(self._c, env_index, kind)

    def agent_hp(self, env_index: int = 0) -> list[int]:
        return binding.agent_hp(self._c, env_index)

    def spawn_work(self, env_index: int = 0) -> int:
        """Random draws of the env's last food-spawn pass (scales with food, not grid area)."""
        return binding.spawn_work(self._c, env_index)

    def tick(self, env_index: int = 0) -> int:
        return binding.tick(self._c, env_index)
