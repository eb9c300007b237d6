"""Search spaces: which config fields a sweep varies, and over what.

The defaults come from the schema itself (`search=` in engine/shared/config.py, next to each field's
bounds), so a field and its distribution cannot drift apart. A preset's `[sweep]` section and
then `--sweep.FIELD low,high[,log]` override them; `off` removes a field; a field fixed with
`--train.X V` is not searched. Choice and boolean fields take a list of values instead.

    space = build_space(config, preset_sweep, {"train.learning_rate": "1e-4,1e-2,log"})
    overrides = suggest(trial, space)      # {"train.learning_rate": 0.0031, ...}

Tested in: tests/engine/sweep/test_sweep_space.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from puffer_tui.engine.shared import config as cfg

# total_timesteps is searched by default only when the objective pays for wall-clock time:
# with a score-only objective the search would simply learn that more steps score higher.
COST_FIELDS = ("train.total_timesteps",)
OFF = ("off", "none", "false")


class SpaceError(cfg.ConfigError):
    """A search range that is malformed or outside its field's bounds; the text names both."""


@dataclass(frozen=True)
class Dimension:
    """One searched field: numeric [low, high] (log-scaled or not) or a list of choices."""

    key: str
    kind: str  # "int", "float" or "choice"
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple = ()

    def describe(self) -> str:
        if self.kind == "choice":
            return "{" + ", ".join(map(str, self.choices)) + "}"
        return f"[{self.low:g}, {self.high:g}]{' log' if self.log else ''}"

    def as_dict(self) -> dict:
        return {"key": self.key, "kind": self.kind, "low": self.low, "high": self.high,
                "log": self.log, "choices": list(self.choices)}

    @classmethod
    def from_dict(cls, data: dict) -> Dimension:
        return cls(data["key"], data["kind"], data.get("low"), data.get("high"),
                   bool(data.get("log")), tuple(data.get("choices") or ()))


def default_space(config: cfg.Config, include_cost: bool) -> dict[str, Dimension]:
    """The schema's default distributions for this config (relative ones scaled by its value)."""
    space = {}
    for spec in cfg.schema(config.env_name):
        if spec.search is None or (spec.key in COST_FIELDS and not include_cost):
            continue
        low, high, scale = spec.search
        if scale == "log-relative":
            value = getattr(getattr(config, spec.section), spec.name)
            low, high = low * value, high * value
        space[spec.key] = _numeric(spec, low, high, scale != "linear", spec.key)
    return space


def build_space(config: cfg.Config, preset: dict | None, flags: dict[str, str],
                include_cost: bool, fixed: tuple[str, ...] = ()) -> dict[str, Dimension]:
    """Defaults, then the preset's [sweep] section, then `--sweep.*` flags; fields in `fixed`
    (given a value with --train.X etc.) are left out. SpaceError names a bad range."""
    space = default_space(config, include_cost)
    for source, ranges in (("[sweep]", flatten_preset(preset or {})), ("--sweep", flags)):
        for field_name, value in ranges.items():
            spec = _spec(field_name, config.env_name, source)
            where = f"{source} {spec.key}" if source == "[sweep]" else f"--sweep.{spec.key}"
            dim = parse_range(spec, value, where)
            if dim is None:
                space.pop(spec.key, None)
            else:
                space[spec.key] = dim
    fixed_keys = {_spec(k, config.env_name, "override").key for k in fixed}
    space = {k: d for k, d in space.items() if k not in fixed_keys}
    if not space:
        raise SpaceError("nothing to search: every field is fixed or off; give a range with "
                         "--sweep.train.learning-rate 1e-4,1e-2,log (for example)")
    return space


def flatten_preset(section: dict) -> dict[str, Any]:
    """`[sweep]` as {"train.learning_rate": value}: nested tables ([sweep.train]) or dotted keys."""
    if not isinstance(section, dict):
        raise SpaceError("[sweep] must be a table of FIELD = [low, high] or [low, high, \"log\"]")
    flat = {}
    for key, value in section.items():
        if isinstance(value, dict):
            for name, inner in value.items():
                flat[f"{key}.{name}"] = inner
        else:
            flat[key] = value
    return flat


