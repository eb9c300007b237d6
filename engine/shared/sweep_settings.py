"""A sweep's directory and settings: `<runs root>/sweeps/NAME/`.

    sweep.json     what to search and how (written once by `puffer-tui sweep`, atomically)
    study.db       the Optuna study (SQLite) unless --storage names another database
    control.sock   the driver's socket (JSON lines, engine/shared/protocol.py framing)
    driver.pid / driver.out / status.json   the driver process, its output, its state
    trials/        one ordinary run directory per trial started by this driver

Tested in: tests/engine/sweep/test_sweep_driver_logic.py, tests/engine/sweep/test_sweep_driver.py,
tests/screens/test_sweep_view.py, tests/screens/test_app_launcher.py (the launcher's sweeps)
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from puffer_tui.engine.shared import run_dir as rd

SWEEPS_DIR = "sweeps"
SETTINGS_FILE = "sweep.json"
STUDY_FILE = "study.db"
SOCKET_FILE = "control.sock"
PID_FILE = "driver.pid"
STATUS_FILE = "status.json"
DRIVER_OUT_FILE = "driver.out"
TRIALS_DIR = "trials"

OBJECTIVES = ("score", "score-per-hour", "pareto", "time-to-reach")
PRUNERS = ("median", "hyperband", "none")
DIRECTIONS = ("maximize", "minimize")


class SweepError(ValueError):
    """A sweep that cannot be created, found or resumed; the text says why."""


@dataclass
class SweepSettings:
    name: str
    env_name: str
    trials: int
    parallel: int = 1
    metric: str = "score"
    direction: str = "maximize"
    objective: str = "score"
    pruner: str = "median"
    storage: str = ""  # Optuna storage URL; "" means SQLite study.db in the sweep dir
    base: dict = field(default_factory=dict)  # Config.as_dict() every trial starts from
    fixed: dict = field(default_factory=dict)  # the person's own overrides (for `sweep best`)
    space: list = field(default_factory=list)  # space_to_json(...)
    seed: int | None = None  # sampler seed (None: random)
    reach: float | None = None  # time-to-reach: the metric's value to reach

    def storage_url(self, sweep_dir: Path) -> str:
        return self.storage or f"sqlite:///{(Path(sweep_dir) / STUDY_FILE).resolve()}"

    def directions(self) -> list[str]:
        if self.objective == "pareto":  # score against wall-clock seconds
            return [self.direction, "minimize"]
        if self.objective == "time-to-reach":  # seconds, whichever way the metric goes
            return ["minimize"]
        return [self.direction]


def sweeps_root(runs_root: str | os.PathLike | None = None) -> Path:
    return rd.runs_root(runs_root) / SWEEPS_DIR


def sweep_dir(name: str, runs_root: str | os.PathLike | None = None) -> Path:
    return sweeps_root(runs_root) / name


def find_sweep(name: str | os.PathLike, runs_root: str | os.PathLike | None = None) -> Path:
    """A sweep given as a path or a name under <runs root>/sweeps."""
    for path in (Path(name).expanduser(), sweep_dir(str(name), runs_root)):
        if (path / SETTINGS_FILE).is_file():
            return path.resolve()
    raise SweepError(f"no sweep {str(name)!r}: not a sweep directory, and not a sweep in "
                     f"{sweeps_root(runs_root)} (see `ls {sweeps_root(runs_root)}`)")


def save_settings(settings: SweepSettings, directory: Path) -> None:
    rd.write_json_atomic(Path(directory) / SETTINGS_FILE, asdict(settings))


def load_settings(directory: Path) -> SweepSettings:
    path = Path(directory) / SETTINGS_FILE
    try:
        data = json.loads(path.read_text())
        return SweepSettings(**data)
    except (OSError, ValueError, TypeError) as e:
        raise SweepError(f"{path}: unreadable sweep settings ({e})") from None
