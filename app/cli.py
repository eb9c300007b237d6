"""The `puffer-tui` command line: one module per subcommand in app/commands."""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> module in puffer_tui.app.commands (imported only when chosen, so `--help` is fast)
COMMANDS = {
    "envs": "Lists the environments with their spaces",
    "bench": "Measures env, vectorizer and training speed",
    "train": "Trains an agent (--headless for a plain progress display)",
    "eval": "Plays a trained policy and reports its score",
    "runs": "Lists the runs with their state, steps, best score and last checkpoint",
    "attach": "Opens the dashboard of a running engine (the latest if RUN is omitted)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="puffer-tui",
        description="Train reinforcement-learning agents fast and steer them from your terminal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"puffer_tui.app.commands.{name}")
        module.add_parser(sub, name, help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    # Commands that take free-form settings (--env.NAME V) get the unparsed rest as args.extra.
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    if args.command is None:
        # No subcommand: the app's launcher (runs under $PUFFER_TUI_RUNS or ./runs).
        from puffer_tui.app.app import run_app

        return int(run_app() or 0)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
