"""A `puffer-tui serve` to test against, and small probes of its page and websocket.

    with serving(tmp_path, token=TOKEN) as served:     # or no token: read from its stdout
        ws_status(served.base + "ws", origin=served.origin, cookie=served.cookie)   # 101

The HTTP and websocket probes use aiohttp's client (a dependency of textual-serve);
`raw_handshake` uses only a socket, for a process that has just changed its uid.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from engine_harness import wait_until

TOKEN_ENV_VAR = "PUFFER_TUI_SERVE_TOKEN"
URL_LINE = re.compile(r"^\s+(http://\S+/\?token=(\S+))$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    process: subprocess.Popen
    port: int
    stdout: list = field(default_factory=list)
    stderr: list = field(default_factory=list)
    url: str | None = None  # the URL serve printed to open
    token: str | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cookie(self) -> str:
        return f"puffer_tui_serve_{self.port}={self.token}"


def _drain(stream, lines: list) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


@contextlib.contextmanager
def serving(runs_dir, *app_args, flags=(), token: str | None = None, cwd=None):
    """`serve` on a free loopback port until the block ends (`token` through the environment
    variable, else the one it generates, read from the URL it prints); then it and every app
    process it started must be gone."""
    import psutil

    port = free_port()
    env = dict(os.environ)
    env.pop(TOKEN_ENV_VAR, None)
    if token is not None:
        env[TOKEN_ENV_VAR] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "puffer_tui.app.commands.serve", "--port", str(port),
         "--runs-dir", str(runs_dir), *flags, *(["--", *app_args] if app_args else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    served = Served(process, port)
    for stream, lines in ((process.stdout, served.stdout), (process.stderr, served.stderr)):
        threading.Thread(target=_drain, args=(stream, lines), daemon=True).start()
    started = []
    try:
        wait_until(lambda: process.poll() is not None or _answers(served.base), 60, 0.2,
                   "the server")
        assert process.poll() is None, "\n".join(served.stderr)
        found = [URL_LINE.match(line) for line in served.stdout]
        found = [m for m in found if m]
        if found:
            served.url, served.token = found[0].group(1), found[0].group(2)
        yield served
        if process.poll() is None:  # the block may have stopped it itself
            started.extend(psutil.Process(process.pid).children(recursive=True))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        _, alive = psutil.wait_procs(started, timeout=10)
        for child in alive:
            child.kill()
    assert code == 0, f"serve exited {code}: {served.stderr}"
    assert not alive, f"app processes left behind: {[p.pid for p in alive]}"


def _answers(url: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(url.split(":")[2].rstrip("/"))), 1):
            return True
    except OSError:
        return False


def _headers(origin: str | None, cookie: str | None) -> dict:
    headers = {}
    if origin is not None:
        headers["Origin"] = origin
    if cookie is not None:
        headers["Cookie"] = cookie
    return headers


def http_get(url: str, origin: str | None = None, cookie: str | None = None):
    """(status, headers, body) of one GET, redirects not followed."""
    import aiohttp

    async def get():
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http, \
                http.get(url, headers=_headers(origin, cookie), allow_redirects=False,
                         timeout=aiohttp.ClientTimeout(total=10)) as reply:
            return reply.status, reply.headers, await reply.text()

    return asyncio.run(get())


def ws_status(url: str, origin: str | None = None, cookie: str | None = None) -> int:
    """101 when the websocket opened (then closed at once), else the refusal's status."""
    import aiohttp

    async def connect():
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            try:
                async with http.ws_connect(url, origin=origin, headers=_headers(None, cookie),
                                           timeout=aiohttp.ClientWSTimeout(ws_close=5)):
                    return 101
            except aiohttp.WSServerHandshakeError as e:
                return e.status

    return asyncio.run(connect())


async def type_into_page(url: str, origin: str, cookie: str, wait_for: bytes, keys: list,
                         timeout: float = 90.0) -> bytes:
    """Open the page's websocket, wait until the app's output contains `wait_for` and the
    app has gone quiet, send `keys` (terminal input, one message each, a moment apart; bytes: wait until the
    app shows them; ("click", TEXT): click where TEXT was drawn), then
    read a few seconds more; the app's output after the keys."""
    import aiohttp

    seen = b""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http, http.ws_connect(
            url + "?width=120&height=40", origin=origin, headers={"Cookie": cookie}) as ws:
        await ws.send_json(["resize", {"width": 120, "height": 40}])
        while wait_for not in seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the page never showed {wait_for!r}")
            try:
                message = await ws.receive(timeout=left)
            except TimeoutError:
                continue
            if message.type == aiohttp.WSMsgType.BINARY:
                seen += message.data
            elif message.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"the page closed: {message.type}")
        # the app's mount is over: focus is settled
        screen, seen = seen + await _until_quiet(ws, 1.0, deadline), b""
        for key in keys:  # one message per key, as a browser sends them
            if isinstance(key, bytes):  # the app has shown what the keys so far asked for
                await _until_shown(ws, key, deadline)
                continue
            if isinstance(key, tuple):  # ("click", TEXT): a mouse click where TEXT was drawn
                row, column = drawn_at(screen, key[1])
                for end in "Mm":  # SGR mouse report: press, release
                    await ws.send_json(["stdin", f"\x1b[<0;{column + 1};{row}{end}"])
                continue
            await ws.send_json(["stdin", key])
            await asyncio.sleep(0.1)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            with contextlib.suppress(TimeoutError):
                message = await ws.receive(timeout=end - time.monotonic())
                if message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
    return seen


async def _until_quiet(ws, quiet: float, deadline: float) -> bytes:
    """The app's output until it has written nothing for `quiet` seconds."""
    import aiohttp

    output = b""
    while time.monotonic() < deadline:
        try:
            message = await ws.receive(timeout=quiet)
        except TimeoutError:
            break
        if message.type == aiohttp.WSMsgType.BINARY:
            output += message.data
    return output


def drawn_at(output: bytes, text: bytes) -> tuple[int, int]:
    """(row, column), 1-based, where the app's output last drew `text`: the last cursor move
    before it plus the characters drawn between (style codes skipped)."""
    at = output.rfind(text)
    moves = list(re.finditer(rb"\x1b\[(\d+);(\d+)H", output[:at]))
    if at < 0 or not moves:
        raise LookupError(f"{text!r} was not drawn")
    between = re.sub(rb"\x1b\[[0-9;]*m", b"", output[moves[-1].end():at])
    return int(moves[-1].group(1)), int(moves[-1].group(2)) + len(between.decode())


async def _until_shown(ws, text: bytes, deadline: float) -> None:
    import aiohttp

    shown = b""
    while text not in shown:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page never showed {text!r}")
        with contextlib.suppress(TimeoutError):
            message = await ws.receive(timeout=1.0)
            if message.type == aiohttp.WSMsgType.BINARY:
                shown += message.data


def raw_handshake(port: int, path: str = "/ws", origin: str | None = None) -> int:
    """The status of a websocket handshake over a bare socket (no event loop, no imports:
    safe in a forked child that has changed its uid)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = s.makefile("rb").readline().decode()
    return int(status_line.split()[1])
