"""Declared environment settings: name, default, bounds and help, checked in one place.

Each env lists its settings once; the env constructor, the registry's error messages, the
engine's config schema and the app's editors all read that list.

Tested in: tests/engine/shared/test_field_rules.py, tests/engine/native/test_pufferenv.py"""

from __future__ import annotations

from dataclasses import dataclass


def number_text(x: float) -> str:
    """A bound as people read it: 1_000_000 for an int, 0.001 / 1e-08 for a float."""
    return f"{x:g}" if isinstance(x, float) else f"{x:,}".replace(",", "_")


def bounds_text(kind: type, low: float | None, high: float | None,
                choices: tuple | None = None) -> str:
    """What a field accepts: 'one of a, b', 'true or false', 'text', 'int in [1, 255]'."""
    if choices:
        return "one of " + ", ".join(map(str, choices))
    if kind is bool:
        return "true or false"
    if kind is str:
        return "text"
    low_text = "-inf" if low is None else number_text(low)
    high_text = "inf" if high is None else number_text(high)
    return f"{kind.__name__} in [{low_text}, {high_text}]"


def check_allowed(where: str, value, kind: type, low: float | None, high: float | None,
                  choices: tuple | None = None) -> None:
    """The rule env settings and config fields share: a value of the right type must be one of
    `choices` and within [low, high]; else ValueError naming `where` and what is accepted."""
    if choices and value not in choices:
        raise ValueError(f"{where}: {value!r} is not {bounds_text(kind, low, high, choices)}")
    if kind in (int, float) and (
            (low is not None and value < low) or (high is not None and value > high)):
        # 1e99 read as an int has 100 digits: show a huge number as people typed it
        shown = f"{float(value):g}" if abs(value) >= 1e15 else value
        raise ValueError(
            f"{where} = {shown} is out of bounds: {bounds_text(kind, low, high, choices)}")


@dataclass(frozen=True)
class Setting:
    name: str
    default: int | float | bool
    low: float | None = None
    high: float | None = None
    help: str = ""

    @property
    def type(self) -> type:
        return type(self.default)

    def bounds_text(self) -> str:
        return bounds_text(self.type, self.low, self.high)

    def check(self, owner: str, value):
        """The value converted to this setting's type, or ValueError naming field and bounds."""
        where = f"{owner}.{self.name}"
        if self.type is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{where} must be true or false, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where} must be a {self.type.__name__}, got {value!r}")
        if self.type is int and (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"{where} must be an integer, got {value!r}")
        value = self.type(value)
        check_allowed(where, value, self.type, self.low, self.high)
        return value


def resolve_settings(owner: str, declared: tuple[Setting, ...], given: dict) -> dict:
    """Defaults overridden by `given`, each checked; unknown names are an error listing the known."""
    known = {s.name: s for s in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        listing = ", ".join(f"{s.name} ({s.bounds_text()}, default {s.default})" for s in declared)
        raise ValueError(
            f"unknown setting{'s' if len(unknown) > 1 else ''} for {owner}: "
            f"{', '.join(unknown)}. Known settings: {listing or 'none'}"
        )
    return {s.name: s.check(owner, given.get(s.name, s.default)) for s in declared}
