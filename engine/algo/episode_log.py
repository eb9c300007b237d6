"""Average the env logs (`infos` from recv) over the episodes finished in one epoch.

The same for every env: the standard fields (episode_return, episode_length, score) and an
env's own (a C env's log fields; a Python env's episode-end info numbers, envs/
gym_emulation.py) become the epoch row's `env` group, and so `env/<name>` in TensorBoard
and W&B, a metrics.jsonl column, a line of the episodes panel and a sweep metric.
"""

from __future__ import annotations

from puffer_tui.engine.native.pufferenv import IGNORED

# Names an env said were not numbers, over the whole process: the engine warns of each once
# (engine/diagnosis/epoch_diagnosis.py takes them), however many workers and epochs say it.
_ignored_said: set[str] = set()
_ignored_new: list[str] = []


def take_ignored() -> list[str]:
    """The env fields named as not numbers since the last call, each once per process."""
    new = list(_ignored_new)
    _ignored_new.clear()
    return new


class EpisodeLog:
    """Each info is a dict of averages over its `n` episodes; combine them weighted by n. A
    field only some infos have is averaged over the episodes of those that have it."""

    def __init__(self):
        self.sums: dict[str, float] = {}
        self.weights: dict[str, float] = {}
        self.episodes = 0.0

    def add(self, infos) -> None:
        for info in infos or ():
            n = float(info.get("n", 0) or 0)
            if n <= 0:
                continue
            self.episodes += n
            for key, value in info.items():
                if key == IGNORED:
                    self._said(value)
                    continue
                if key == "n" or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                self.sums[key] = self.sums.get(key, 0.0) + float(value) * n
                self.weights[key] = self.weights.get(key, 0.0) + n

    @staticmethod
    def _said(names) -> None:
        for name in names if isinstance(names, (list, tuple)) else (names,):
            if name not in _ignored_said:
                _ignored_said.add(name)
                _ignored_new.append(str(name))

    def summary(self) -> dict:
        """{field: mean over episodes, ..., "episodes": count}; only the count if none ended."""
        row = {}
        if self.episodes:
            row = {key: total / self.weights[key] for key, total in self.sums.items()}
        row["episodes"] = int(self.episodes)
        return row
