"""app/widgets/panel.py: a Drawn panel draws once mounted, on a resize and when a reactive it
names changes (not for others); a TextPanel has the frame's class and cuts a long line with an
ellipsis."""

from rich.text import Text
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.widgets.panel import Drawn, TextPanel


class Counted(Drawn, Widget):
    DRAWN_FROM = ("points",)
    points: reactive[int] = reactive(0)
    title: reactive[str] = reactive("")

    def __init__(self):
        super().__init__()
        self.draws = []

    def _draw(self) -> None:
        self.draws.append(self.points)


class Lines(TextPanel):
    BORDER_TITLE = "lines"

    def render(self) -> Text:
        return Text("a line far wider than the panel it is drawn in, cut at its edge")


class PanelsApp(App):
    def compose(self) -> ComposeResult:
        yield Counted()
        yield Lines()


async def test_drawn_redraws_for_its_reactives_and_resizes_only():
    app = PanelsApp()
    async with app.run_test(size=(40, 20)) as pilot:
        counted = app.query_one(Counted)
        await pilot.pause()
        mounted = len(counted.draws)
        assert mounted >= 1  # once mounted (and for the first layout's resize)
        counted.points = 5
        await pilot.pause()
        assert counted.draws[-1] == 5 and len(counted.draws) == mounted + 1
        counted.title = "not drawn from"
        await pilot.pause()
        assert len(counted.draws) == mounted + 1
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        assert len(counted.draws) > mounted + 1


async def test_a_text_panel_is_framed_and_ends_a_cut_line_in_an_ellipsis():
    app = PanelsApp()
    async with app.run_test(size=(30, 20)) as pilot:
        lines = app.query_one(Lines)
        await pilot.pause()
        assert lines.has_class("panel")
        row = "".join(segment.text for segment in lines.render_line(0))  # the frame: panels.tcss
        assert row.startswith("a line far wider") and row.endswith("…"), row
        assert len(row) == lines.size.width
