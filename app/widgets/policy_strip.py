"""The policy's view beside the env render: what the agent makes of this step.

A `PolicyView` (engine/shared/protocol.py, sent with the frames when a renderer asks) drawn as
lines of cells: V(s) and the reward, a bar per discrete action (the one taken marked), mean
and std per continuous dimension, one row per head for multi-discrete actions, once an
episode has ended a small chart of V(s_t) against the realized return from t with the
critic's error as one number, and for flat observations the saliency as ranked bars.

`strip_lines(view, width, height)` fills the space it is given, the essentials first: at
80 x 24 the env panel gives it three or four lines under the frame, at 200 x 60 a column
beside it. The env panel (app/widgets/env_render.py) and `eval --render` draw it with the
same function; `PolicyStrip` is the widget of it.

Tested in: tests/screens/test_policy_strip_sizes.py
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.engine.shared.protocol import PolicyView

BLOCKS = " ▁▂▃▄▅▆▇█"  # a probability as one cell's height
EIGHTHS = " ▏▎▍▌▋▊▉█"  # a bar's last cell, in eighths
TAKEN = "bold $accent"
TAKEN_STYLE = "bold yellow"  # the action taken
BAR_STYLE = "cyan"
VALUE_STYLE, RETURN_STYLE = "cyan", "yellow"
STRIP_WIDTH = 30  # the strip's width when it sits beside the frame
MIN_BESIDE = 22  # narrowest strip worth putting beside the frame


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of `fraction` (0-1) of `width` cells, in eighths."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return text.ljust(width)


def _number(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:+.{digits}f}"


def headline(view: PolicyView) -> Text:
    """V(s), the reward, the step: one line."""
    text = Text(no_wrap=True)
    text.append("V ", "dim")
    text.append(_number(view.value), VALUE_STYLE)
    text.append("  r ", "dim")
    text.append(_number(view.reward), "green" if (view.reward or 0) > 0 else
                "red" if (view.reward or 0) < 0 else "")
    text.append(f"  t {view.step}", "dim")
    if view.agent:
        text.append(f"  agent {view.agent}", "dim")
    return text


def compact_actions(view: PolicyView, width: int) -> list[Text]:
    """One line per head: each action one cell tall as its probability, the taken one in
    colour, then the taken action and its probability."""
    lines = []
    if view.kind == "box":
        for i, (mean, std) in enumerate(zip(view.mean, view.std)):
            if len(lines) >= 2 and len(view.mean) > 2:
                lines[-1].append(f" +{len(view.mean) - i} more", "dim")
                break
            lines.append(Text(f"a{i} {_number(mean)}±{abs(std or 0):.2f}", no_wrap=True))
        return lines
    for h, probs in enumerate(view.heads):
        taken = view.action[h] if h < len(view.action) else None
        text = Text(no_wrap=True)
        if len(view.heads) > 1:
            text.append(f"h{h} ", "dim")
        room = max(width - len(text) - 10, 1)
        for a, p in enumerate(probs[:room]):
            glyph = BLOCKS[min(int(round((p or 0) * 8)), 8)] if p else BLOCKS[0]
            glyph = glyph if glyph != " " else "·"
            text.append(glyph, TAKEN_STYLE if a == taken else BAR_STYLE)
        if taken is not None and 0 <= taken < len(probs):
            text.append(f" a{taken} {100 * (probs[taken] or 0):.0f}%", TAKEN_STYLE)
        lines.append(text)
    return lines


def action_bars(view: PolicyView, width: int, rows: int) -> list[Text]:
    """A bar per discrete action (▶ at the one taken), or mean ± std per continuous dim."""
    lines: list[Text] = []
    if view.kind == "box":
        scale = max([abs(m or 0) + abs(s or 0) for m, s in zip(view.mean, view.std)] + [1.0])
        track = max(width - 18, 6)
        for i, (mean, std) in enumerate(zip(view.mean, view.std)):
            if len(lines) >= rows:
                break
            lines.append(_gaussian_line(i, mean or 0.0, abs(std or 0.0), scale, track,
                                        view.action[i] if i < len(view.action) else None))
        return lines
    several = len(view.heads) > 1
    for h, probs in enumerate(view.heads):
        taken = view.action[h] if h < len(view.action) else None
        if several:
            if len(lines) >= rows:
                break
            lines.append(Text(f"head {h}", "dim"))
        track = max(width - 12, 4)
        for a, p in enumerate(probs):
            if len(lines) >= rows:
                break
            mark = "▶" if a == taken else " "
            style = TAKEN_STYLE if a == taken else BAR_STYLE
            text = Text(no_wrap=True)
            text.append(f"{mark}{a:>2} ", style if a == taken else "dim")
            text.append(bar(p or 0.0, track), style)
            text.append(f" {100 * (p or 0):3.0f}%", style if a == taken else "")
            lines.append(text)
    return lines


def _gaussian_line(i: int, mean: float, std: float, scale: float, track: int,
                   taken) -> Text:
    """`a0 [--(--|--)--]`: the mean as |, one std either side as ( ), the action as *."""
    cells = [" "] * track
    centre = track // 2

    def cell(x: float) -> int:
        return min(max(int(round(centre + x / scale * (track / 2 - 1))), 0), track - 1)

    for c in range(cell(mean - std), cell(mean + std) + 1):
        cells[c] = "─"
    cells[centre] = "┆" if cells[centre] == " " else "┼"
    cells[cell(mean)] = "│"
    if isinstance(taken, (int, float)):
        cells[cell(float(taken))] = "*"
    text = Text(no_wrap=True)
    text.append(f"a{i:<2}", "dim")
    text.append("".join(cells), BAR_STYLE)
    text.append(f" {mean:+.2f}±{std:.2f}")
    return text


def value_chart(view: PolicyView, width: int, rows: int) -> list[Text]:
    """The last episode's V(s_t) (cyan) against the realized return from t (yellow), over
    `rows` lines, and the critic's error above them."""
    episode = view.episode
    if episode is None or rows < 1:
        return []
    title = Text(no_wrap=True)
    title.append("critic err ", "dim")
    title.append(f"{episode.error:.3f}", "bold")
    title.append(f"  ep {episode.length}" + (" cut" if episode.truncated else ""), "dim")
    lines = [title]
    plot_rows = rows - 2
    if plot_rows < 2 or width < 8:
        return lines[:rows]
    values = [v for v in episode.values]
    returns = [g for g in episode.returns]
    points = [x for x in values + returns if x is not None]
    if not points:
        return lines
    low, high = min(points), max(points)
    span = (high - low) or 1.0
    columns = min(width, len(values))

    def pick(series, c):
        return series[int(c * len(series) / columns)] if series else None

    grid = [[(" ", "")] * columns for _ in range(plot_rows)]
    for c in range(columns):
        for series, glyph, style in ((returns, "─", RETURN_STYLE), (values, "•", VALUE_STYLE)):
            y = pick(series, c)
            if y is None:
                continue
            r = plot_rows - 1 - int(round((y - low) / span * (plot_rows - 1)))
            old = grid[r][c][0]
            grid[r][c] = ("*", "bold") if old not in (" ", glyph) else (glyph, style)
    for row in grid:
        text = Text(no_wrap=True)
        for glyph, style in row:
            text.append(glyph, style)
        lines.append(text)
    legend = Text(no_wrap=True)
    legend.append("• V(s)", VALUE_STYLE)
    legend.append("  ─ return", RETURN_STYLE)
    scale = f"  {low:+.2f}..{high:+.2f}"
    if len(legend) + len(scale) <= width:
        legend.append(scale, "dim")
    lines.append(legend)
    return lines


