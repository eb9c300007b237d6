"""app/widgets/timing_bars.py alone: a row per timing key with its share of the epoch (given,
or worked out from the seconds), the seconds column dropped before the bars get too narrow."""

from textual.app import App, ComposeResult

from puffer_tui.app.widgets.timing_bars import TimingBars
from puffer_tui.engine.shared.protocol import TIMING_KEYS


class BarsApp(App):
    def compose(self) -> ComposeResult:
        yield TimingBars()


def rows(panel) -> list[str]:
    return ["".join(s.text for s in panel.render_line(y)).strip(" │╭╮╰╯─")
            for y in range(panel.size.height)]


async def test_before_the_first_epoch_it_says_it_waits():
    app = BarsApp()
    async with app.run_test(size=(50, 7)) as pilot:
        await pilot.pause()
        assert any("waiting for the first epoch" in r for r in rows(app.query_one(TimingBars)))


async def test_shares_come_from_the_seconds_when_no_percent_is_given():
    app = BarsApp()
    async with app.run_test(size=(60, 7)) as pilot:
        bars = app.query_one(TimingBars)
        seconds = dict.fromkeys(TIMING_KEYS, 0.0)
        seconds.update(env=3.0, learn=1.0)
        bars.seconds = seconds
        await pilot.pause()
        by_key = {r.split()[0]: r for r in rows(bars) if r and r.split()[0] in TIMING_KEYS}
        assert list(by_key) == list(TIMING_KEYS)
        assert "75.0%" in by_key["env"] and "3.000s" in by_key["env"]
        assert "25.0%" in by_key["learn"] and "0.0%" in by_key["copy"]


async def test_given_percents_win_and_a_narrow_panel_drops_the_seconds():
    app = BarsApp()
    async with app.run_test(size=(30, 7)) as pilot:
        bars = app.query_one(TimingBars)
        bars.seconds = {"env": 1.0, "learn": 1.0}
        bars.percent = {"env": 90.0, "learn": 10.0}
        await pilot.pause()
        env = next(r for r in rows(bars) if r.startswith("env"))
        assert "90.0%" in env and "s" not in env.split("%")[1]
