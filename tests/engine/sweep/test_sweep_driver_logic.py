"""The driver's bookkeeping without engines: pruning through the trial's socket, failures with
their error text, faults that pause a trial, orphaned trials, `sweep best` on a Pareto front."""

from __future__ import annotations

import json
import os

import pytest
from optuna.trial import TrialState

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.sweep.driver import Driver
from puffer_tui.engine.sweep.space import build_space, space_to_json
from puffer_tui.engine.sweep.study import fail_orphans, open_study
from puffer_tui.engine.sweep.trial_run import TrialRun


def make_sweep(tmp_path, objective="score", trials=4, **changes) -> Driver:
    base = cfg.load_config("bandit", {"train.total_timesteps": 20000})
    space = build_space(base, {}, {}, include_cost=objective != "score")
    settings = st.SweepSettings(name="u", env_name="bandit", trials=trials, objective=objective,
                                pruner="none" if objective == "pareto" else "median",
                                base=base.as_dict(), space=space_to_json(space), seed=0,
                                **changes)
    directory = tmp_path / "sweeps" / "u"
    directory.mkdir(parents=True)
    st.save_settings(settings, directory)
    driver = Driver(directory)
    driver.study = open_study(driver.settings, directory)
    return driver


class FakeRun:
    """A trial's run as the driver sees it, with scripted metrics rows."""

    def __init__(self, run_dir, scores, final_state="finished", stop_in_time=True):
        self.run_dir, self.rows, self.seconds = run_dir, [], 12.0
        self._pending = [{"epoch": i + 1, "global_step": 4096 * (i + 1), "score": s}
                         for i, s in enumerate(scores)]
        self.final_state, self.stop_reason, self.stops = final_state, None, 0
        self.stop_in_time = stop_in_time

    def poll(self):
        rows, self._pending = self._pending, []
        self.rows += rows
        return rows

    def stop(self, reason):
        self.stops += 1
        self.stop_reason = self.stop_reason or reason
        if self.stop_in_time:
            self.final_state = "stopped"

    def exited(self):
        return not self._pending

    def settle_status(self):  # a fake engine's status is whatever the test says
        pass

    def fault(self):
        return None

    def state(self):
        return self.final_state

    def error_text(self):
        return "Traceback (most recent call last):\n  ...\nRuntimeError: boom"


def run_fake(driver, run):
    trial = driver.study.ask(fixed_distributions=driver.distributions)
    driver.running[trial.number] = (trial, run, 0)
    driver.follow(trial.number)
    return driver.study.trials[trial.number]


def test_a_hopeless_trial_is_stopped_through_its_engine_and_recorded_pruned(tmp_path):
    driver = make_sweep(tmp_path)
    for _ in range(2):  # the median pruner's startup trials, both scoring 0.9 every epoch
        assert run_fake(driver, FakeRun(tmp_path, [0.9] * 5)).state == TrialState.COMPLETE
    run = FakeRun(tmp_path, [0.1] * 5)
    trial = run_fake(driver, run)
    assert run.stops == 1 and run.stop_reason == "pruned"
    assert trial.state == TrialState.PRUNED
    assert trial.intermediate_values == {e: 0.1 for e in range(1, 6)}
    late = FakeRun(tmp_path, [0.1] * 5, stop_in_time=False)  # it finished before the stop
    trial = run_fake(driver, late)
    assert late.stops == 1 and trial.state == TrialState.COMPLETE
    assert trial.value == pytest.approx(0.1)


def test_a_crashed_trial_fails_with_its_traceback_and_a_bad_config_never_starts(tmp_path):
    driver = make_sweep(tmp_path)
    crashed = run_fake(driver, FakeRun(tmp_path, [0.5], final_state="error"))
    assert crashed.state == TrialState.FAIL
    assert "RuntimeError: boom" in crashed.user_attrs["error"]
    driver.distributions = {"train.minibatch_size": _int(100, 101)}  # not whole segments
    assert driver.launch_next()
    bad = driver.study.trials[-1]
    assert bad.state == TrialState.FAIL and "run_dir" not in bad.user_attrs
    assert "must be a multiple of train.horizon" in bad.user_attrs["error"]
    assert not (driver.dir / st.TRIALS_DIR).exists()


def _int(low, high):
    import optuna.distributions as od

    return od.IntDistribution(low, high)