def saliency_bars(view: PolicyView, width: int, rows: int) -> list[Text]:
    """Flat observations: the most salient dimensions, ranked, named where the env names them."""
    saliency = view.saliency
    if saliency is None or not saliency.dims or rows < 2:
        return []
    lines = [Text(f"saliency of {'log pi(a|s)' if saliency.of == 'action' else 'V(s)'}",
                  "dim", no_wrap=True)]
    label = min(max(len(name) for _, _, name in saliency.dims), max(width // 2, 6))
    track = max(width - label - 2, 3)
    for _, magnitude, name in saliency.dims[: rows - 1]:
        text = Text(no_wrap=True)
        text.append(name[:label].ljust(label) + " ", "dim")
        text.append(bar(magnitude, track), "magenta")
        lines.append(text)
    return lines


def strip_lines(view: PolicyView | None, width: int, height: int) -> list[Text]:
    """The strip in at most `height` lines of `width` cells, the essentials first."""
    if height < 1 or width < 4:
        return []
    if view is None:
        return [Text("policy: waiting...", "dim", no_wrap=True)][:height]
    lines = [headline(view)]
    left = height - 1
    compact = compact_actions(view, width)
    heads = sum(len(h) for h in view.heads) + (len(view.heads) if len(view.heads) > 1 else 0)
    full_rows = len(view.mean) if view.kind == "box" else heads
    chart = 6 if view.episode is not None else 0
    salient = min(len(view.saliency.dims) + 1, 9) if view.saliency and view.saliency.dims \
        else 0
    if left >= full_rows + 1 and width >= 16:
        lines += action_bars(view, width, full_rows)
    else:
        lines += compact[:max(left - 1, 1) if view.episode is not None else left]
    left = height - len(lines)
    if salient and left >= 3:
        share = min(salient, left - (2 if view.episode is not None else 0))
        lines += saliency_bars(view, width, share)
        left = height - len(lines)
    if view.episode is not None and left >= 1:
        lines += value_chart(view, width, min(left, chart + 2) if left >= 4 else 1)
    return [_cut(line, width) for line in lines[:height]]


def _cut(line: Text, width: int) -> Text:
    line.truncate(width)
    return line


class PolicyStrip(Widget):
    """The strip as a widget: `view` is the latest PolicyView (None: none sent yet)."""

    DEFAULT_CSS = """
    PolicyStrip {
        height: auto;
        min-height: 3;
    }
    """

    view: reactive[PolicyView | None] = reactive(None)

    def render(self) -> Text:
        lines = strip_lines(self.view, self.size.width, max(self.size.height, 3))
        return Text("\n").join(lines)


def with_strip(renderable, message: dict | None, width: int, height: int = 12):
    """`eval --render ascii`: the frame, and under it the strip of the policy's view the
    frame message carries (the frame alone when it carries none)."""
    from rich.console import Group

    # lazy: the protocol's decoder, only for a frame that carries a view
    from puffer_tui.engine.shared.protocol import PolicyView

    raw = (message or {}).get("policy")
    view = PolicyView.from_wire(raw) if raw is not None else None
    if renderable is None or view is None:
        return renderable
    return Group(renderable, *strip_lines(view, max(min(width, 60), 20), height))
