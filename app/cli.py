"""The `puffer-tui` command line: one module per subcommand in app/commands."""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys

from puffer_tui.app.services.run_service import closest_flag
from puffer_tui.app.terminal import no_terminal
from puffer_tui.engine.shared import exit_codes as ec

# subcommand -> its help line. Each is the module puffer_tui.app.commands.<name>; all are
# imported to build the parser, so each keeps its heavy imports inside its functions.
COMMANDS = {
    "envs": "Lists the environments with their spaces",
    "bench": "Measures env, vectorizer and training speed",
    "autotune": "Finds the fastest way to step an env here; --save writes it as a preset",
    "train": "Trains an agent (--headless for a plain progress display)",
    "eval": "Plays a trained policy and reports its score",
    "export": "Writes a trained policy as one ONNX or TorchScript file that runs without puffer-tui",
    "runs": "Lists the runs with their state, steps, best score and last checkpoint",
    "attach": "Opens the dashboard of a running engine (the latest if RUN is omitted)",
    "stop": "Stops a running engine (RUN, or --all) with a final checkpoint and says where",
    "serve": "Serves the app to a browser (textual-serve): the launcher or attach RUN",
    "sweep": "Searches hyperparameters with Optuna; each trial is an ordinary run",
}

ENV_FLAG = "--env."
SWEEP_FLAG = "--sweep."  # `sweep` search ranges: passed through like --env.X


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("puffer-tui")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed)"


class Parser(argparse.ArgumentParser):
    """A parser that takes flags only as spelled out: `--headles` is an error with a "did you
    mean" line, not silently `--headless`. Its subparsers (every command's, and theirs) are of
    this class too (argparse makes them of the parent's class). A refusal is one line, with
    the closest choice when there is one, not the usage block above it."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(ec.USAGE, f"{self.prog}: error: {parse_error_line(message, self.prog)}\n")


_INVALID_CHOICE = re.compile(r"^argument (?P<arg>[^:]+): invalid choice: '(?P<value>.*)' "
                             r"\(choose from (?P<choices>.*)\)$")
_NO_VALUE = re.compile(r"^argument (?P<arg>[^:]+): expected (?P<what>one argument|"
                       r"at least one argument|\d+ arguments?)$")


def parse_error_line(message: str, prog: str = "puffer-tui") -> str:
    """argparse's complaint as one line a person can act on: a misspelled choice names the
    closest one, a flag without its value says what it takes."""
    found = _INVALID_CHOICE.match(message)
    if found:
        value = found["value"]
        choices = [c.strip().strip("'") for c in found["choices"].split(",")]
        close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        if found["arg"] == "COMMAND":
            return (f"unknown command {value!r}{hint} (`{prog} --help` lists the commands: "
                    f"{', '.join(choices)})")
        return f"{found['arg']} {value!r} is not a choice{hint} (choose from {', '.join(choices)})"
    found = _NO_VALUE.match(message)
    if found:
        arg = found["arg"].split("/")[-1]
        return (f"{arg} needs a value: {arg} V, or {arg}=V for one that starts with '-' "
                f"(`{prog} --help` says what it takes)")
    return f"{message} (`{prog} --help` shows the usage)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="puffer-tui",
        description="Train reinforcement-learning agents fast and steer them from your terminal.",
        epilog=ec.help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"puffer-tui {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"puffer_tui.app.commands.{name}")
        module.add_parser(sub, name, help_text)
    return parser


def split_env_settings(argv: list[str]) -> tuple[list[str], list[str]]:
    """(argv without them, the `--env.NAME V` / `--env.NAME=V` tokens), wherever they stand:
    argparse alone would hand V to the ENV positional (`train --env.size 9 squared`)."""
    rest, settings = [], []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":  # everything after it is positional
            rest += argv[i:]
            break
        if token.startswith((ENV_FLAG, SWEEP_FLAG)):
            settings.append(token)
            if "=" not in token and i + 1 < len(argv):
                i += 1
                settings.append(argv[i])
        else:
            rest.append(token)
        i += 1
    return rest, settings


def unknown_argument_message(token: str, flags: list[str], prog: str = "puffer-tui") -> str:
    suggestion = closest_flag(token, flags) if token.startswith("-") else None
    hint = f"; did you mean {suggestion}?" if suggestion else ""
    section, dot, name = token.removeprefix("--").partition("=")[0].partition(".")
    if not suggestion and token.startswith("--") and dot and \
            any(f.startswith(f"--{section}.") for f in flags):
        # nothing close: say what is wrong, and where the section's flags are listed
        hint = f"; {section} has no field {name!r} (`{prog} --help` lists the --{section}.* flags)"
    return f"unrecognized argument {token!r}{hint}"


def _option_strings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The long flags of the (sub)command that was typed: `bench train`'s, not `bench`'s."""
    while parser._subparsers is not None:
        chosen = None
        for action in parser._subparsers._group_actions:  # the subcommand's own parser
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            break
        parser = chosen
    return [s for s in parser._option_string_actions if s.startswith("--")]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    argv, env_settings = split_env_settings(argv)
    args, extra = parser.parse_known_args(argv)
    prog = f"puffer-tui {args.command}" if args.command else "puffer-tui"
    if extra:
        flags = _option_strings(parser, args)
        if getattr(args, "accepts_extra", False):
            flags += getattr(args, "extra_flags", lambda: [])()
        print(f"{prog}: error: {unknown_argument_message(extra[0], flags, prog)}",
              file=sys.stderr)
        return ec.USAGE
    if env_settings and not getattr(args, "accepts_extra", False):
        print(f"{prog}: error: {env_settings[0].partition('=')[0]} is not an option of "
              f"`{prog}` (settings like it go to `puffer-tui train`)", file=sys.stderr)
        return ec.USAGE
    args.extra = env_settings
    if args.command is None:
        # No subcommand: the app's launcher (runs under $PUFFER_TUI_RUNS or ./runs).
        why = no_terminal()
        if why is not None:  # its escape codes would land in a file or pipe
            print(f"puffer-tui: error: {why}: the launcher needs one; `puffer-tui train ENV "
                  f"--headless` trains without it, `puffer-tui --help` lists the commands",
                  file=sys.stderr)
            return ec.USAGE
        # lazy: pulls textual, which this module does not load
        from puffer_tui.app.app import run_app

        return int(run_app() or 0)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:  # a verb that looks after a run turns Ctrl-C into its own code
        return ec.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
