"""Average the env logs (`infos` from recv) over the episodes finished in one epoch."""

from __future__ import annotations


class EpisodeLog:
    """Each info is a dict of averages over its `n` episodes; combine them weighted by n."""

    def __init__(self):
        self.sums: dict[str, float] = {}
        self.episodes = 0.0

    def add(self, infos) -> None:
        for info in infos or ():
            n = float(info.get("n", 0) or 0)
            if n <= 0:
                continue
            self.episodes += n
            for key, value in info.items():
                if key == "n" or not isinstance(value, (int, float)):
                    continue
                self.sums[key] = self.sums.get(key, 0.0) + float(value) * n

    def summary(self) -> dict:
        """{field: mean over episodes, ..., "episodes": count}; only the count if none ended."""
        row = {}
        if self.episodes:
            row = {key: total / self.episodes for key, total in self.sums.items()}
        row["episodes"] = int(self.episodes)
        return row