def test_a_trial_paused_on_a_fault_is_noticed(tmp_path):
    run_dir = rd.create_run_dir("bandit", tmp_path)
    rd.write_json_atomic(run_dir / rd.STATUS_FILE, {"state": "paused", "pid": os.getpid()})
    (run_dir / rd.EVENTS_FILE).write_text(
        "2026-11-22T13:00:00Z [info] engine 1 starting bandit (new run)\n"
        "2026-11-22T13:00:05Z [error] training paused at step 4096: the loss is NaN\n")
    run = TrialRun(0, run_dir, process=None)
    assert "the loss is NaN" in run.fault()
    (run_dir / rd.EVENTS_FILE).write_text("2026-11-22T13:00:05Z [info] paused at step 4096\n")
    assert run.fault() is None  # a person's pause is theirs


def test_trials_of_a_dead_driver_fail_and_their_engines_are_stopped(tmp_path, monkeypatch):
    driver = make_sweep(tmp_path)
    unsigned = driver.study.ask(fixed_distributions=driver.distributions)  # no driver yet
    trial = driver.study.ask(fixed_distributions=driver.distributions)
    trial.set_user_attr("driver", "x:999999999:1.0")  # no such pid here
    dead_host = driver.study.ask(fixed_distributions=driver.distributions)
    dead_host.set_user_attr("driver", f"{os.uname().nodename}:{os.getpid()}:0")  # pid reused
    alive = driver.study.ask(fixed_distributions=driver.distributions)
    alive.set_user_attr("driver", driver.ident)
    trial.set_user_attr("run_dir", str(tmp_path / "r"))
    stopped = []
    failed = fail_orphans(driver.study, stopped.append)
    # x is another host: its driver is judged by the heartbeat (fresh), not by the pid
    assert failed == [dead_host.number]
    states = {t.number: t.state for t in driver.study.trials}
    assert states[alive.number] == TrialState.RUNNING
    assert states[trial.number] == TrialState.RUNNING
    assert "died" in driver.study.trials[dead_host.number].user_attrs["error"]
    assert stopped == []  # no run dir recorded for that one
    assert driver.study.trials[unsigned.number].state == TrialState.RUNNING  # maybe signing
    monkeypatch.setattr("puffer_tui.engine.sweep.study.UNSIGNED_GRACE", -1)
    trial.set_user_attr("driver", "")  # now unsigned too, and both are past the grace period
    assert fail_orphans(driver.study, stopped.append) == [unsigned.number, trial.number]
    assert stopped == [tmp_path / "r"]


