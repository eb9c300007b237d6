"""app/widgets/workers_panel.py alone, through Textual's Pilot: one row per rank and per Ray
actor (node, SPS), the cluster's CPUs, and a placeholder when there is nothing to show."""

from textual.app import App, ComposeResult

from puffer_tui.app.widgets.workers_panel import WorkersPanel


class PanelApp(App):
    def compose(self) -> ComposeResult:
        yield WorkersPanel()


def panel_text(panel) -> str:
    return "\n".join("".join(s.text for s in panel.render_line(y))
                     for y in range(panel.size.height))


async def test_ranks_actors_nodes_and_cluster_cpus_are_listed():
    app = PanelApp()
    async with app.run_test(size=(60, 12)) as pilot:
        panel = app.query_one(WorkersPanel)
        await pilot.pause()
        assert "one process" in panel_text(panel)
        panel.worker_rows = [{"rank": 0, "node": "gpu-a", "sps": 52_000.0},
                         {"rank": 1, "node": "gpu-b", "sps": 48_000.0},
                         {"actor": 0, "node": "cpu-box-1", "sps": 20_100.0},
                         {"actor": 1, "node": "cpu-box-2", "sps": 3_000.0}]
        panel.cluster = {"cpus": 64.0, "cpus_reserved": 2.0}
        await pilot.pause()
        text = panel_text(panel)
        lines = text.splitlines()
        for who, node, sps in (("rank 0", "gpu-a", "52k"), ("rank 1", "gpu-b", "48k"),
                               ("actor 0", "cpu-box-1", "20.1k"), ("actor 1", "cpu-box-2", "3k")):
            assert any(who in ln and node in ln and sps in ln for ln in lines), (who, text)
        assert any("cluster" in ln and "2/64" in ln for ln in lines), text
        # the straggler's bar is drawn in yellow, the others in cyan
        straggler = next(y for y in range(panel.size.height)
                         if "actor 1" in "".join(s.text for s in panel.render_line(y)))
        styles = {str(s.style.color.name) for s in panel.render_line(straggler)
                  if any(block in s.text for block in "▏▎▍▌▋▊▉█")}
        assert "yellow" in styles, styles


async def test_updates_replace_the_rows():
    app = PanelApp()
    async with app.run_test(size=(60, 10)) as pilot:
        panel = app.query_one(WorkersPanel)
        panel.worker_rows = [{"rank": 0, "node": "a", "sps": 1.0}, {"rank": 1, "node": "b", "sps": 1.0}]
        await pilot.pause()
        panel.worker_rows = [{"actor": 0, "node": "c", "sps": 2_000.0}]
        await pilot.pause()
        text = panel_text(panel)
        assert "actor 0" in text and "rank 1" not in text
