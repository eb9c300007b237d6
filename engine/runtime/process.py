"""The engine process: `python -m puffer_tui.engine RUN_DIR [--resume] [--fallback-checkpoint]`.

Loads RUN_DIR/config.toml, serves the control socket, builds the Trainer (optionally restoring
the latest checkpoint), then loops: run_epoch -> evaluation when due (engine/evaluation/periodic_eval.py,
its `eval` group added to the row) -> metrics row -> periodic checkpoint -> queued commands. SIGINT/SIGTERM ask for a stop (checkpoint, clean exit); a second one exits at once.
An exception becomes an error event carrying the traceback (events.log and every client),
state "error" in status.json, and exit status 1.

Faults that need a person pause the run with an error event instead (engine/shared/health.py,
engine/runtime/recovery.py, a `Recovery` the Engine builds and calls):
NaN or infinity from the env, the losses or the gradients (nothing is learned from a bad
batch; poisoned weights are never checkpointed and `resume` reloads the last good
checkpoint), and a full disk (the unwritten metrics rows and the checkpoint stay pending
and are written on `resume`, once space is freed).

Under torchrun (several learner ranks, engine/algo/distributed.py) every rank runs this; rank 0
alone serves the socket and writes status, metrics and checkpoints, and hands the commands
and the checkpoint it loads to the others.

A run directory removed under a live engine (`rm -rf runs/`, a test's tmp dir cleaned up)
leaves it unreachable (its socket lived there) with nowhere to write: rank 0 checks the
directory every RUN_DIR_CHECK seconds, says so on stderr and to the clients still connected,
and stops without a checkpoint (a stop command: it wakes a paused engine and reaches every
DDP rank through the usual broadcast); the writes into the directory are skipped from then on.

Exit status: 0 finished or stopped, 1 crashed or its run directory was removed (the run ended
without keeping what it trained: a failure, not a stop; 2 is for what is refused before
starting), 2 bad command line or run directory (or sizes that need more memory than is
available), 130 interrupted twice (no final checkpoint).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from puffer_tui.engine.algo.distributed import World, is_peer_failure, rank_event_log
from puffer_tui.engine.algo.epoch_cut import EpochCut
from puffer_tui.engine.diagnosis.epoch_diagnosis import Doctor
from puffer_tui.engine.evaluation.periodic_eval import PeriodicEval
from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.control_server import PROTOCOL_VERSION, ControlServer
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.recovery import Recovery, tidy_leftovers
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.runtime.telemetry import Telemetry, TrainerFeed
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import Config, load, save, schema
from puffer_tui.engine.shared.health import NonFiniteError, is_disk_full
from puffer_tui.engine.shared.protocol import (
    EVAL,
    LAUNCH_ID_ENV,
    RunState,
    check_set,
    palette_to_wire,
    schema_to_wire,
)
from puffer_tui.engine.startup.memory_estimate import check_memory
from puffer_tui.engine.vec.errors import WorkerError

STATUS_INTERVAL = 1.0  # seconds between status.json updates while training
# a stop lets the epoch end (README: "finishes its epoch"): it waits twice the last epoch's
# training time, at least STOP_GRACE (the first epoch: nothing measured yet) and at most
# STOP_WAIT_MAX (a SIGTERM's grace on a cluster); an epoch longer than that is cut at a safe
# point, and the events say so
STOP_GRACE = 0.5
STOP_WAIT_MAX = 10.0
LONG_EPOCH = 120.0  # seconds: an epoch longer than this is worth a warning
RUN_DIR_CHECK = 2.0  # seconds between checks that the run directory is still there


class Engine:
    def stop_grace(self) -> float:
        """How long a stop waits for the epoch's end before cutting it."""
        return min(max(STOP_GRACE, 2 * self.epoch_seconds), STOP_WAIT_MAX)

    def __init__(self, run_dir: Path, resume: bool = False, fallback: bool = False,
                 echo=None):
        self.run_dir = run_dir
        self.resume = resume
        self.fallback = fallback
        self.world = World.from_environment()  # rank 0 of 1 unless torchrun started us
        self.events = rank_event_log(run_dir, self.world)
        # every event on stdout (engine.out), unless the caller echoes them its own way (an
        # inline run: the script's stdout is the researcher's)
        self.events.subscribe(echo or _print_event)
        self.config: Config | None = None
        self.trainer = None  # built in _train, after the control server answers
        # the parts get what they use through their constructors; the trainer, built later,
        # is handed to the commands by attach, and reached by the recovery through a getter
        # that says None until then
        self.state = RunControl()
        self.epoch_seconds = 0.0  # the last whole epoch's training time (the stop's wait)
        self.frames = FrameSource(self._frame, self._trainer)
        self.commands = CommandQueue(self.state, self.frames, self.events,
                                     checkpoint=self.save_checkpoint, world=self.world)
        # faults that need a person, and the files they are about (metrics, checkpoints)
        self.recovery = Recovery(run_dir, self.world, self.events, self.state, self.commands,
                                 trainer=self._trainer,
                                 write_status=lambda: self.write_status(force=True))
        self.evaluation: PeriodicEval | None = None  # rank 0's, built with the trainer
        self.server: ControlServer | None = None
        self.telemetry: Telemetry | None = None
        self.doctor: Doctor | None = None  # rank 0's diagnosis (engine/diagnosis/epoch_diagnosis.py)
        self.started = time.time()
        self.error: str | None = None
        # what ended the training, kept for a caller in this process (puffer_tui.train with
        # inline=True re-raises it, so an env's traceback lands in the researcher's script)
        self.exception: BaseException | None = None
        # called with each epoch's row once it is written (the inline API's on_epoch)
        self.row_listeners: list = []
        self._status_due = 0.0
        self._signals = 0
        self._uptime_seen, self._warned_long_epoch = 0.0, False  # see _warn_of_long_epochs
        self.run_dir_gone = False  # set once by the watchdog: nothing more is written there
        self._watching = threading.Event()  # set to end the watchdog
        self._gone_lock = threading.Lock()

    # -- the whole life of the process ------------------------------------------------------

    def run(self) -> int:
        try:
            self.config = load(self.run_dir / rd.CONFIG_FILE)
        except Exception as e:
            self.error = f"cannot load the run's config: {e}"
            self.events.error(self.error)
            if not self.world.is_main:
                return 1
            rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, {
                "state": RunState.ERROR, "pid": os.getpid(), "error": self.error,
                "started": self.started, "updated": time.time()})
            return 1
        if not self.world.is_main:
            return self._run_training()  # no socket, status or files: rank 0 has them
        try:
            check_memory(self.config)  # refuse before allocating: not an OOM kill later
        except ValueError as e:
            self.error = str(e)
            self.events.error(self.error)
            rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, {
                "state": RunState.ERROR, "pid": os.getpid(), "error": self.error,
                "started": self.started, "updated": time.time()})
            return 2
        except Exception as e:  # an estimate that fails must not stop a run that may fit
            self.events.warning(f"could not estimate the memory this run needs: {e}")
        tidy_leftovers(self.run_dir)
        self.telemetry = Telemetry(self.config, self.run_dir.name, self.state)
        self.server = ControlServer(
            rd.socket_path(self.run_dir), self.commands, self.state, self.frames, self.hello,
            self.telemetry.wire,
            env_name=self.config.env_name, num_envs=self.config.vec.num_envs,
        )
        try:
            self.server.start()  # refuses to start if another engine serves this run
        except Exception as e:
            print(f"puffer_tui.engine: {e}", file=sys.stderr, flush=True)
            return 1
        self.events.subscribe(self.server.publish_event)
        (self.run_dir / rd.PID_FILE).write_text(f"{os.getpid()}\n")
        self.write_status(force=True)
        threading.Thread(target=self._watch_run_dir, args=(_identity(self.run_dir),),
                         name="run-dir-watchdog", daemon=True).start()
        return self._run_training()

    def _run_training(self) -> int:
        previous = self._install_signal_handlers()
        code = 1
        try:
            code = self._train()
        except KeyboardInterrupt:
            self.state.enter(RunState.STOPPED)
            self.events.warning("interrupted twice: exited without a final checkpoint")
            code = 130
        except BaseException as e:
            self.exception = e
            self.state.enter(RunState.ERROR)
            if self.world.is_main and self._run_dir_removed():
                code = 1  # a write into the missing directory failed before the watchdog looked
            elif self.world.enabled and is_peer_failure(e):  # another rank is gone: say which
                self.error = self.recovery.after_lost_rank(e)
                self.events.error(self.error)
            else:
                self.error = f"{type(e).__name__}: {e}"
                self.events.error(f"engine crashed: {self.error}\n{traceback.format_exc()}")
            code = 1
        finally:
            self._shutdown(previous)
        if self.run_dir_gone and code == 0:
            code = 1  # stopped, but what it trained is lost with the directory
        return code

    def _train(self) -> int:
        # lazy: the trainer (vectorizer, env bindings) loads after the socket is up
        from puffer_tui.engine.algo.trainer import Trainer

        self.events.info(f"engine {os.getpid()} starting {self.config.env_name} "
                         f"({'resuming' if self.resume else 'new run'})")
        self.world.join(self.config.train.device)  # the other learner ranks, if any
        if self.world.enabled:
            self.events.info(f"{self.world.size} learner ranks (torchrun, DDP)")
        self.trainer = Trainer(self.config, safe_point=self.commands.safe_point, world=self.world)
        self.commands.attach(self.trainer)
        if not self.world.enabled:  # ranks would have to agree on where to cut: they finish it
            self.trainer.cut_short = lambda: self.state.stop_overdue(self.stop_grace())
        collect, learn = self.trainer.torch_threads
        self.events.info(f"on {self.trainer.device} in {self.trainer.precision}, torch threads: "
                         f"{collect} collecting, {learn} learning")
        if self.trainer.preset:  # where the defaults came from (envs/gym_presets/family.py)
            self.events.info(f"defaults: {self.trainer.preset}")
        if self.trainer.stepping:
            self.events.info(self.trainer.stepping)
        if self.trainer.horizon_note:
            self.events.info(self.trainer.horizon_note)
            if not self.config.train.gamma_from_time_limit and self.world.is_main:
                # the gamma it chose, in the run's file: a resume reads it (and a gamma edited
                # there later is the user's), not a probe of its own
                save(self.config, self.run_dir / rd.CONFIG_FILE)
        if self.resume:
            self.recovery.restore(self.fallback)
            self._uptime_seen = self.trainer.uptime  # a long epoch is one of this run
        # the trainer's own config: W&B (train.wandb) attaches it and sees live changes to it
        metrics = self.recovery.open_metrics_writer(config=self.trainer.config,
                                                    warn=self.events.warning)
        if self.world.is_main:
            self.evaluation = PeriodicEval(self.trainer.config, self.run_dir, self.events,
                                           self._evaluation_interrupted)
            # the autopilot's changes go as a person's `set` goes: checked once, queued
            self.doctor = Doctor(self.trainer, self.events,
                                 self.server and self.server.publish_event, self._submit_set)
            self.commands.handle("diagnosis", self.doctor.command)
        if self.telemetry is not None:  # handed what it shows: the trainer's feed, diagnoses
            self.telemetry.attach(TrainerFeed.of(self.trainer), self.doctor.active)
        if metrics is not None and metrics.tensorboard_error:
            self.events.warning(f"TensorBoard is installed but unusable, metrics.jsonl only "
                                f"({metrics.tensorboard_error})")
        self.state.enter(RunState.RUNNING)
        self.write_status(force=True)
        if self.server is not None:
            self.server.publish_telemetry_now()
        while True:
            self.commands.at_boundary()
            if self.state.stop_requested:
                break
            if not self.recovery.recover():
                continue  # still stuck (disk still full, nothing to reload): paused again
            if self.trainer.done:
                break
            epoch_start = self.trainer.global_step, self.trainer.epoch, self.trainer.uptime
            self.recovery.before_epoch()  # what a lost rank leaves (DDP)
            threads = self.trainer.torch_threads
            try:
                row = self.trainer.run_epoch()
            except NonFiniteError as e:
                self.recovery.pause_for_non_finite(e)
                continue
            except EpochCut as e:  # a stop that could not wait for a long epoch's end
                self.events.info(f"stop: {e}")
                break
            except WorkerError as e:  # an env worker or Ray actor died: keep the learning
                self.recovery.after_worker_death(e, epoch_start)
                raise
            self.recovery.epoch_finished()
            if self.trainer.torch_threads != threads:  # automatic threads follow others' load
                collect, learn = self.trainer.torch_threads
                self.events.info(f"torch threads now {collect} collecting, {learn} learning: "
                                 f"the load of other programs changed")
            self.epoch_seconds = self.trainer.uptime - epoch_start[2]  # paused time excluded
            if self.telemetry is not None:  # rank 0's
                self.telemetry.record(row)
            row = self._evaluate(row)
            if self.doctor is not None:
                row = self.doctor.examine(row)
            self.recovery.persist(row, self.config.train.checkpoint_interval)
            for listener in self.row_listeners:
                listener(row)
            self.write_status()
            self._warn_of_long_epochs(row)
        if self.trainer.done and not self.state.stop_requested:
            path = self.recovery.final_checkpoint()
            self.state.enter(RunState.FINISHED)
            reason = self.trainer.finish_reason  # e.g. train.stop_at_score reached
            self.events.info(f"training finished at step {self.trainer.global_step}"
                             f"{f' ({reason})' if reason else ''}; checkpoint {path}")
        else:
            path = self.recovery.final_checkpoint() if self.state.stop_checkpoint else None
            if path is not None:
                self.events.info(f"stopped at step {self.trainer.global_step}; checkpoint {path}")
            else:
                self.events.info(f"stopped at step {self.trainer.global_step} without a checkpoint")
            self.state.enter(RunState.STOPPED)
        return 0

    def _submit_set(self, key: str, value, reply) -> None:
        """A `set` the engine makes itself (the autopilot's) goes as a person's does: checked
        once, queued for the epoch's end, `reply` told the answer."""
        self.commands.put(Command("set", check_set({"key": key, "value": value},
                                                   self.config.env_name), reply))

    def _warn_of_long_epochs(self, row: dict) -> None:
        """Once, after an epoch that trained over LONG_EPOCH seconds: the figures, and what
        waits for an epoch's end (checkpoints, evaluations, the curves' next point)."""
        seconds, self._uptime_seen = row["uptime"] - self._uptime_seen, row["uptime"]
        if self._warned_long_epoch or seconds < LONG_EPOCH:
            return
        self._warned_long_epoch = True
        self.events.warning(
            f"one epoch takes {seconds:.0f} s ({self.trainer.batch_size:,} steps at "
            f"{row['sps']:,.0f} steps/s): checkpoints, evaluations and the curves wait for an "
            f"epoch's end; lower vec.num_envs or train.horizon for shorter epochs")

    def _evaluate(self, row: dict) -> dict:
        """The row with an `eval` group when an evaluation is due after this epoch (rank 0;
        engine/evaluation/periodic_eval.py), told to clients at once."""
        if self.evaluation is None or not self.evaluation.due(self.trainer.epoch):
            return row
        group = self.evaluation.run(self.trainer)
        if group is None:
            return row
        row = {**row, EVAL: group}
        if self.telemetry is not None:
            self.telemetry.record(row)
        return row

    def _evaluation_interrupted(self) -> bool:
        """Between evaluation steps: apply queued commands (a pause waits here); True to
        give up (a stop, or eval.interval set to 0)."""
        self.commands.safe_point(between_steps=True)
        return self.state.stop_requested or self.config.eval.interval == 0

    def _shutdown(self, previous_handlers) -> None:
        self._watching.set()
        final = None
        try:
            final = self.telemetry.snapshot().push() if self.telemetry else None
        except Exception:
            pass
        try:
            self.write_status(force=True)
        except Exception:
            pass
        if self.server is not None:
            self.server.stop(final)
        if self.trainer is not None:
            try:
                self.trainer.close()
            except Exception as e:
                self.events.warning(f"closing the trainer failed: {e}")
        if self.doctor is not None:
            self.doctor.close()
        self.recovery.close(exit_code=1 if self.error else 0)  # the metrics writer
        if self.evaluation is not None:
            try:
                self.evaluation.close()
            except Exception as e:
                self.events.warning(f"closing the evaluation envs failed: {e}")
        self.world.close()
        if self.world.is_main and not self.run_dir_gone:
            (self.run_dir / rd.PID_FILE).unlink(missing_ok=True)
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)

    # -- checkpoints, status, hello ---------------------------------------------------------

    def save_checkpoint(self) -> Path | None:
        """The `checkpoint` command's: a checkpoint of the trainer now (rank 0; None on the
        others), kept by the Recovery, which knows the last one written."""
        return self.recovery.save_checkpoint()

    def write_status(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.world.is_main or self.run_dir_gone or (not force and now < self._status_due):
            return
        self._status_due = now + STATUS_INTERVAL
        trainer = self.trainer
        status = {
            "state": self.state.run_state,
            "pid": os.getpid(),
            "pid_create_time": _create_time(),
            "env": self.config.env_name,
            "run": self.run_dir.name,
            "global_step": getattr(trainer, "global_step", 0),
            "epoch": getattr(trainer, "epoch", 0),
            "total_timesteps": self.config.train.total_timesteps,
            "started": self.started,
            "updated": time.time(),
            "last_checkpoint": str(last[1]) if (last := self.recovery.last_checkpoint) else None,
            "ranks": self.world.size,
            "launch_id": os.environ.get(LAUNCH_ID_ENV),  # the launcher knows torchrun's pid only
        }
        if self.error:
            status["error"] = self.error
        try:
            rd.write_json_atomic(self.run_dir / rd.STATUS_FILE, status)
        except OSError as e:
            if self._run_dir_removed():
                return  # the stop is queued: every rank ends through the usual stop path
            if not is_disk_full(e):
                raise
            self._status_due = 0.0  # the old status.json stays whole; try again next time

    def _trainer(self):
        return self.trainer

    def _frame(self, env: int, view: str = "env"):
        return self.trainer.frame(env, view) if self.trainer is not None else None

    def hello(self) -> dict:
        # lazy: the env registry (its folders scanned) is not needed before a client asks
        from puffer_tui.envs import env_class

        config = self.config
        cls = env_class(config.env_name)
        layout = cls.layout(cls.resolve(dict(config.env)))
        return {
            "protocol": PROTOCOL_VERSION,
            "run": self.run_dir.name,
            "run_dir": str(self.run_dir),
            "env": config.env_name,
            "config": config.as_dict(),
            "schema": schema_to_wire(schema(config.env_name)),
            "palette": palette_to_wire(cls.palette),
            "frame_shape": list(layout.frame_shape) if layout.frame_shape else None,
            "num_envs": config.vec.num_envs,  # rank 0's: the envs a client can render
            "ranks": self.world.size,
            "pid": os.getpid(),
        }

    # -- the run directory removed under the engine ------------------------------------------

    def _watch_run_dir(self, identity) -> None:
        """Rank 0's watchdog thread: the directory gone (or another made in its place) ends
        the run; the other ranks stop through the stop command rank 0 broadcasts."""
        while not self._watching.wait(RUN_DIR_CHECK):
            if self._run_dir_removed(identity):
                return

    def _run_dir_removed(self, identity=None) -> bool:
        """True when the run directory is gone; the first call to see it says so and asks
        for a stop without a checkpoint. Without `identity` (after a failed write) only its
        absence counts."""
        now = _identity(self.run_dir)
        if now == _UNREADABLE or (now is not None and (identity is None or now == identity)):
            return False
        with self._gone_lock:
            first, self.run_dir_gone = not self.run_dir_gone, True
        if first:
            self.events.stop_writing()  # no file to append to: the clients still hear it
            self.error = (f"the run directory {self.run_dir} was removed: nothing can reach "
                          "this engine or keep what it trains; stopping without a checkpoint")
            print(f"puffer_tui.engine: {self.error}", file=sys.stderr, flush=True)
            self.events.error(self.error)
            self.commands.put(Command("stop", {"checkpoint": False}))  # wakes a paused engine
        return True

    # -- signals ------------------------------------------------------------------------------

    def _install_signal_handlers(self) -> dict:
        previous = {}
        if threading.current_thread() is not threading.main_thread():
            return previous  # an engine run inline from a script's thread: its signals are its own
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    def _on_signal(self, signum, frame) -> None:
        self._signals += 1
        if self._signals > 1:
            raise KeyboardInterrupt
        # The handler runs on the main thread, which may hold the queue's lock: hand the stop
        # to a thread rather than enqueue from here.
        name = signal.Signals(signum).name
        threading.Thread(target=self._request_stop, args=(name,), daemon=True).start()

    def _request_stop(self, name: str) -> None:
        self.events.info(f"{name} received: checkpointing and stopping")
        self.commands.put(Command("stop", {"checkpoint": True}))


_UNREADABLE = (-1, -1)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the directory, None once it is gone."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:  # unreadable for a moment is not gone: look again next time
        return _UNREADABLE
    return st.st_dev, st.st_ino


def _create_time() -> float | None:
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:
        return None


def _print_event(event: dict) -> None:
    # engine.out keeps a copy of every event, handy when the engine dies early
    from puffer_tui.engine.shared.events import format_line

    try:
        print(format_line(event), flush=True)
    except OSError:
        pass  # a full disk under engine.out: events.log and the clients still get it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m puffer_tui.engine",
        description="Run the puffer-tui training engine on a prepared run directory.",
    )
    parser.add_argument("run_dir", help="run directory holding config.toml")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    parser.add_argument("--fallback-checkpoint", action="store_true",
                        help="with --resume: if the latest checkpoint is corrupt, use the previous")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir).resolve()
    if not rd.is_run_dir(run_dir):
        print(f"puffer_tui.engine: {run_dir} is not a run directory (no {rd.CONFIG_FILE})",
              file=sys.stderr)
        return 2
    return Engine(run_dir, resume=args.resume, fallback=args.fallback_checkpoint).run()