def test_sweep_best_prints_a_point_of_the_pareto_front_as_a_preset(tmp_path, capsys):
    driver = make_sweep(tmp_path, objective="pareto")
    for values in ([0.9, 30.0], [0.95, 60.0], [0.5, 40.0]):  # the last is dominated
        trial = driver.study.ask(fixed_distributions=driver.distributions)
        trial.set_user_attr("seconds", values[1])
        driver.study.tell(trial, values)
    driver.refresh()
    snap = json.loads((driver.dir / st.STATUS_FILE).read_text())
    assert snap["best"] == [0, 1]
    assert main(["sweep", "best", str(driver.dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# trial 1 of sweep u (pareto: 0.95, 60;")
    params = driver.study.trials[1].params
    assert f"learning_rate = {params['train.learning_rate']!r}" in out
    assert main(["sweep", "best", str(driver.dir), "--trial", "2"]) == 0
    assert main(["sweep", "best", str(driver.dir), "--trial", "7"]) == 2
    assert "trial 7 of u did not complete" in capsys.readouterr().err


@pytest.mark.parametrize("objective,expected", [("score", [0.8]),
                                                 ("score-per-hour", [0.8 * 3600 / 7200]),
                                                 ("pareto", [0.8, 7200.0])])
def test_objectives(objective, expected):
    from puffer_tui.engine.sweep.objective import final_score, objective_values

    rows = [{"score": 0.1}, {"score": 0.7}, {"score": float("nan")}, {"score": 0.8},
            {"score": 0.9}]
    assert final_score(rows, "score") == pytest.approx(0.8)  # mean of the last 3 finite
    assert objective_values(objective, 0.8, 7200.0) == pytest.approx(expected)


def test_a_driver_joining_a_study_with_other_settings_is_refused_before_writing(tmp_path,
                                                                               capsys):
    driver = make_sweep(tmp_path)
    url = driver.settings.storage_url(driver.dir)
    code = main(["sweep", "bandit", "--trials", "2", "--study", "u", "--storage", url,
                 "--metric", "episode_return", "--runs-dir", str(tmp_path / "other")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "has metric 'score' (not 'episode_return')" in err
    assert not (tmp_path / "other").exists()
    code = main(["sweep", "bandit", "--trials", "2", "--study", "u",
                 "--runs-dir", str(tmp_path)])
    assert code == 2 and "already exists" in capsys.readouterr().err


def test_the_headless_table_and_summary_show_the_trials_and_the_pareto_front(tmp_path):
    from rich.console import Console

    from puffer_tui.app.commands.sweep_watch import summary, table

    def row(number, state, score, seconds, values=None):
        return {"number": number, "state": state, "params": {"train.learning_rate": 0.00123},
                "values": values, "score": score, "seconds": seconds, "epoch": 3,
                "global_step": 1, "run_dir": None, "driver": None, "error": ""}

    snap = {"sweep": "p", "objective": "pareto", "directions": ["maximize", "minimize"],
            "target": 4, "state": "finished", "best": [0, 2],
            "counts": {"COMPLETE": 3, "RUNNING": 1},
            "trials": [row(0, "COMPLETE", 0.9, 30.0, [0.9, 30.0]),
                       row(1, "COMPLETE", 0.5, 40.0, [0.5, 40.0]),
                       row(2, "COMPLETE", 0.95, 20.0, [0.95, 20.0]),
                       row(3, "RUNNING", 0.2, 5.0)]}
    console = Console(record=True, width=120)
    console.print(table(snap))
    text = console.export_text()
    assert "3 complete, 0 pruned, 0 failed, 1 running of 4" in text
    assert "0*" in text and "2*" in text and "1*" not in text
    assert "RUNNING" in text and "learning_rate=0.00123" in text
    lines = summary(snap, tmp_path).splitlines()
    assert lines[0] == "sweep p finished: 3 complete, 1 running"
    assert lines[1].startswith("Pareto front")
    assert "trial   2" in lines[2] and "trial   0" in lines[3]  # fastest first
    assert f"puffer-tui sweep best {tmp_path}" in lines[4]


def test_a_trial_orphaned_before_it_was_signed_is_failed_and_replaced(tmp_path, monkeypatch):
    """A driver killed between asking for a trial and signing it leaves a RUNNING trial with
    no driver: the next driver must not count it as done, nor end the sweep one trial short."""
    driver = make_sweep(tmp_path, trials=1)
    orphan = driver.study.ask(fixed_distributions=driver.distributions)  # never signed
    monkeypatch.setattr("puffer_tui.engine.sweep.study.UNSIGNED_GRACE", 0.5)
    monkeypatch.setattr(TrialRun, "launch",
                        staticmethod(lambda number, run_dir, cores=None:
                                     FakeRun(run_dir, [0.9] * 3)))
    driver.loop()
    states = {t.number: t.state for t in driver.study.trials}
    assert states == {orphan.number: TrialState.FAIL, orphan.number + 1: TrialState.COMPLETE}
    assert "died" in driver.study.trials[orphan.number].user_attrs["error"]


def test_no_trial_is_pruned_in_its_first_quarter_of_epochs():
    from puffer_tui.engine.sweep.study import expected_epochs, make_pruner

    base = {"vec": {"num_envs": 512}, "train": {"total_timesteps": 600_000, "horizon": 64,
                                                 "batch_size": 0}}
    assert expected_epochs(base) == 18  # 600k steps in epochs of 512 * 64
    assert make_pruner("median", expected_epochs(base))._n_warmup_steps == 4
    assert make_pruner("median", 3)._n_warmup_steps == 2  # never fewer than two
    assert expected_epochs({}) == 8  # an unreadable base: a middling guess


class TimedRun(FakeRun):
    """Rows that also carry the training seconds (2 s an epoch)."""

    def __init__(self, run_dir, scores, **kwargs):
        super().__init__(run_dir, scores, **kwargs)
        for row in self._pending:
            row["uptime"] = 2.0 * row["epoch"]


def test_time_to_reach_stops_a_trial_that_got_there_and_counts_its_seconds(tmp_path):
    driver = make_sweep(tmp_path, objective="time-to-reach", reach=0.9)
    assert driver.settings.directions() == ["minimize"]
    fast = TimedRun(tmp_path, [0.2, 0.95, 0.5, 0.95, 0.97, 0.99])  # epoch 2 was one lucky one
    trial = run_fake(driver, fast)
    assert fast.stop_reason == "reached" and fast.stops == 1
    assert trial.state == TrialState.COMPLETE and trial.value == pytest.approx(8.0)  # epoch 4
    slow = TimedRun(tmp_path, [0.1, 0.3, 0.45])  # never reached: 6 s x (2 + 0.5)
    trial = run_fake(driver, slow)
    assert slow.stops == 0 and trial.state == TrialState.COMPLETE
    assert trial.value == pytest.approx(6.0 * 2.5)
    assert driver.study.best_trial.value == pytest.approx(8.0)


def test_time_to_reach_is_refused_without_a_value_to_reach(tmp_path, capsys):
    args = ["sweep", "bandit", "--trials", "2", "--objective", "time-to-reach",
            "--runs-dir", str(tmp_path), "--headless"]
    assert main(args) == 2
    assert "needs --reach V" in capsys.readouterr().err
    assert main(["sweep", "bandit", "--trials", "2", "--reach", "0.9", "--runs-dir",
                 str(tmp_path), "--headless"]) == 2
    assert "--reach is for --objective time-to-reach" in capsys.readouterr().err
    assert not (tmp_path / "sweeps").exists()


def test_a_lock_met_only_by_the_snapshot_is_said_once_and_so_is_its_end(tmp_path, monkeypatch,
                                                                       capsys):
    """On a loaded box the snapshot's read can be the only call that meets another process's
    lock: it was reported by nobody but Optuna's SQL dump, and its end never."""
    import logging
    import sqlite3

    from puffer_tui.engine.sweep import study as sd

    monkeypatch.setattr(sd, "LOCK_WAIT_S", 0.2)
    driver = make_sweep(tmp_path)
    heard = []
    storage_log = logging.getLogger("optuna.storages._rdb.storage")
    listener = logging.Handler()
    listener.emit = lambda record: heard.append(record.getMessage())
    storage_log.addHandler(listener)
    lock = sqlite3.connect(driver.dir / "study.db", timeout=5, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        driver.refresh()
        driver.refresh()
        said = capsys.readouterr().out
        status = json.loads((driver.dir / st.STATUS_FILE).read_text())
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        storage_log.removeHandler(listener)
    assert said.count("locked by another process") == 1, said
    assert "locked" in status["warning"]
    assert not [m for m in heard if "slower alternative" in m], heard  # the driver's words only
    driver.refresh()
    driver.refresh()
    said = capsys.readouterr().out
    assert said.count("free again") == 1, said
    assert "warning" not in json.loads((driver.dir / st.STATUS_FILE).read_text())


def test_a_read_that_passes_a_write_lock_does_not_say_it_is_gone(tmp_path, capsys):
    """SQLite lets reads through a lock that still holds writes: the loop's locked write is
    over only when a pass of the loop goes through, not when the snapshot's read does."""
    import sqlite3

    driver = make_sweep(tmp_path)
    lock = sqlite3.connect(driver.dir / "study.db", timeout=5, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # writes wait, reads pass
        driver._note_lock("retrying in 1 s", "loop")  # what the loop does on a locked write
        driver.refresh()
        said = capsys.readouterr().out
        assert "locked by another process" in said and "free again" not in said, said
        assert "locked" in json.loads((driver.dir / st.STATUS_FILE).read_text())["warning"]
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    driver._lock_gone("loop")  # the next pass went through
    assert capsys.readouterr().out.count("free again") == 1


def test_optunas_sql_dump_for_a_lock_retry_is_dropped_and_other_retries_kept():
    import logging

    from puffer_tui.engine.sweep import study as sd

    def record(message):
        return logging.LogRecord("optuna.storages._rdb.storage", logging.WARNING, __file__, 1,
                                 message, None, None)

    sd.quiet_optuna()
    storage_log = logging.getLogger("optuna.storages._rdb.storage")
    locked = record("Caught an error from sqlalchemy: (sqlite3.OperationalError) database is "
                    "locked [SQL: SELECT ...]. Falling back to a slower alternative.")
    too_many = record("Caught an error from sqlalchemy: (sqlite3.OperationalError) too many "
                      "SQL variables. Falling back to a slower alternative.")
    assert not storage_log.filter(locked)
    assert storage_log.filter(too_many)
