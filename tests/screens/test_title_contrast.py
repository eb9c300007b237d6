"""Every framed box's title and subtitle reads clearly against what it is drawn on, in the
true colours a browser shows (serve): contrast of 4.5:1 or more (WCAG's for text). The
launcher's were drawn in their border's half-tone blue, about 2:1 on the dark background."""

from __future__ import annotations

import pytest
from compare_runs import make_compare_run

from puffer_tui.screens.compare import CompareScreen
from tests.app.test_app_engine import until
from tests.screens.test_app_snapshots import FixedDataApp, screen_text

MIN_CONTRAST = 4.5


def luminance(color) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = color.triplet
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(style) -> float:
    high, low = sorted((luminance(style.color), luminance(style.bgcolor)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def titles_drawn(app) -> list[tuple[str, float]]:
    """(title, contrast) of every border title and subtitle on screen."""
    titles = set()
    for widget in app.screen.query("*"):
        for text in (widget.border_title, widget.border_subtitle):
            if text and widget.region.area and widget.styles.border_top[0]:
                titles.add(str(text))
    found = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            text = segment.text.strip(" ─")
            if text in titles and segment.style and segment.style.color:
                found.append((text, contrast(segment.style)))
    return found


@pytest.mark.parametrize("which", ["launcher", "dashboard"])
async def test_titles_read_clearly(tmp_path, which):
    app = FixedDataApp(which, runs_root=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        found = titles_drawn(app)
        assert len(found) >= 4, found
        dim = [(t, round(c, 1)) for t, c in found if c < MIN_CONTRAST]
        assert not dim, dim


async def test_the_compare_screens_titles_read_clearly(tmp_path):
    runs = [make_compare_run(tmp_path, now=1_790_000_000 + i) for i in range(2)]
    app = FixedDataApp("launcher", runs_root=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_compare(runs)
        await until(pilot, lambda: isinstance(app.screen, CompareScreen)
                    and "config differences" in screen_text(app), "the compare screen")
        found = titles_drawn(app)
        assert len(found) >= 2, found
        dim = [(t, round(c, 1)) for t, c in found if c < MIN_CONTRAST]
        assert not dim, dim
