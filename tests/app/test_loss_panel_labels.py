"""The losses panel's table at 80x24 shows every loss's label and value whole (short labels
and values where a full cell does not fit), and the full table where it does."""

from __future__ import annotations

from puffer_tui.app.widgets.loss_panel import LossPanel, short_metric
from puffer_tui.screens.dashboard import DashboardScreen
from tests.screens.test_app_snapshots import FixedDataApp


async def _table(size) -> str:
    app = FixedDataApp("dashboard")
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        assert isinstance(app.screen, DashboardScreen)
        panel = app.screen.query_one(LossPanel)
        return panel._table().plain, panel.size.width


async def test_at_80_columns_no_label_or_value_is_cut():
    table, width = await _table((80, 24))
    assert "…" not in table
    for label in ("pol", "val", "ent", "kl", "clp", "ev"):
        assert label in table, table
    assert all(len(line) <= width - 2 for line in table.splitlines()), (table, width)


async def test_at_120_columns_the_full_labels_stay():
    table, _ = await _table((120, 40))
    for label in ("policy", "value", "entropy", "kl", "clipfrac", "expl_var"):
        assert label in table, table


def test_short_values_fit_their_room():
    for x in (-0.002707, 0.0122, 0.9333, 1e-7, -123456.0, 0.0):
        assert len(short_metric(x)) <= 7 and len(short_metric(x, 6)) <= 6, x
    assert short_metric(-0.002707) == "-0.0027" and short_metric(float("nan")) == "-"


async def test_the_frame_shows_the_learning_rate_the_last_update_used():
    """The rate after the schedule and the adaptive KL scale: what train.adaptive_lr_kl chose
    is visible without opening the editor."""
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        panel = app.screen.query_one(LossPanel)
        app.screen.store.amend(learning_rate=0.000123)
        app.screen._plotted_epochs = -1  # the next refresh redraws as a new epoch would
        app.screen.refresh_plots()
        await pilot.pause(0.1)
        assert str(panel.border_subtitle).startswith("lr 0.000123"), panel.border_subtitle
        assert "l: next curve" in str(panel.border_subtitle)
