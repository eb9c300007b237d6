"""`puffer-tui serve` is private: the page, its files and its websocket need the token serve
printed; another site's page is refused by its Origin even with the token; another local
user gets nowhere."""

import json
import os
import secrets

import pytest
from serve_probe import free_port, http_get, raw_handshake, serving, ws_status

from puffer_tui.app.commands import serve

pytest.importorskip("textual_serve", reason="the web extra (textual-serve) is not installed")

TOKEN = "a-chosen-token-" + secrets.token_hex(8)


def test_without_the_token_the_page_its_files_and_its_websocket_are_refused(tmp_path):
    with serving(tmp_path, token=TOKEN) as served:
        for path in ("", "?fontsize=14", "static/js/textual.js", "static/", "download/x"):
            status, _, body = http_get(served.base + path)
            assert status == 403, path
            assert body.count("\n") == 1 and "open the URL `puffer-tui serve` printed" in body
        assert ws_status(served.base + "ws") == 403  # a script: no Origin, no token
        assert ws_status(served.base + "ws", origin=served.origin) == 403  # a page, no cookie


def test_a_wrong_token_is_refused_in_the_url_the_cookie_and_the_websocket(tmp_path):
    wrong = TOKEN[:-1] + ("x" if TOKEN[-1] != "x" else "y")
    with serving(tmp_path, token=TOKEN) as served:
        status, headers, body = http_get(served.base + f"?token={wrong}")
        assert status == 403 and "wrong token" in body and "Set-Cookie" not in headers
        assert http_get(served.base, cookie=f"puffer_tui_serve_{served.port}={wrong}")[0] == 403
        assert ws_status(served.base + f"ws?token={wrong}") == 403
        assert ws_status(served.base + "ws", origin=served.origin,
                         cookie=f"puffer_tui_serve_{served.port}={wrong}") == 403
        # the cookie of another serve on another port is not this one's
        assert ws_status(served.base + "ws", origin=served.origin,
                         cookie=f"puffer_tui_serve_{served.port + 1}={TOKEN}") == 403


def test_the_printed_url_lets_a_browser_in_through_a_cookie(tmp_path):
    with serving(tmp_path, token=TOKEN) as served:
        assert served.url == f"http://127.0.0.1:{served.port}/?token={TOKEN}", served.stdout
        status, headers, _ = http_get(served.url + "&fontsize=14")
        assert status == 303 and headers["Location"] == "/?fontsize=14"  # out of the history
        cookie = headers["Set-Cookie"]
        assert cookie.startswith(served.cookie + ";")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        status, headers, page = http_get(served.base + "?fontsize=14", cookie=served.cookie)
        assert status == 200 and f"ws://127.0.0.1:{served.port}/ws" in page
        assert headers["X-Frame-Options"] == "DENY"
        assert http_get(served.base + "static/js/textual.js", cookie=served.cookie)[0] == 200
        # the page's websocket (same Origin, the cookie) and a script's (?token=, no Origin)
        assert ws_status(served.base + "ws", origin=served.origin, cookie=served.cookie) == 101
        assert ws_status(served.base + f"ws?token={TOKEN}") == 101


def test_a_token_is_generated_each_start_when_none_is_chosen(tmp_path):
    with serving(tmp_path) as served:
        assert served.token and len(served.token) >= 40, served.stdout
        assert served.token not in " ".join(served.process.args)  # not in `ps`
        assert ws_status(served.base + f"ws?token={served.token}") == 101
        assert ws_status(served.base + "ws") == 403
    assert serve.choose_token(None, False, {}) != serve.choose_token(None, False, {})


@pytest.mark.parametrize("origin", [
    "http://evil.example.com", "null", "http://127.0.0.1:1", "https://127.0.0.1:{port}",
    "http://localhost:{port}"])
def test_another_sites_page_is_refused_even_with_the_token(tmp_path, origin):
    with serving(tmp_path, token=TOKEN) as served:
        origin = origin.format(port=served.port)
        assert ws_status(served.base + "ws", origin=origin, cookie=served.cookie) == 403
        assert ws_status(served.base + f"ws?token={TOKEN}", origin=origin) == 403
        status, _, body = http_get(served.base, origin=origin, cookie=served.cookie)
        assert status == 403 and "another site" in body


def test_another_local_user_is_refused(tmp_path):
    """A second user of the machine (uid 65534, through fork and setuid) reaches the port
    but not the token: not in serve's command line, its environment unreadable."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the probe as another uid (65534)")
    with serving(tmp_path, token=TOKEN) as served:
        seen = _as_other_user(lambda: _probe_as_stranger(served.process.pid, served.port))
    assert seen["uid"] == 65534, seen
    assert not seen["token_in_cmdline"] and seen["environ"] == "denied", seen
    assert seen["ws"] == 403 and seen["ws_same_origin"] == 403 and seen["ws_foreign"] == 403


def _probe_as_stranger(pid: int, port: int) -> dict:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read()
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = "read: token there" if TOKEN.encode() in f.read() else "read"
    except PermissionError:
        environ = "denied"
    return {"uid": os.getuid(), "token_in_cmdline": TOKEN.encode() in cmdline,
            "environ": environ, "ws": raw_handshake(port),
            "ws_same_origin": raw_handshake(port, origin=f"http://127.0.0.1:{port}"),
            "ws_foreign": raw_handshake(port, origin="http://evil.example.com")}


def _as_other_user(probe, uid: int = 65534) -> dict:
    """probe()'s JSON result, run in a forked child that is uid `uid` (no exec: the venv's
    Python may sit where that user cannot read)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only os, socket and json from here on, then _exit
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            result = probe()
        except BaseException as e:  # noqa: BLE001 -- the parent reports it
            result = {"error": repr(e)}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def test_no_token_serves_with_a_warning_and_still_checks_the_origin(tmp_path):
    with serving(tmp_path, flags=("--no-token",)) as served:
        assert http_get(served.base)[0] == 200
        assert ws_status(served.base + "ws", origin=served.origin) == 101
        assert ws_status(served.base + "ws", origin="http://evil.example.com") == 403
        assert any("warning: --no-token: every user of this machine" in line
                   for line in served.stderr), served.stderr


@pytest.mark.parametrize("argv, environ, message", [
    (["--token", "short"], {}, "--token must be at least 16 printable characters"),
    (["--token", TOKEN, "--no-token"], {}, "--token and --no-token contradict each other"),
    ([], {"PUFFER_TUI_SERVE_TOKEN": "short"}, "$PUFFER_TUI_SERVE_TOKEN must be at least 16"),
    (["--token", " " + TOKEN], {}, "without surrounding spaces"),
])
def test_a_bad_token_is_one_line_and_exit_2(argv, environ, message, monkeypatch, capsys):
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert serve.main(["--port", str(free_port()), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_token_comes_from_the_flag_then_the_environment():
    env = {"PUFFER_TUI_SERVE_TOKEN": "e" * 20}
    assert serve.choose_token("f" * 20, False, env) == "f" * 20
    assert serve.choose_token(None, False, env) == "e" * 20
    assert serve.choose_token(None, True, env) is None