def _spec(name: str, env_name: str, source: str) -> cfg.FieldSpec:
    key = name if "." in name else f"train.{name}"  # a bare name means a train field
    try:
        return cfg.spec_for(key, env_name)
    except cfg.ConfigError as e:
        raise SpaceError(f"{source}: {e}") from None


def parse_range(spec: cfg.FieldSpec, value: Any, where: str) -> Dimension | None:
    """A Dimension from `low,high[,log]` text, a TOML list, or `off` (None)."""
    if isinstance(value, bool) and not value or (isinstance(value, str)
                                                 and value.strip().lower() in OFF):
        return None
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise SpaceError(f"{where}: expected low,high[,log], got {value!r}")
    if spec.choices or spec.type in (bool, str):
        return _choices(spec, items, where)
    scale = "linear"
    if len(items) == 3:
        scale = str(items[2]).strip().lower()
        if scale not in ("log", "linear"):
            raise SpaceError(f"{where}: the third part must be log or linear, got {items[2]!r}")
    elif len(items) != 2:
        raise SpaceError(f"{where}: expected low,high[,log], got {value!r}")
    try:
        low, high = (float(str(v).replace("_", "")) for v in items[:2])
    except ValueError:
        raise SpaceError(f"{where}: {items[0]!r}, {items[1]!r} are not numbers") from None
    return _numeric(spec, low, high, scale == "log", where)


def _numeric(spec: cfg.FieldSpec, low: float, high: float, log: bool, where: str) -> Dimension:
    bounds = spec.bounds_text()
    if spec.type not in (int, float):
        raise SpaceError(f"{where}: a {spec.type.__name__} field takes a list of values")
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise SpaceError(f"{where}: low {low:g} must be below high {high:g} ({bounds})")
    if (spec.low is not None and low < spec.low) or (spec.high is not None and high > spec.high):
        raise SpaceError(f"{where}: [{low:g}, {high:g}] leaves the field's bounds ({bounds})")
    if log and low <= 0:
        raise SpaceError(f"{where}: a log range needs low > 0, got {low:g} ({bounds})")
    if spec.type is int:
        low, high = math.ceil(low), math.floor(high)
        if low >= high:
            raise SpaceError(f"{where}: no two integers in the range ({bounds})")
        return Dimension(spec.key, "int", int(low), int(high), log)
    return Dimension(spec.key, "float", float(low), float(high), log)


def _choices(spec: cfg.FieldSpec, items, where: str) -> Dimension:
    values = []
    for item in items:
        try:
            values.append(spec.coerce(item))
        except cfg.ConfigError as e:
            raise SpaceError(f"{where}: {e}") from None
    if len(set(values)) < 2:
        raise SpaceError(f"{where}: give at least two different values "
                         f"({spec.bounds_text()})")
    return Dimension(spec.key, "choice", choices=tuple(dict.fromkeys(values)))


def distributions(space: dict[str, Dimension]) -> dict:
    """Optuna distributions keyed by field key (for `study.ask(fixed_distributions=...)`)."""
    import optuna.distributions as od

    out = {}
    for key, d in space.items():
        if d.kind == "choice":
            out[key] = od.CategoricalDistribution(list(d.choices))
        elif d.kind == "int":
            out[key] = od.IntDistribution(int(d.low), int(d.high), log=d.log)
        else:
            out[key] = od.FloatDistribution(d.low, d.high, log=d.log)
    return out


def space_to_json(space: dict[str, Dimension]) -> list[dict]:
    return [d.as_dict() for d in space.values()]


def space_from_json(data: list[dict]) -> dict[str, Dimension]:
    return {d["key"]: Dimension.from_dict(d) for d in data}
