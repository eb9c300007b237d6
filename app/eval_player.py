"""A trained policy playing fresh envs for `puffer-tui eval`, counting exactly the episodes
asked for.

Each env is its own one-env object (seeded from one SeedSequence), so its log, and thus the
score of the episodes it finished, can be read on its own: when several envs finish an
episode on the step that reaches the target, only the lowest-numbered ones are counted and
their scores alone enter the mean. The policy's sampling is seeded too, so a seed reproduces
the whole evaluation.
"""

from __future__ import annotations

import numpy as np


class Player:
    def __init__(self, policy, config, num_envs: int, seed: int, deterministic: bool,
                 episodes: int):
        import torch

        from puffer_tui.envs import make

        torch.manual_seed(seed)  # the policy samples its actions with torch's generator
        self.policy, self.config, self.deterministic = policy, config, deterministic
        self.target = episodes
        seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(num_envs)]
        self.envs = []
        try:
            for s in seeds:
                self.envs.append(make(config.env_name, num_envs=1, seed=s, **config.env))
        except BaseException:
            self.close()
            raise
        self.obs = np.concatenate([env.reset(s)[0] for env, s in zip(self.envs, seeds)])
        bounds = np.cumsum([0] + [env.num_agents for env in self.envs])
        self.rows = list(zip(bounds[:-1], bounds[1:]))
        self.returns = np.zeros(bounds[-1])
        self.lengths = np.zeros(bounds[-1], dtype=np.int64)
        self.starts = np.ones(bounds[-1], dtype=bool)
        self.done_returns: list[float] = []
        self.done_lengths: list[int] = []
        self.score_sum = self.score_n = 0.0
        self.state = None

    @property
    def shown_env(self):
        """The env that --render animates."""
        return self.envs[0]

    @property
    def episodes(self) -> int:
        return len(self.done_returns)

    @property
    def finished(self) -> bool:
        return self.episodes >= self.target

    def step(self) -> None:
        actions, self.state = self.policy.act(
            self.obs, self.state, deterministic=self.deterministic, starts=self.starts)
        observations = []
        for env, (a, b) in zip(self.envs, self.rows):
            obs, rewards, terminals, truncations, infos = env.step(actions[a:b])
            observations.append(obs)
            self.returns[a:b] += rewards
            self.lengths[a:b] += 1
            ended = np.logical_or(terminals, truncations)
            self.starts[a:b] = ended
            logs = list(infos) + ([env.log()] if ended.any() else [])
            self._count(a + np.flatnonzero(ended), logs)
        self.obs = np.concatenate(observations)

    def _count(self, rows: np.ndarray, logs: list[dict]) -> None:
        """Tally the episodes that just ended in one env, up to the target."""
        wanted = min(len(rows), self.target - self.episodes)
        for i in rows[:wanted]:
            self.done_returns.append(float(self.returns[i]))
            self.done_lengths.append(int(self.lengths[i]))
        self.returns[rows], self.lengths[rows] = 0.0, 0
        total = sum(float(log["score"]) * float(log.get("n", 1)) for log in logs if "score" in log)
        n = sum(float(log.get("n", 1)) for log in logs if "score" in log)
        if wanted and n:
            counted = min(float(wanted), n)  # an env with several agents: their mean score
            self.score_sum += total / n * counted
            self.score_n += counted

    def result(self) -> dict:
        ended = bool(self.done_returns)
        return {
            "env": self.config.env_name,
            "episodes": self.episodes,
            "score": self.score_sum / self.score_n if self.score_n else None,
            "episode_return": float(np.mean(self.done_returns)) if ended else None,
            "episode_length": float(np.mean(self.done_lengths)) if ended else None,
        }

    def close(self) -> None:
        for env in self.envs:
            env.close()
