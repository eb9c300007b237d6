"""password: guess a fixed binary password one bit per step; rewarded only when all match."""

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.password import binding

FRAME_ROWS = 2  # this episode's guesses, the last episode's guesses judged


class Password(NativeEnv):
    name = "password"
    order = 5
    description = "guess a fixed `length`-bit password one bit per step; 1 if all bits match"
    binding = binding
    # tile ids as in password.h: pending guesses, then the last episode's right / wrong bits
    palette = {
        0: ("·", "grey39"),
        1: ("0", "bold bright_white"),
        2: ("1", "bold bright_white"),
        3: ("0", "bold green"),
        4: ("1", "bold green"),
        5: ("0", "bold red"),
        6: ("1", "bold red"),
    }
    settings_schema = (
        Setting("length", 5, 1, 32, "bits in the password (random guessing finds it once in 2^length)"),
        Setting("password_seed", 42, 0, 2**32 - 1, "seed the password is derived from (same for all envs)"),
    )

    @classmethod
    def layout(cls, s):
        return EnvLayout(
            # guesses so far: +1 / -1, 0 where not guessed yet
            observation_space=spaces.Box(-1.0, 1.0, (s["length"],), np.float32),
            action_space=spaces.Discrete(2),
            frame_shape=(FRAME_ROWS, s["length"]),
        )

    @property
    def password(self) -> np.ndarray:
        """The password every env of this instance must guess, as int8 bits."""
        bits = binding.password_bits(self.settings["password_seed"], self.settings["length"])
        return np.array(bits, dtype=np.int8)
