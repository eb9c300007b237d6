"""`puffer-tui autotune ENV`: the fastest way to step one env on this machine, within a budget.

Three phases share `seconds` of wall time (the process's start, torch's import and the
start-ups of workers and trainers included, so the whole run is bounded):
1. the serial layout of the env's configured envs: its step cost (µs per agent-step) and the
   memory each env adds;
2. every other layout that fits the cores and memory, timed through the real vec env;
3. a short `bench train`-like timing (the real Trainer: inference, learning and all) of the
   best few layouts, always with serial among them, in two rounds taken in turn when time
   allows, each layout's rate the 75th percentile of its epochs' (a busy machine's bursts of
   load slow some epochs): the number training feels.
The best is the fastest in phase 3 (phase 2 when no layout could be trained in time), or
serial when nothing beats it by 10%.

Tested in: tests/benchmarks/test_autotune.py (how it picks the best, end to end)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from puffer_tui.benchmarks.autotune_layouts import (
    Layout,
    candidate_layouts,
    config_error_text,
    layout_config,
    memory_shortfall,
    time_vec,
)
from puffer_tui.engine.shared.config import ConfigError, _toml_value
from puffer_tui.engine.startup.memory_estimate import available_memory, format_bytes

VEC_SHARE = 0.45  # of the budget, for phases 1 and 2; phase 3 gets the rest
MIN_MEASURE = 0.1  # seconds: the least a layout is counted, however small the budget
TRAINED = 3  # layouts timed in phase 3
ROUNDS = 2  # training timings of each, taken in turn, so a drift in the load hits all alike
TRAIN_PERCENTILE = 75  # of a layout's epoch rates: what it does when others' load lets it
#                        (bursts of load elsewhere slow some epochs; one lucky one is no rate)
SERIAL_MARGIN = 1.10  # another layout must be this much faster than serial to be chosen
FIRST_STARTUP_GUESS = 1.0  # seconds to start workers, until one start-up was measured
TRAINER_BUILD_GUESS = 1.5  # seconds to build a Trainer and close it (policy, buffers, first
#                            learn's allocations), until one was measured


@dataclass
class Row:
    layout: Layout
    vec_sps: float | None = None
    train_sps: float | None = None
    startup: float | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {**self.layout.vec_settings(), "label": self.layout.label,
                "vec_sps": self.vec_sps, "train_sps": self.train_sps, "note": self.note}


@dataclass
class Outcome:
    env: str
    cores: int
    seconds: float = 0.0
    us_per_step: float | None = None
    bytes_per_env: float | None = None
    rows: list[Row] = field(default_factory=list)
    best: Row | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def best_by(self) -> str:
        return "training" if self.best and self.best.train_sps else "vec"

    def as_dict(self) -> dict:
        return {"env": self.env, "cores": self.cores, "seconds": self.seconds,
                "us_per_agent_step": self.us_per_step, "bytes_per_env": self.bytes_per_env,
                "layouts": [r.as_dict() for r in self.rows],
                "best": self.best.as_dict() if self.best else None, "best_by": self.best_by,
                "notes": self.notes}


class _Clock:
    def __init__(self, seconds: float):
        self.start = time.perf_counter()
        self.seconds = seconds

    def left(self, share: float) -> float:
        return self.start + share * self.seconds - time.perf_counter()


def autotune(env_spec: str, overrides: dict, seconds: float, totals: list[int], cores: int,
             progress=lambda text="", advance=0, total=None: None, spent: float = 0.0) -> Outcome:
    """Measure every layout of `totals` envs in `seconds` (of which `spent` are gone already:
    the process's start); `progress(text, advance, total)` follows along (total: the number
    of steps, each layout timed and each training timing one)."""
    begun = time.perf_counter() - spent
    # imported first, not inside a layout's slot (lazy: it pulls gymnasium, torch, the
    # policy, the vectorizer, which this module does not load). The trainer's optimizer
    # (engine/algo/optimizers.py FusedAdam) no longer imports torch._dynamo on its first step.
    from puffer_tui.engine.algo import trainer  # noqa: F401

    clock = _Clock(max(0.0, seconds - (time.perf_counter() - begun)))  # the phases share the rest

    out = Outcome(env_spec, cores)
    out.rows = [Row(layout) for layout in candidate_layouts(totals, cores)]
    available = available_memory()
    progress(total=len(out.rows) + min(TRAINED, len(out.rows)))
    _time_layouts(out, env_spec, overrides, clock, available, progress)
    _time_training(out, env_spec, overrides, clock, progress)
    out.best = choose_best(out.rows)
    out.seconds = time.perf_counter() - begun
    return out


def check_totals(env_spec: str, overrides: dict, totals: list[int]) -> None:
    """ConfigError naming the first total of envs these settings cannot train with (e.g. a
    batch smaller than the minibatch), before anything is measured."""
    for total in totals:
        try:
            layout_config(env_spec, overrides, Layout("serial", total))
        except ConfigError as e:
            raise ConfigError(f"--num-envs {total}: {e}") from None


def choose_best(rows: list[Row]) -> Row | None:
    """The fastest in training (in stepping when none was trained), but serial unless the
    other beats it by SERIAL_MARGIN: fewer processes, and a lead within the noise is none."""
    measured = [r for r in rows if r.train_sps] or [r for r in rows if r.vec_sps]
    if not measured:
        return None
    rate = (lambda r: r.train_sps) if measured[0].train_sps else (lambda r: r.vec_sps)
    best = max(measured, key=rate)
    serial = max((r for r in measured if r.layout.backend == "serial"), key=rate, default=None)
    if serial is not None and rate(best) < SERIAL_MARGIN * rate(serial):
        return serial
    return best


def _time_layouts(out: Outcome, env_spec, overrides, clock, available, progress) -> None:
    startup = {"serial": 0.0, "multiprocessing": FIRST_STARTUP_GUESS}
    for i, row in enumerate(out.rows):
        progress(f"vec: {row.layout.label}")
        try:
            config = layout_config(env_spec, overrides, row.layout)
            short = memory_shortfall(config, out.bytes_per_env or 0.0, available)
            if short:
                row.note = f"skipped: {short}"
                continue
            left = clock.left(VEC_SHARE)
            if i and left < startup[row.layout.backend] + MIN_MEASURE:  # serial always runs
                row.note = "skipped: no time left (raise --seconds)"
                continue
            slot = left / (len(out.rows) - i)
            timing = time_vec(config, max(MIN_MEASURE, slot - startup[row.layout.backend]))
        except Exception as e:  # one layout that fails must not end the whole tuning
            row.note = f"failed: {config_error_text(e)}"
            continue
        finally:
            progress("", advance=1)
        row.vec_sps, row.startup = timing.sps, timing.startup
        startup[row.layout.backend] = timing.startup
        if timing.bytes_per_env is not None and out.us_per_step is None:
            out.us_per_step = 1e6 / timing.sps
            out.bytes_per_env = timing.bytes_per_env


def training_candidates(rows: list[Row], count: int = TRAINED) -> list[Row]:
    """Up to `count` layouts, one of each mode (serial, synchronous workers, overlapped
    workers: the fastest of each by vec agent-steps/s), the fastest first, serial next. Vec
    timing cannot show what overlapping gains (inference while the other half steps) nor
    what serial gains (every core for torch): only training can, so each mode gets its turn."""
    def mode(row: Row) -> str:
        layout = row.layout
        return "serial" if layout.backend == "serial" else (
            "overlapped" if layout.overlapped else "sync")

    ranked = sorted((r for r in rows if r.vec_sps), key=lambda r: -r.vec_sps)
    best_of = {}
    for row in ranked:
        best_of.setdefault(mode(row), row)
    chosen = list(best_of.values())  # fastest first
    if "serial" in best_of and chosen[0] is not best_of["serial"]:
        chosen.remove(best_of["serial"])
        chosen.insert(1, best_of["serial"])
    return chosen[:count]


def _time_training(out: Outcome, env_spec, overrides, clock, progress) -> None:
    import warnings

    budget = {**overrides, "train.total_timesteps": 10**12}  # never ends while measured
    plans = []
    for row in training_candidates(out.rows):
        try:
            config = layout_config(env_spec, budget, row.layout)
        except Exception as e:
            row.note = f"training failed: {config_error_text(e)}"
            continue
        batch = config.train.batch_size or config.vec.num_envs * config.train.horizon
        plans.append((row, config, batch))
    # as many as the time left can train, in priority order, in as many rounds as fit; one
    # layout alone compares nothing
    rounds = ROUNDS
    while len(plans) > 1 and clock.left(1.0) / (len(plans) * rounds) < max(
            _first_cost(row, batch) for row, _, batch in plans) + MIN_MEASURE:
        if rounds > 1:
            rounds -= 1
        else:
            plans.pop()
    if len(plans) < 2:
        out.notes.append("no time left to time training: best by vec agent-steps/s "
                         "(raise --seconds)")
        return
    progress(total=len(out.rows) + len(plans) * rounds)
    rates: dict[int, list[float]] = {id(row): [] for row, _, _ in plans}  # epochs' rates
    overhead: dict[str, float] = {}  # a Trainer's build, warm-up and close, by backend
    todo = [plan for _ in range(rounds) for plan in plans]  # in turn: A B C A B C
    for i, (row, config, batch) in enumerate(todo):
        progress(f"training: {row.layout.label}")
        epoch = batch / (row.train_sps or row.vec_sps / 3)
        known = overhead.get(row.layout.backend)
        cost = known + epoch if known is not None else _first_cost(row, batch)
        seconds = clock.left(1.0) / (len(todo) - i) - cost  # the counting ends with an epoch
        try:
            if seconds < MIN_MEASURE:
                if not row.train_sps:
                    row.note = "no time to train (raise --seconds)"
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # workers > cores, on purpose
                epoch_rates, counted = _train_epochs(config, seconds)
            overhead[row.layout.backend] = time.perf_counter() - start - counted
            rates[id(row)] += epoch_rates
            row.train_sps = float(np.percentile(rates[id(row)], TRAIN_PERCENTILE))
        except Exception as e:
            row.note = f"training failed: {config_error_text(e)}"
        finally:
            progress("", advance=1)


def _train_epochs(config, seconds: float) -> tuple[list[float], float]:
    """(agent-steps/s of each epoch, seconds counted) of the real Trainer of `config`, after
    a warm-up epoch, until `seconds` are counted (at least one epoch)."""
    # lazy: pulls gymnasium, torch, the trainer, the policy, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.trainer import Trainer

    rates, counted = [], 0.0
    with Trainer(config) as trainer:
        trainer.run_epoch()  # allocation and warm-up: not counted
        while counted < seconds:
            step, start = trainer.global_step, time.perf_counter()
            trainer.run_epoch()
            took = time.perf_counter() - start
            rates.append((trainer.global_step - step) / took)
            counted += took
    return rates, counted


def _first_cost(row: Row, batch: int) -> float:
    """Seconds a Trainer of `row` takes besides its counted time, guessed before any was
    measured: the vec start-up, a warm-up epoch, one epoch past the count, and its build
    (learning guessed to cost twice the collection)."""
    return (row.startup or 0.0) + 2 * batch / (row.vec_sps / 3) + TRAINER_BUILD_GUESS


def preset_text(out: Outcome, settings: dict) -> str:
    """The best layout as a preset for `puffer-tui train ENV --preset FILE`: env_name, the
    [env] and [train] values it was measured with (`settings`: {"env.size": 9, ...}, those
    given as flags; a smaller batch may need its minibatch size) and its [vec] table."""
    best = out.best
    figure = best.train_sps if out.best_by == "training" else best.vec_sps
    serial = next((r for r in out.rows if r.layout.backend == "serial"), None)
    serial_figure = None if serial is None or serial is best else (
        serial.train_sps if out.best_by == "training" else serial.vec_sps)
    lines = [f"# puffer-tui autotune {out.env} on {out.cores} cores, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"# best by {out.best_by} agent-steps/s: {best.layout.label}: {figure:,.0f}"
             + (f" (serial {serial_figure:,.0f})" if serial_figure else ""),
             f"env_name = {_toml_value(out.env)}"]
    tables = {"env": {}, "train": {}}
    for key, value in settings.items():
        section, name = key.split(".", 1)
        if section in tables:
            tables[section][name] = value
    tables["vec"] = best.layout.vec_settings()
    for section in ("env", "vec", "train"):
        if tables[section]:
            lines += ["", f"[{section}]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in tables[section].items()]
    return "\n".join(lines) + "\n"


def print_report(out: Outcome, console) -> None:
    from rich.table import Table

    if out.us_per_step is not None:
        console.print(f"{out.env}: one agent-step costs {out.us_per_step:.3f} µs serially; "
                      f"each env holds ~{format_bytes(out.bytes_per_env or 0)} of memory")
    serial = next((r.vec_sps for r in out.rows if r.layout.backend == "serial" and r.vec_sps),
                  None)
    table = Table(title=f"autotune {out.env}: {out.cores} cores, {out.seconds:.0f} s "
                        f"(agent-steps/s)")
    for name, justify in (("layout", "left"), ("vec", "right"), ("x serial", "right"),
                          ("training", "right"), ("note", "left")):
        table.add_column(name, justify=justify)
    for r in out.rows:
        note = "best" if r is out.best else r.note
        table.add_row(r.layout.label, f"{r.vec_sps:,.0f}" if r.vec_sps else "-",
                      f"{r.vec_sps / serial:.2f}" if r.vec_sps and serial else "-",
                      f"{r.train_sps:,.0f}" if r.train_sps else "-", note)
    console.print(table)
    console.print("vec: the vec env stepped alone (best of a few windows); training: the real "
                  f"Trainer (the {TRAIN_PERCENTILE}th percentile of its epochs' rates)")
    for note in out.notes:
        console.print(note)
