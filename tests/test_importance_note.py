"""The sweep view's parameter importance says why it is empty: after 4 trials it stayed blank
when some of them were pruned, or when the sweep searched one parameter."""

from __future__ import annotations

import optuna
from textual.app import App

from puffer_tui.app.widgets.importance_bars import ImportanceBars
from puffer_tui.engine.sweep.snapshot import MIN_TRIALS_FOR_IMPORTANCE, param_importance

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(trials: int, params=("x", "y"), prune_every: int = 0):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))

    def objective(trial):
        values = [trial.suggest_float(name, 0.0, 1.0) for name in params]
        if prune_every and trial.number % prune_every == 0:
            raise optuna.TrialPruned()
        return sum(v * (i + 1) for i, v in enumerate(values))

    study.optimize(objective, n_trials=trials)
    return study


def test_four_trials_with_one_pruned_say_how_many_complete():
    importances, note = param_importance(_study(4, prune_every=4), {})
    assert importances == {}
    assert note == (f"needs {MIN_TRIALS_FOR_IMPORTANCE} completed trials, 3 so far "
                    "(1 pruned or failed do not count)")


def test_one_searched_parameter_is_named():
    importances, note = param_importance(_study(5, params=("learning_rate",)), {})
    assert importances == {}
    assert "needs 2 searched parameters" in note and "learning_rate" in note


def test_enough_trials_give_importances_and_no_note():
    importances, note = param_importance(_study(6), {})
    assert set(importances) == {"x", "y"} and note == ""


class Bars(App):
    def compose(self):
        yield ImportanceBars()


async def test_the_panel_shows_the_sweeps_reason():
    app = Bars()
    async with app.run_test(size=(60, 8)) as pilot:
        bars = app.query_one(ImportanceBars)
        bars.note = "needs 4 completed trials, 3 so far"
        await pilot.pause(0.1)
        assert "needs 4 completed trials, 3 so far" in str(bars.render())
        bars.importance = {"train.learning_rate": 0.7, "train.gamma": 0.3}
        await pilot.pause(0.1)
        assert "needs" not in str(bars.render())
