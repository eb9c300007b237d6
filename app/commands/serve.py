"""`puffer-tui serve [--port P] [--host H] [-- ARGS]`: the app in a browser, via textual-serve.

Each browser tab runs its own copy of the app, `puffer-tui ARGS`: the launcher (no ARGS) or
`attach [RUN]`, which link to engines that are already running like the terminal app does.
Opening a page starts no training, so other ARGS (`train ...`) are refused; start runs with
`puffer-tui train` or from the launcher, in the page or not. Closing a tab closes its app
(its engines go on training).

Private by default (app/serve_access.py): the page and its websocket need the token serve
prints as the URL to open (`--token` or $PUFFER_TUI_SERVE_TOKEN to choose it; `--no-token`
only with a warning each start), and another site's page is refused by its Origin. Serves
on 127.0.0.1 unless told otherwise; another host is served with a warning. A page may not
choose code to run (`module:callable` specs: app/serve_code_specs.py) unless serve was
started with --allow-code-specs. Needs the `web` extra (`pip install "puffer-tui[web]"`).
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import signal
import socket
import sys

from puffer_tui.app.commands.attach import choose_run, find_sweep
from puffer_tui.app.serve_access import (
    MIN_TOKEN_LENGTH,
    TOKEN_ENV_VAR,
    access_guard,
    new_token,
    page_context,
    private_headers,
    redact_logs,
    token_url,
)
from puffer_tui.app.serve_code_specs import ALLOW_FLAG, CODE_SPECS_ENV_VAR
from puffer_tui.engine.shared.run_dir import RUNS_ENV_VAR, RunDirError

INSTALL_HINT = 'pip install "puffer-tui[web]"'
APP_SUBCOMMANDS = ("attach",)  # what a page may run besides the launcher: nothing that trains
DEFAULT_PORT = 8000
SHUTDOWN_SECONDS = 3.0  # open pages get this long to hang up when serve is stopped


class ServeError(ValueError):
    """A serve that cannot start; the message names the problem and the fix."""


def add_parser(sub, name, help_text):
    p = sub.add_parser(
        name, help=help_text, description=help_text,
        epilog="examples: `puffer-tui serve` (the launcher), `puffer-tui serve --port 8080 -- "
               "attach RUN` (one run's dashboard); then open http://127.0.0.1:PORT")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="P",
                   help=f"port to serve on (default {DEFAULT_PORT})")
    p.add_argument("--host", default="127.0.0.1", metavar="H",
                   help="address to serve on (default 127.0.0.1, this machine only)")
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs live (default $PUFFER_TUI_RUNS or ./runs)")
    p.add_argument("--token", metavar="TOKEN",
                   help=f"the secret the page's URL carries (default: ${TOKEN_ENV_VAR}, else a "
                        f"new random one each start; the variable keeps it out of `ps`)")
    p.add_argument("--no-token", action="store_true",
                   help="serve without a token: every local user, and anyone who can reach "
                        "--host, can steer and stop runs (warns at each start)")
    p.add_argument(ALLOW_FLAG, action="store_true",
                   help="let a page start runs of MODULE:CALLABLE, pz:, gym:MODULE:ID specs "
                        "and env.import, which run that code as you (refused by default)")
    p.add_argument("app_args", nargs="*", metavar="ARGS",
                   help="after --: the app each page runs: nothing (the launcher) or attach [RUN]")
    p.set_defaults(run=run)


def app_command(app_args: list[str]) -> str:
    """The shell command textual-serve starts for each page: this Python's puffer-tui (exec:
    the app itself is the page's process, no shell between)."""
    return "exec " + shlex.join([sys.executable, "-m", "puffer_tui.app.cli", *app_args])


def check_app_args(app_args: list[str], runs_dir: str | None) -> None:
    """Refuse what a page must not run (training) and an attach that has nothing to show."""
    if not app_args:
        return
    if app_args[0] not in APP_SUBCOMMANDS:
        raise ServeError(
            f"a page may run the launcher (no ARGS) or `attach [RUN]`, not {app_args[0]!r}: "
            f"opening a page starts no training; start it with `puffer-tui train`, then "
            f"`puffer-tui serve -- attach RUN`")
    names = [a for a in app_args[1:] if not a.startswith("-")]
    if find_sweep(names[0] if names else None, runs_dir) is None:
        choose_run(names[0] if names else None, runs_dir)  # RunDirError: no such live run


