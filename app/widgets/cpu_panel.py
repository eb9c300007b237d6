"""Per-core CPU bars (every core, in columns, btop-like) plus process CPU, RAM and GPU.

Tested in: tests/app/test_app_store.py (every core, the processes, the GPU),
tests/screens/test_app_snapshots.py"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive

from puffer_tui.app.system_monitor import ProcessLoad, SystemSample
from puffer_tui.app.widgets.format import bar, bytes_text, load_colour
from puffer_tui.app.widgets.panel import TextPanel


class CpuPanel(TextPanel):
    """One widget draws all the cores, so 2 or 256 cores cost the same number of widgets."""

    BORDER_TITLE = "cpu"

    sample: reactive[SystemSample | None] = reactive(None)
    gpu: reactive[dict | None] = reactive(None)

    def render(self) -> Text:
        s = self.sample
        if s is None:
            return Text("sampling...", style="dim")
        width = max(self.size.width, 10)
        lines: list[Text] = []
        lines += self._core_lines(s.cores, width, max(self.size.height - 2 - len(s.processes), 1))
        lines.append(self._memory_line(s))
        lines += self._process_lines(s, width)
        if self.gpu:
            lines.append(self._gpu_line(self.gpu))
        return Text("\n").join(lines[: max(self.size.height, 1)])

    @staticmethod
    def _core_lines(cores: list[float], width: int, rows: int) -> list[Text]:
        # Lay cores out in as many columns as keep each bar at least 6 cells wide.
        label_w = len(str(len(cores) - 1)) + 1
        cell_min = label_w + 6 + 5  # label, bar, " 100%"
        columns = max(1, min(len(cores), width // (cell_min + 1)))
        columns = max(columns, -(-len(cores) // max(rows, 1)))  # fit the height if we can
        columns = min(columns, max(1, width // (label_w + 5 + 2)))
        cell_w = width // columns - 1
        bar_w = max(cell_w - label_w - 5, 1)
        per_col = -(-len(cores) // columns)
        lines = []
        for row in range(per_col):
            line = Text(no_wrap=True)
            for col in range(columns):
                i = col * per_col + row
                if i >= len(cores):
                    break
                pct = cores[i]
                line.append(f"{i:>{label_w - 1}} ", "dim")
                line.append(bar(pct / 100, bar_w), load_colour(pct))
                line.append(f"{pct:4.0f}%")
                if col < columns - 1:
                    line.append(" ")
            lines.append(line)
        return lines

    @staticmethod
    def _memory_line(s: SystemSample) -> Text:
        total = sum(c for c in s.cores) / max(len(s.cores), 1)
        line = Text(no_wrap=True)
        line.append("avg ", "dim")
        line.append(f"{total:3.0f}%", load_colour(total))
        line.append("  ram ", "dim")
        line.append(f"{bytes_text(s.ram_used)}/{bytes_text(s.ram_total)}")
        return line

    @staticmethod
    def _process_lines(s: SystemSample, width: int) -> list[Text]:
        lines = []
        for p in [*s.processes, ProcessLoad("this app", 0, s.app_cpu)]:
            line = Text(no_wrap=True, overflow="ellipsis")
            show_rss = width >= 36
            line.append(f"{p.role:<9.9}", "dim")
            bar_w = max(width - 15 - (8 if show_rss else 0), 3)
            if p.cpu is None:
                line.append(" " * bar_w + "     -")
            else:
                line.append(bar(p.cpu / 100, bar_w), load_colour(p.cpu))
                line.append(f"{p.cpu:5.0f}%")
            if show_rss and p.rss:
                line.append(f" {bytes_text(p.rss):>7}", "dim")
            lines.append(line)
        return lines

    @staticmethod
    def _gpu_line(gpu: dict) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        util = gpu.get("utilization")
        line.append("gpu ", "dim")
        if isinstance(util, (int, float)):
            line.append(f"{util:3.0f}%", load_colour(util))
        used, total = gpu.get("memory_used"), gpu.get("memory_total")
        line.append(f"  vram {bytes_text(used)}/{bytes_text(total)}  ")
        line.append(str(gpu.get("name", "")), "dim")
        return line
