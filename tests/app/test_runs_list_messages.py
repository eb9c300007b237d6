"""The runs list asks, the screen decides (app/widgets/runs_list.py): `space` and `b` post
MarkRequested and BranchRequested with the highlighted entry instead of calling the screen,
so the list works in any screen and the launcher's marks are the launcher's own. Before,
`space` called `screen.toggle_mark()`, which crashed any screen but the launcher's."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets.option_list import Option

from puffer_tui.app.widgets.runs_list import RunsList


class ListApp(App):
    """A bare screen holding a runs list: it records what the list asks for."""

    def __init__(self, ids: list[str]):
        super().__init__()
        self.ids = ids
        self.asked: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield RunsList(*(Option(i, id=i) for i in self.ids), id="runs")

    def on_runs_list_mark_requested(self, message: RunsList.MarkRequested) -> None:
        self.asked.append(("mark", message.option_id))

    def on_runs_list_branch_requested(self, message: RunsList.BranchRequested) -> None:
        self.asked.append(("branch", message.option_id))


async def test_space_and_b_post_the_highlighted_entry_to_whoever_holds_the_list():
    app = ListApp(["/runs/a", "/runs/b"])
    async with app.run_test() as pilot:
        runs = app.query_one(RunsList)
        runs.focus()
        runs.highlighted = 0
        await pilot.press("space", "down", "space", "b")
        await pilot.pause()
        assert app.asked == [("mark", "/runs/a"), ("mark", "/runs/b"), ("branch", "/runs/b")]


async def test_space_with_nothing_highlighted_asks_for_none():
    app = ListApp([])
    async with app.run_test() as pilot:
        app.query_one(RunsList).focus()
        await pilot.press("space")
        await pilot.pause()
        assert app.asked == [("mark", None)]
