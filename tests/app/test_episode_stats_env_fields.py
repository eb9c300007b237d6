"""The episodes panel lists an env's own fields (a Python env's info numbers such as
is_success, a C env's log fields) before the episodes' count: on a small screen the env's
fields are the rows worth keeping."""

from __future__ import annotations

from textual.app import App

from puffer_tui.app.widgets.episode_stats import EpisodeStats


class _Panel(App):
    def compose(self):
        yield EpisodeStats()


async def test_the_envs_own_fields_come_before_the_count():
    app = _Panel()
    async with app.run_test(size=(40, 10)) as pilot:
        panel = app.query_one(EpisodeStats)
        panel.history = {"score": [0.5, 0.75], "episode_return": [1.0], "episodes": [64.0],
                         "is_success": [0.25, 0.5], "distance": [3.5]}
        await pilot.pause()
        lines = panel.render().plain.splitlines()
    names = [line.split("  ")[0].strip() for line in lines]
    assert names == ["score", "return", "distance", "is success", "episodes"], lines
