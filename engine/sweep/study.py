"""The Optuna study behind a sweep: storage, sampler, pruner, and trials whose driver died.

Trials are RUNNING in the database while a driver runs them. A driver that dies leaves them
RUNNING: a driver on the same host finds them by the dead pid recorded on each trial (and
stops their engines), drivers elsewhere by the storage heartbeat going stale; either way they
become FAIL (error attribute says why) and are not counted as done.

Tested in: tests/engine/sweep/test_sweep_driver_logic.py, tests/engine/sweep/test_sweep_postgres.py,
tests/engine/sweep/test_sweep_faults.py (a locked study)
"""

from __future__ import annotations

import datetime
import os
import socket
from pathlib import Path

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.sweep_settings import SweepError, SweepSettings

HEARTBEAT_INTERVAL = 5  # seconds between a running trial's heartbeats in the storage
GRACE_PERIOD = 60  # a RUNNING trial silent this long has lost its driver (other hosts)
# A driver signs a trial (its heartbeat, then its id) right after asking for it: one still
# unsigned after this long was asked for by a driver that died in between.
UNSIGNED_GRACE = 10.0
DONE_STATES = ("COMPLETE", "PRUNED")
# How long one database call waits for another process's lock on a SQLite study before it
# fails; the driver then says so and retries with backoff (it waited 60 s, silently, while a
# finished trial went unrecorded and its slot sat idle).
LOCK_WAIT_S = 2.0
# settings every driver on one study must share (the search space may differ)
SHARED = ("env_name", "metric", "direction", "objective")


def quiet_optuna() -> None:
    import logging

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage_log = logging.getLogger("optuna.storages._rdb.storage")
    if _not_a_lock_retry not in storage_log.filters:
        storage_log.addFilter(_not_a_lock_retry)


def _not_a_lock_retry(record) -> bool:
    """Optuna retries a read that met a lock in another form, and says so with the whole SQL
    error; the driver reports a lock in one line of its own (and when it goes)."""
    text = record.getMessage()
    return not ("slower alternative" in text and is_locked(Exception(text)))


def open_storage(url: str):
    import warnings

    from optuna.exceptions import ExperimentalWarning
    from optuna.storages import RDBStorage

    warnings.filterwarnings("ignore", category=ExperimentalWarning)  # heartbeat: stable enough
    # we record heartbeats ourselves (ask-and-tell), which this warning does not know
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")

    kwargs = {"connect_args": {"timeout": LOCK_WAIT_S}} if url.startswith("sqlite") else {}
    try:
        return RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_INTERVAL,
                          grace_period=GRACE_PERIOD)
    except ImportError as e:
        raise SweepError(f"storage {redact(url)}: a database driver is missing ({e}); "
                         f"for PostgreSQL: pip install 'puffer-tui[sweep-postgres]'") from None
    except Exception as e:
        raise SweepError(f"storage {redact(url)}: cannot open it ({_first_line(e)})") from None


def make_pruner(name: str, epochs: int = 8):
    """`epochs`: about how many epochs a trial trains. Early RL scores say little (a config
    that learns fast later can start slow), so no trial is judged in its first quarter."""
    import optuna

    warmup = max(2, epochs // 4)
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=warmup)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=warmup, max_resource=max(epochs, warmup))
    return optuna.pruners.NopPruner()


