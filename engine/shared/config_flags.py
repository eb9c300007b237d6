"""The configuration on the command line: a `--section.name` flag per field, and the
overrides a parsed command line gives (`--env.*` settings included)."""

from __future__ import annotations

from puffer_tui.engine.shared.config import TYPED_SECTIONS, ConfigError, section_specs


def add_arguments(parser) -> None:
    """Add a `--vec.*` / `--train.*` / `--eval.*` flag per field (text, parsed later)."""
    for section, cls in TYPED_SECTIONS.items():
        group = parser.add_argument_group(f"{section} settings")
        for spec in section_specs(section, cls):
            live = " [live]" if spec.live else ""
            group.add_argument(
                spec.flag, dest=spec.key, default=None, metavar="V",
                help=f"{spec.help}{live} (default {spec.default}; {spec.bounds_text()})",
            )
    parser.add_argument_group(
        "env settings", "--env.NAME V for the chosen env's settings (see `puffer-tui envs`)"
    )


def overrides_from_args(args, extra: list[str]) -> dict[str, str]:
    """`{"section.name": text}` from parsed `--vec.*`/`--train.*`/`--eval.*` flags and
    `--env.*` extras."""
    prefixes = tuple(f"{name}." for name in TYPED_SECTIONS)
    overrides = {
        key: value for key, value in vars(args).items()
        if key.startswith(prefixes) and value is not None
    }
    settings, others = take_flags(extra, "--env.", "a value")
    if others:
        raise ConfigError(f"unrecognized argument {others[0]!r}")
    overrides.update({f"env.{name}": value for name, value in settings.items()})
    return overrides


def take_flags(tokens: list[str], prefix: str, needs: str) -> tuple[dict[str, str], list[str]]:
    """The flags `PREFIXname=V` / `PREFIXname V` among `tokens` as {name: V} (dashes in the
    name read as underscores), and the other tokens in order; `needs` says what a flag
    without a value lacks."""
    values: dict[str, str] = {}
    others: list[str] = []
    rest = iter(tokens)
    for token in rest:
        if not token.startswith(prefix):
            others.append(token)
            continue
        name, eq, value = token[len(prefix):].partition("=")
        if not eq:
            value = next(rest, None)
            if value is None:
                raise ConfigError(f"{token} needs {needs}")
        values[name.replace("-", "_")] = value
    return values, others
