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


def test_the_drivers_note_follows_every_trial_and_importances_come_at_once():
    """The reason is current at every refresh (it said "1 pruned" after the second was
    pruned: it was recomputed only every IMPORTANCE_EVERY seconds), and the importances are
    computed as soon as they can be, not up to IMPORTANCE_EVERY later."""
    from types import SimpleNamespace

    from puffer_tui.engine.sweep.driver import Driver

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    driver = SimpleNamespace(study=study, _importance={}, _importance_at=0.0,
                             _importance_note="", _importance_waited=True)

    def run(number: int, pruned: bool = False):
        trial = study.ask()
        x, y = trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)
        if pruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, x + 2 * y)
        return Driver.importance(driver)

    for n in range(3):
        run(n)
    run(3, pruned=True)
    assert Driver.importance(driver) == {}
    assert driver._importance_note.endswith("3 so far (1 pruned or failed do not count)")
    run(4, pruned=True)
    assert driver._importance_note.endswith("3 so far (2 pruned or failed do not count)")
    assert set(run(5)) == {"x", "y"} and driver._importance_note == ""