def expected_epochs(base: dict) -> int:
    """Epochs of a trial with the sweep's base config (Config.as_dict()), for the pruner."""
    train, vec = base.get("train") or {}, base.get("vec") or {}
    try:
        batch = int(train.get("batch_size") or 0) or int(vec["num_envs"]) * int(train["horizon"])
        return max(1, int(train["total_timesteps"]) // max(batch, 1))
    except (KeyError, TypeError, ValueError):
        return 8


def open_study(settings: SweepSettings, sweep_dir: Path):
    """The study (created if new); SweepError if it exists with incompatible settings."""
    import optuna

    quiet_optuna()
    storage = open_storage(settings.storage_url(sweep_dir))
    sampler = optuna.samplers.TPESampler(seed=settings.seed, constant_liar=True,
                                         n_startup_trials=4)
    try:
        study = optuna.create_study(storage=storage, study_name=settings.name, sampler=sampler,
                                    pruner=make_pruner(settings.pruner, expected_epochs(settings.base)),
                                    load_if_exists=True,
                                    directions=settings.directions())
    except Exception as e:
        raise SweepError(f"study {settings.name}: {_first_line(e)}") from None
    theirs = study.user_attrs.get("settings")
    ours = {k: getattr(settings, k) for k in SHARED}
    if theirs is None:
        study.set_user_attr("settings", ours)
    elif theirs != ours:
        diff = ", ".join(f"{k} {theirs.get(k)!r} (not {ours[k]!r})" for k in SHARED
                         if theirs.get(k) != ours[k])
        raise SweepError(f"study {settings.name} in {redact(settings.storage_url(sweep_dir))} "
                         f"has {diff}; join it with the same settings or pick another --study")
    if [d.name.lower() for d in study.directions] != settings.directions():
        raise SweepError(f"study {settings.name} optimizes {len(study.directions)} objective(s)"
                         f"; --objective {settings.objective} needs {len(settings.directions())}")
    return study


def driver_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_create_time(os.getpid())}"


def driver_alive(ident: str) -> bool:
    """Whether the driver named by driver_id() still runs; True for other hosts (unknown)."""
    host, _, rest = ident.partition(":")
    if host != socket.gethostname():
        return True
    pid_text, _, created = rest.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    now = _create_time(pid)
    return now is not None and (created in ("", "None") or abs(float(created) - now) < 1.0)


def fail_orphans(study, stop_engine) -> list[int]:
    """Mark FAIL the RUNNING trials whose driver is dead (same host) or silent (heartbeat);
    `stop_engine(run_dir)` stops an engine such a driver left running. Their numbers."""
    import optuna
    from optuna.trial import TrialState

    failed = []
    now = datetime.datetime.now()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        ident = trial.user_attrs.get("driver", "")
        # no driver recorded: one died between asking and signing it (or is signing it now)
        unsigned = not ident and trial.datetime_start is not None and \
            (now - trial.datetime_start).total_seconds() > UNSIGNED_GRACE
        if not unsigned and (not ident or driver_alive(ident)):
            continue
        run_dir = trial.user_attrs.get("run_dir")
        if run_dir:
            stop_engine(Path(run_dir))
        study._storage.set_trial_user_attr(
            trial._trial_id, "error", f"its driver ({ident or 'unknown'}) died while it ran")
        study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
        failed.append(trial.number)
    before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    optuna.storages.fail_stale_trials(study)  # drivers on other hosts: by heartbeat
    after = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    return failed + sorted(after - before - set(failed))


def is_locked(error: BaseException) -> bool:
    """A database call that failed because another process holds the study's lock (Optuna
    wraps the driver's error: its causes are read too)."""
    seen = 0
    while error is not None and seen < 8:
        text = str(error).lower()
        if any(words in text for words in ("database is locked", "database table is locked",
                                           "lock timeout", "could not obtain lock")):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def adoptable_orphans(study) -> list:
    """RUNNING trials whose driver on this host died while their engine went on (or ended
    since): a new driver follows them to the end and keeps their results."""
    from optuna.trial import TrialState

    adoptable = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        ident = trial.user_attrs.get("driver", "")
        run_dir = trial.user_attrs.get("run_dir")
        if not ident or driver_alive(ident) or not run_dir:
            continue
        status = rd.read_status(Path(run_dir))
        if status.get("state") is not None:  # its engine started: alive, or ended with a word
            adoptable.append(trial)
    return adoptable


def unsigned_running(study) -> bool:
    """Whether a RUNNING trial has no driver yet (being signed, or orphaned at birth)."""
    from optuna.trial import TrialState

    return any(not t.user_attrs.get("driver")
               for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def counts(study) -> dict[str, int]:
    out: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        out[trial.state.name] = out.get(trial.state.name, 0) + 1
    return out


def active_numbers(study) -> list[int]:
    """Trials that count against the budget: done, running or waiting (not failed)."""
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
    return sorted(t.number for t in study.get_trials(deepcopy=False, states=states))


def redact(url: str) -> str:
    """A storage URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url


def _create_time(pid: int) -> float | None:
    try:
        import psutil

        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return round(proc.create_time(), 2)
    except Exception:
        return None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"
