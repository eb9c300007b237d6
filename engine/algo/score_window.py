"""The recent epochs' episode scores that `train.stop_at_score` compares with its target."""

from __future__ import annotations

from puffer_tui.engine.shared.config import STOP_WINDOW


class ScoreWindow:
    """(mean score, episodes) of the last STOP_WINDOW epochs that ended episodes."""

    def __init__(self, scores: list[tuple[float, float]] | None = None):
        self.scores = list(scores or [])

    def note(self, env: dict) -> None:
        """An epoch's env group: its score (or episode return) and how many episodes ended."""
        score = env.get("score", env.get("episode_return"))
        episodes = float(env.get("episodes", 0) or 0)
        if isinstance(score, (int, float)) and episodes > 0:
            self.scores = [*self.scores, (float(score), episodes)][-STOP_WINDOW:]

    def reached(self, target: float) -> str:
        """Why the run may finish now ("" when not): the episode-weighted mean score of the
        window has reached `target` (0: off)."""
        if not target or not self.scores:
            return ""
        episodes = sum(n for _, n in self.scores)
        mean = sum(score * n for score, n in self.scores) / episodes
        if mean < target:
            return ""
        return (f"mean episode score {mean:.4g} over the last {len(self.scores)} epochs "
                f"reached train.stop_at_score {target:g}")

    def as_list(self) -> list[list[float]]:
        return [list(pair) for pair in self.scores]

    @classmethod
    def from_list(cls, pairs) -> ScoreWindow:
        return cls([(float(s), float(n)) for s, n in pairs])
