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
    i = 0
    while i < len(extra):
        token = extra[i]
        if not token.startswith("--env."):
            raise ConfigError(f"unrecognized argument {token!r}")
        key, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra):
                raise ConfigError(f"{token} needs a value")
            i += 1
            value = extra[i]
        overrides[key.replace("-", "_")] = value
        i += 1
    return overrides
