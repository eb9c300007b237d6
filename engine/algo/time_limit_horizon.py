"""The discount for an env whose episodes only the time limit ends
(`train.gamma_from_time_limit`, on in the MuJoCo family's preset).

Where nothing but the time limit ends an episode (HalfCheetah, Swimmer, HumanoidStandup:
nothing can fall), gamma 0.99's horizon of ~100 steps is a tenth of the episode. Where
episodes terminate (Hopper, Walker2d, Ant fall over), a longer one cost most of the return.
Measured on the family's development envs at 1M steps, seeds 1-3 (docs/benchmarks.md):
HalfCheetah-v5 at gamma 0.999 5,740 / 6,426 / 6,099 against 4,233 / 5,306 / 5,790; Hopper-v5
998 / 915 against 3,111 / 3,324. Not for every env that never terminates: Pendulum's cost is
paid every step, and at the continuous-control base it did worse with 0.995 than with 0.99
(continuous-control.toml keeps the rule off).

It is decided before the run starts, because the gain comes from the start: the same gamma
set by a live change once the first episodes had ended (32k steps in) gave 3,819 / 4,138 /
5,363. So one env of the run's kind is stepped with random actions, seeded by the run's seed,
for up to PROBE_EPISODES episodes (at most PROBE_STEPS steps): when none terminated and all
ended at the time limit T, gamma rises to 1 - 1/T, at most LONGEST. The first termination ends
the probe with gamma as it is; an env that reaches no time limit within the steps keeps it
too. A gamma given by a flag, a preset file, a sweep or a live `set` turns the rule off
(engine/shared/config.py, trainer.apply_live).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PROBE_EPISODES = 4  # time-limit ends that make the case
PROBE_STEPS = 8_000  # steps of the one probe env, at most (4 episodes of up to 2,000)
LONGEST = 0.999  # the longest discount the rule sets: the one measured
PROBE_SEED_OFFSET = 7_919  # the probe's env and actions are not the training envs' first ones


@dataclass
class EpisodeEnds:
    """What the probe saw."""

    steps: int
    truncated: int  # episodes ended by the time limit
    terminated: bool
    limit: int | None  # the truncated episodes' mean length (the time limit)

    def discount(self, gamma: float) -> tuple[float, str] | None:
        """(new gamma, why) when these ends call for a longer discount than `gamma`."""
        if self.terminated or self.truncated < PROBE_EPISODES or not self.limit:
            return None
        wanted = round(min(LONGEST, 1.0 - 1.0 / self.limit), 6)
        if wanted <= gamma:
            return None
        return wanted, (f"{self.truncated} episodes of random actions all ended at the time "
                        f"limit ({self.limit:,} steps), none terminated")


def probe(env_creator, seed: int) -> EpisodeEnds:
    """Step one env of `env_creator` (a vectorizer's creator) with random actions."""
    env = env_creator(num_envs=1, seed=seed + PROBE_SEED_OFFSET)
    try:
        space = env.single_action_space
        space.seed(seed + PROBE_SEED_OFFSET)
        env.reset(seed + PROBE_SEED_OFFSET)
        lengths = np.zeros(env.num_agents, np.int64)
        ended: list[int] = []
        for step in range(1, PROBE_STEPS + 1):
            actions = np.stack([space.sample() for _ in range(env.num_agents)])
            _, _, terminals, truncations, _ = env.step(actions)
            live = np.asarray(getattr(env, "masks", np.ones(env.num_agents, bool)), bool)
            lengths[live] += 1  # an agent absent this step (multi-agent envs) is not counted
            if np.any(np.asarray(terminals, bool) & live):
                return EpisodeEnds(step, len(ended), True, None)
            for agent in np.flatnonzero(np.asarray(truncations, bool) & live):
                ended.append(int(lengths[agent]))
                lengths[agent] = 0
            if len(ended) >= PROBE_EPISODES:
                return _ends(step, ended)
        return _ends(PROBE_STEPS, ended)
    finally:
        env.close()


def _ends(steps: int, ended: list[int]) -> EpisodeEnds:
    """Episodes cut at different lengths were not cut by one time limit: no limit to reach."""
    one_limit = bool(ended) and max(ended) == min(ended)
    return EpisodeEnds(steps, len(ended), False, max(ended) if one_limit else None)


def choose_discount(config, env_creator) -> str:
    """Apply the rule to `config` (before anything is built from it): the note the run's
    events get, or "" when the rule is off."""
    train = config.train
    if not train.gamma_from_time_limit:
        return ""
    try:
        ends = probe(env_creator, train.seed)
    except Exception as e:  # the env itself fails: say where, and how to go without the probe
        raise RuntimeError(f"train.gamma_from_time_limit: the env failed while its episodes "
                           f"were probed ({type(e).__name__}: {e}); --train.gamma-from-time-"
                           f"limit false trains without the probe") from e
    decision = ends.discount(train.gamma)
    if decision is None:
        if ends.terminated:
            why = "an episode of random actions terminated"
        elif ends.truncated >= PROBE_EPISODES and ends.limit:
            why = f"the episodes' time limit ({ends.limit:,} steps) is within its reach"
        elif ends.truncated >= PROBE_EPISODES:
            why = "the episodes were cut at different lengths, not by one time limit"
        else:
            why = (f"{ends.truncated} of {PROBE_EPISODES} episodes reached a time limit in "
                   f"{ends.steps:,} steps of random actions")
        return f"gamma stays {train.gamma}: {why} (train.gamma_from_time_limit)"
    old = train.gamma
    train.gamma, why = decision
    train.gamma_from_time_limit = False  # decided (the engine writes it to config.toml)
    return (f"gamma {old} -> {train.gamma}: {why}, so the discount reaches the episodes' end "
            f"(train.gamma_from_time_limit; --train.gamma {old} keeps {old})")
