"""The sweep driver: `python -m puffer_tui.engine.sweep SWEEP_DIR`.

Asks the study for trials, runs each as an engine process (K at once, the cores divided
between them), reports every epoch's score to the pruner, stops the hopeless ones through
their control socket, and tells the study how each ended: COMPLETE, PRUNED, or FAIL (with the
error text as the trial's `error` attribute). It runs in its own session, so the terminal and
the app can go; SIGINT/SIGTERM or a `stop` on its socket stop the running trials (recorded as
FAIL, so a resume runs them again) and end it. Exit status 0, or 1 when it gave up on errors.

Tested in: tests/engine/sweep/test_sweep_driver.py (real sweeps),
tests/engine/sweep/test_sweep_driver_logic.py, tests/engine/sweep/test_sweep_faults.py
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from pathlib import Path

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.protocol import RunState
from puffer_tui.engine.shared.run_dir import socket_answers
from puffer_tui.engine.shared.sweep_control import ControlError, request
from puffer_tui.engine.sweep import objective as obj
from puffer_tui.engine.sweep import study as sd
from puffer_tui.engine.sweep.server import SweepServer
from puffer_tui.engine.sweep.snapshot import importance_wait, param_importance, snapshot
from puffer_tui.engine.sweep.space import distributions, space_from_json
from puffer_tui.engine.sweep.steering import Steering
from puffer_tui.engine.sweep.trial_run import TrialRun
from puffer_tui.engine.vec.sizing import usable_cores

TICK = 0.2  # seconds between looks at the running trials
SNAPSHOT_EVERY = 1.0  # a new snapshot at least this often (its clocks move); at once on a change
ORPHAN_CHECK_EVERY = 30.0
IMPORTANCE_EVERY = 10.0
REACHED = "reached"  # a time-to-reach trial stopped because it got there


class Driver:
    def __init__(self, sweep_dir: Path):
        self.dir = Path(sweep_dir).resolve()
        self.settings = st.load_settings(self.dir)
        self.base = cfg.from_dict(self.settings.base)
        self.space = space_from_json(self.settings.space)
        self.distributions = distributions(self.space)
        self.trials_dir = self.dir / st.TRIALS_DIR
        self.ident = sd.driver_id()
        self.running: dict[int, tuple] = {}  # number -> (optuna Trial, TrialRun, slot)
        self.stopping: str | None = None  # why the sweep ends early
        self.state = RunState.STARTING
        self.failures = 0
        self.started = time.time()
        self.study = None
        self.server: SweepServer | None = None  # pushes each new snapshot to its subscribers
        self._snapshot: dict = {}
        self._changed = False  # a trial started, reported or ended, or a client steered
        self._beats: dict[int, float] = {}
        self.cores = usable_cores()  # divided between the trials running at once
        self.steering = Steering(self)  # clients' pause/resume/prune/add, applied by the loop
        self._importance: dict = {}
        self._importance_note = ""  # why there are no importances (yet)
        self._importance_waited = True  # computed as soon as they can be, then throttled
        self._importance_at = 0.0
        self._next_snapshot = self._next_orphans = 0.0
        self._lock_note = ""  # said while the study's database is locked
        self._lock_met_by = ""  # which kind of call met it: "loop" or "snapshot"

    # -- the process ------------------------------------------------------------------------

    def run(self) -> int:
        if socket_answers(self.dir / st.SOCKET_FILE):
            raise st.SweepError(f"another driver already runs {self.dir} (its socket answers)")
        self.study = sd.open_study(self.settings, self.dir)
        self.adopt_orphans()
        failed = sd.fail_orphans(self.study, stop_engine)
        if failed:
            print(f"trials {failed} lost their driver: marked FAIL, not counted", flush=True)
        (self.dir / st.PID_FILE).write_text(f"{os.getpid()}\n")
        server = self.serve()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, _f: self.request_stop(signal.Signals(signum).name))
        code = 0
        self.state = RunState.RUNNING
        try:
            self.loop()
            self.state = RunState.STOPPED if self.stopping else RunState.FINISHED
            if self.failures_exceeded():
                self.state, code = RunState.ERROR, 1
        except BaseException as e:
            self.state, code = RunState.ERROR, 1
            self.stopping = f"driver crashed: {type(e).__name__}: {e}"
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            self.wind_down()
        finally:
            self.steering.refuse_all(f"the sweep has ended ({self.state})")
            self.refresh()  # its subscribers get the final snapshot before the socket closes
            server.stop()
            (self.dir / st.PID_FILE).unlink(missing_ok=True)
        return code

    def serve(self) -> SweepServer:
        """Start the driver's socket, its first snapshot made; each new one is pushed."""
        self.server = SweepServer(
            self.dir / st.SOCKET_FILE, self.hello, lambda: self._snapshot,
            lambda: self.request_stop("stopped by a client"), self.steering.request)
        self.refresh()
        self.server.start()
        return self.server

    def hello(self) -> dict:
        return {"sweep": self.settings.name, "sweep_dir": str(self.dir), "pid": os.getpid(),
                "env": self.settings.env_name,
                "settings": dict(vars(self.settings), base=None,
                                 storage=sd.redact(self.settings.storage_url(self.dir)))}

    def request_stop(self, why: str) -> None:
        if self.stopping is None:
            self.stopping = why

    # -- the loop ---------------------------------------------------------------------------

    def adopt_orphans(self) -> None:
        """Trials a killed driver left training (or that ended since) are followed to their
        end by this driver, their results kept; the rest of the orphans fail as before."""
        import optuna

        for frozen in sd.adoptable_orphans(self.study)[: self.settings.parallel]:
            trial = optuna.trial.Trial(self.study, frozen._trial_id)
            self.beat(trial)
            trial.set_user_attr("driver", self.ident)
            slot = min(set(range(self.settings.parallel)) - {s for *_, s in self.running.values()})
            started = frozen.datetime_start.timestamp() if frozen.datetime_start else time.time()
            run = TrialRun.adopt(frozen.number, Path(frozen.user_attrs["run_dir"]), started)
            self.running[frozen.number] = (trial, run, slot)
            self._changed = True
            print(f"trial {frozen.number} adopted: its driver died, its engine "
                  f"{'trains on' if run.process.poll() is None else 'has ended'} in "
                  f"{run.run_dir.name}", flush=True)

    def loop(self) -> None:
        backoff = 0.0  # seconds to wait after the study's database was found locked
        while True:
            try:
                self.loop_once()
            except _Done:
                self._lock_gone("loop")  # its last pass wrote what it had to
                return
            except Exception as e:
                if not sd.is_locked(e):
                    raise
                backoff = min(max(1.0, backoff * 2), 15.0)
                self._note_lock(f"retrying in {backoff:.0f} s", "loop")
                self.refresh()
                time.sleep(backoff)
                continue
            backoff = 0.0
            self._lock_gone("loop")

    def _note_lock(self, retry: str, met_by: str) -> None:
        """Said once per lock, whichever of the driver's calls met it (the snapshot's read
        included: a lock that only it met was otherwise reported by nobody). `met_by`: "loop"
        (a write, or any call of a pass) or "snapshot" (a read): only a success of the same
        kind says the lock has gone, since reads pass a lock that still holds writes."""
        if not self._lock_note:
            print(f"the study's database is locked by another process: retrying with "
                  f"backoff (up to every 15 s); {len(self.running)} trial(s) go on training "
                  f"meanwhile [{sd.redact(self.settings.storage_url(self.dir))}]", flush=True)
        if met_by == "loop" or not self._lock_note:
            self._lock_met_by = met_by
        self._lock_note = f"the study's database is locked by another process: {retry}"

    def _lock_gone(self, succeeded: str) -> None:
        """A pass of the loop (or a read of the study) went through: the lock a call of that
        kind met is gone (run() reads the study once more at the end)."""
        if self._lock_note and succeeded == self._lock_met_by:
            print("the study's database is free again: going on", flush=True)
            self._lock_note = ""

    def loop_once(self) -> None:
        """One look at everything; raises _Done when the sweep is over."""
        if self.steering.apply_pending():
            self._changed = True  # paused, resumed, a new target, a trial being pruned
        if self.stopping is None and self.steering.launching and not self.failures_exceeded():
            while len(self.running) < self.settings.parallel and self.launch_next():
                pass
        for number in list(self.running):
            self.follow(number)
        now = time.monotonic()
        if now >= self._next_orphans:
            self._next_orphans = now + ORPHAN_CHECK_EVERY
            sd.fail_orphans(self.study, stop_engine)
        if self._changed or now >= self._next_snapshot:
            self.refresh()
        if self.stopping is not None:
            self.wind_down()
            raise _Done
        if not self.running and self.failures_exceeded():
            self.stopping = (f"gave up after {self.failures} failed trials; their `error` "
                             f"attribute says why (sweep status.json, or the study)")
            raise _Done
        if not self.running and self.budget_left() <= 0:
            if not sd.unsigned_running(self.study):
                raise _Done
            # a trial nobody has signed yet: a live driver's (soon signed) or a dead
            # one's (failed after UNSIGNED_GRACE, which frees its place in the budget)
            sd.fail_orphans(self.study, stop_engine)
        time.sleep(TICK)

    def budget_left(self) -> int:
        return self.settings.trials - len(sd.active_numbers(self.study))

    def failures_exceeded(self) -> bool:
        return self.failures >= max(3, self.settings.trials)

    def launch_next(self) -> bool:
        """Ask for a trial and start it; False when the budget is spent."""
        from optuna.trial import TrialState

        if self.budget_left() <= 0:
            return False
        trial = self.study.ask(fixed_distributions=self.distributions)
        self.beat(trial)  # first: from now on a silent trial is a lost one, on any host
        trial.set_user_attr("driver", self.ident)
        # Another driver may have asked at the same moment: the budget goes to the lowest
        # numbers, and a surplus trial is recorded as failed without running.
        if trial.number not in sd.active_numbers(self.study)[: self.settings.trials]:
            trial.set_user_attr("error", "not run: another driver took the study's last trial")
            self.study.tell(trial, state=TrialState.FAIL)
            return False
        slot = min(set(range(self.settings.parallel)) - {s for *_, s in self.running.values()})
        try:
            config = cfg.apply(self.base, dict(trial.params))
            cores = self.slot_cores(slot)
            if "train.torch_threads" not in self.settings.fixed:
                config = cfg.apply(config, {"train.torch_threads": len(cores)})
            run_dir = TrialRun.prepare(trial.number, config, self.trials_dir)
            # recorded before the engine starts, so a resume can always find and stop it
            trial.set_user_attr("run_dir", str(run_dir))
            run = TrialRun.launch(trial.number, run_dir, cores)
        except (cfg.ConfigError, rd.RunDirError, OSError) as e:
            self.fail(trial, f"{type(e).__name__}: {e}")
            return True
        self.running[trial.number] = (trial, run, slot)
        self._changed = True
        print(f"trial {trial.number} started in {run.run_dir.name}: {trial.params}", flush=True)
        return True

    def slot_cores(self, slot: int) -> list[int]:
        per = max(1, len(self.cores) // self.settings.parallel)
        start = (slot * per) % len(self.cores)
        return [self.cores[(start + i) % len(self.cores)] for i in range(per)]

    def follow(self, number: int) -> None:
        trial, run, _slot = self.running[number]
        single = len(self.settings.directions()) == 1
        rows = run.poll()
        if rows:
            self._changed = True  # its latest epoch and score are in the next snapshot
        for row in rows:
            score = obj.metric_value(row, self.settings.metric)  # env/<key> or its column
            epoch = row.get("epoch")
            if not isinstance(score, (int, float)) or not isinstance(epoch, int) or not single:
                continue
            if self.settings.objective == "time-to-reach":
                value = self.reach_value(run.rows)
                if value is None:
                    continue
                trial.report(value, epoch)
                if run.stop_reason is None and self.reached(run.rows):
                    run.stop(REACHED)  # its time is known: training on would only cost
                    continue
            else:
                trial.report(obj.intermediate(self.settings.objective, float(score), run.seconds),
                             epoch)
            if run.stop_reason is None and trial.should_prune():
                run.stop("pruned")
        fault = run.fault() if run.stop_reason is None else None
        if fault:
            run.stop(f"the engine paused on a fault: {fault}")
        if time.monotonic() - self._beats.get(number, 0.0) >= sd.HEARTBEAT_INTERVAL:
            self.beat(trial)
        if run.exited():
            run.settle_status()
            self.finish(trial, run)  # a locked database raises here: told again next time
            del self.running[number]
            self._beats.pop(number, None)
            self._changed = True

    def reached(self, rows: list[dict]) -> bool:
        return obj.reached_at(rows, self.settings.metric, self.settings.reach,
                              self.settings.direction == "maximize") is not None

    def reach_value(self, rows: list[dict]) -> float | None:
        return obj.time_to_reach(rows, self.settings.metric, self.settings.reach,
                                 self.settings.direction == "maximize")

    def beat(self, trial) -> None:
        self._beats[trial.number] = time.monotonic()
        self.study._storage.record_heartbeat(trial._trial_id)

    def finish(self, trial, run: TrialRun) -> None:
        from optuna.trial import TrialState

        run.poll()  # the rows written just before the engine exited
        trial.set_user_attr("seconds", round(run.seconds, 3))
        last = run.rows[-1] if run.rows else {}
        trial.set_user_attr("global_step", last.get("global_step"))
        score = obj.final_score(run.rows, self.settings.metric)
        if score is not None:
            trial.set_user_attr("score", score)
        state = run.state()
        done = state == RunState.FINISHED or (run.stop_reason == REACHED and self.reached(run.rows))
        if done and score is not None:  # a stop that came too late changes nothing
            if self.settings.objective == "time-to-reach":
                values = [self.reach_value(run.rows)]
            else:
                values = obj.objective_values(self.settings.objective, score, run.seconds)
            self.study.tell(trial, values)
            print(f"trial {trial.number} complete: {values}", flush=True)
        elif run.stop_reason == "pruned" or (run.stop_reason is None and state == RunState.STOPPED):
            if run.stop_reason is None:
                trial.set_user_attr("stopped_by", "a client of the trial's engine")
            self.study.tell(trial, state=TrialState.PRUNED)
            print(f"trial {trial.number} pruned at epoch {last.get('epoch')}", flush=True)
        elif run.stop_reason is not None:
            self.fail(trial, run.stop_reason)
        elif state != RunState.FINISHED:
            self.fail(trial, run.error_text())
        else:
            self.fail(trial, f"the run finished without a {self.settings.metric!r} metric in "
                             f"{rd.METRICS_FILE} (pick one with --metric)")

    def fail(self, trial, error: str) -> None:
        from optuna.trial import TrialState

        trial.set_user_attr("error", error)
        self.study.tell(trial, state=TrialState.FAIL)
        self._changed = True
        if not error.startswith("interrupted"):
            self.failures += 1
        print(f"trial {trial.number} failed: {error.splitlines()[0] if error else ''}",
              flush=True)

    def wind_down(self) -> None:
        """Stop every running trial and record it as FAIL (interrupted): a resume reruns it."""
        for _trial, run, _slot in self.running.values():
            run.stop(f"interrupted: {self.stopping}")
        deadline = time.monotonic() + 60
        while self.running and time.monotonic() < deadline:
            for number in list(self.running):
                trial, run, _slot = self.running[number]
                if run.exited():  # one that finished meanwhile still counts (finish says)
                    run.settle_status()
                    self.finish(trial, run)
                    del self.running[number]
            if self._changed:  # a stopped trial's end, shown while the others wind down
                self.refresh()
            time.sleep(TICK)

    def refresh(self) -> None:
        """The snapshot clients get (pushed to the subscribed ones), and status.json for those
        that only read files."""
        self._changed = False
        self._next_snapshot = time.monotonic() + SNAPSHOT_EVERY
        try:
            snap = snapshot(self.study, self.settings, self.running)
        except Exception as e:  # a database hiccup must not end the sweep
            if sd.is_locked(e):
                self._note_lock("retrying", "snapshot")
            snap = dict(self._snapshot, warning=f"could not read the study: {e}")
        else:
            self._lock_gone("snapshot")
        paused = self.state == RunState.RUNNING and not self.steering.launching
        if self._lock_note:
            snap["warning"] = self._lock_note
        snap.update(state=RunState.PAUSED if paused else self.state, driver_pid=os.getpid(),
                    uptime=time.time() - self.started, stopping=self.stopping,
                    importance=self.importance(), importance_note=self._importance_note)
        self._snapshot = snap
        rd.write_json_atomic(self.dir / st.STATUS_FILE, snap)
        if self.server is not None:
            self.server.push_snapshot(snap)

    def importance(self) -> dict:
        """Optuna's parameter importances, recomputed at most every IMPORTANCE_EVERY seconds
        once enough trials completed ({} before; a failure leaves the last ones)."""
        now = time.monotonic()
        try:
            # why there are none yet, kept current (cheap); the importances throttled
            wait = importance_wait(self.study)
            if wait:
                self._importance_note, self._importance_waited = wait, True
            elif self._importance_waited or now - self._importance_at >= IMPORTANCE_EVERY:
                self._importance_at, self._importance_waited = now, False
                self._importance, self._importance_note = param_importance(self.study,
                                                                           self._importance)
        except Exception:  # the database is locked or away: keep the last ones
            pass
        return self._importance


class _Done(Exception):
    """The sweep's loop is over (budget spent, stopped, or too many failures)."""


def stop_engine(run_dir: Path) -> None:
    """Stop an engine a dead driver left running (no checkpoint: the trial is rerun)."""
    if not rd.engine_alive(rd.read_status(run_dir)):
        return
    try:
        request(rd.socket_path(run_dir), "stop", {"checkpoint": False}, timeout=3.0)
    except ControlError:
        pid = rd.read_status(run_dir).get("pid")
        if isinstance(pid, int):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m puffer_tui.engine.sweep SWEEP_DIR", file=sys.stderr)
        return 2
    try:
        return Driver(Path(argv[0])).run()
    except st.SweepError as e:
        print(f"puffer_tui.engine.sweep: {e}", file=sys.stderr, flush=True)
        return 2
