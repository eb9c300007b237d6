"""Declared environment settings: name, default, bounds and help, checked in one place.

Each env lists its settings once; the env constructor, the registry's error messages, the
engine's config schema and the app's editors all read that list.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        if self.type is bool:
            return "true or false"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"{self.type.__name__} in [{low}, {high}]"

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
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise ValueError(f"{where} = {value} is out of bounds: {self.bounds_text()}")
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