def check_port(host: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise ServeError(f"--port {port} is not a port; use one in 1..65535 (e.g. 8000)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ServeError(f"--host {host}: cannot resolve it ({e}); use 127.0.0.1") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp will
        try:
            probe.bind(address)
        except OSError as e:
            raise ServeError(f"cannot serve on {host}:{port} ({e.strerror or e}); pick another "
                             f"with --port") from None


def choose_token(given: str | None, no_token: bool, environ=os.environ) -> str | None:
    """--token, else $PUFFER_TUI_SERVE_TOKEN, else a new random one; None with --no-token."""
    from_env = environ.get(TOKEN_ENV_VAR)
    if no_token:
        if given is not None:
            raise ServeError("--token and --no-token contradict each other; give one")
        return None
    token, source = (given, "--token") if given is not None else (from_env, f"${TOKEN_ENV_VAR}")
    if token is None:
        return new_token()
    if len(token) < MIN_TOKEN_LENGTH or not token.isprintable() or token != token.strip():
        raise ServeError(
            f"{source} must be at least {MIN_TOKEN_LENGTH} printable characters without "
            f"surrounding spaces (one that is guessed opens your runs to the guesser); e.g. "
            f"python -c 'import secrets; print(secrets.token_urlsafe())'")
    return token


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args) -> int:
    prog = "puffer-tui serve"
    try:
        token = choose_token(args.token, args.no_token)
        check_app_args(args.app_args, args.runs_dir)
        check_port(args.host, args.port)
        try:
            from textual_serve.server import Server
        except ImportError:
            raise ServeError(f"serving needs textual-serve: {INSTALL_HINT}") from None
    except (ServeError, RunDirError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    if args.runs_dir:  # the pages' apps (launcher or attach) look for runs there
        os.environ[RUNS_ENV_VAR] = os.path.abspath(args.runs_dir)
    os.environ.pop(TOKEN_ENV_VAR, None)  # the pages' apps need not know it
    if args.allow_code_specs:
        os.environ.pop(CODE_SPECS_ENV_VAR, None)
        print(f"{prog}: warning: {ALLOW_FLAG}: a page may start runs of any MODULE:CALLABLE "
              f"spec, which runs that code as you", file=sys.stderr)
    else:  # read by the pages' apps (app/serve_code_specs.py)
        os.environ[CODE_SPECS_ENV_VAR] = "1"
    if token is None:
        print(f"{prog}: warning: --no-token: every user of this machine"
              f"{'' if is_loopback(args.host) else ' and anyone who can reach ' + args.host} "
              f"can open the page and steer, stop and start runs as you", file=sys.stderr)
    if not is_loopback(args.host):
        print(f"{prog}: warning: serving on {args.host}: the token is the only guard (and "
              f"plain HTTP shows it to the network); whoever has the URL can steer and stop "
              f"runs", file=sys.stderr)
    command = app_command(args.app_args)
    title = "puffer-tui " + " ".join(args.app_args) if args.app_args else "puffer-tui"
    server = private_server(Server)(command, host=args.host, port=args.port, title=title)
    server.token = token
    server.serve()
    return 0


def private_server(server_class):
    """textual-serve's Server with the access checks of app/serve_access.py as middleware,
    the page's websocket on the host it was served from, the token URL printed on startup,
    and stopping within SHUTDOWN_SECONDS of Ctrl-C or SIGTERM (its own serve() leaves
    aiohttp's default, which waits up to 60 s for open pages to hang up)."""

    class PrivateServer(server_class):
        token: str | None = None

        async def _make_app(self):
            app = await super()._make_app()
            app.middlewares.append(access_guard(self.token, self.port))
            app.on_response_prepare.append(private_headers)
            return app

        def initialize_logging(self) -> None:
            super().initialize_logging()
            redact_logs(self.token)  # the access log names each URL, token and all

        async def handle_index(self, request):
            import aiohttp_jinja2

            return aiohttp_jinja2.render_template("app_index.html", request,
                                                  page_context(request, self.title))

        async def on_startup(self, app) -> None:
            # plain prints, one line each: a script or a test reads the URL from stdout
            print(f"puffer-tui serve: serving {self.title!r}; open this URL (Ctrl-C stops):",
                  flush=True)
            print(f"    {token_url(self.host, self.port, self.token)}", flush=True)

        def serve(self, debug: bool = False) -> None:
            import asyncio

            from aiohttp import web

            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False,
                        loop=loop, print=lambda *args: None, shutdown_timeout=SHUTDOWN_SECONDS)

    return PrivateServer


def main(argv: list[str] | None = None) -> int:
    """`python -m puffer_tui.app.commands.serve ...`, the same as `puffer-tui serve ...`."""
    import argparse

    parser = argparse.ArgumentParser(prog="puffer-tui")
    add_parser(parser.add_subparsers(), "serve", "Serves the app to a browser (textual-serve)")
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
