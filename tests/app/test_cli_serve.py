"""`puffer-tui serve`: textual-serve's page over HTTP, the refusals before serving, and the
dashboard of a live run in a real headless browser (skipped where there is no chromium)."""

import os
import signal
import socket
import subprocess
import sys

import pytest
from browser_screenshot import find_browser, screenshot_live_page
from engine_harness import kill_engine, make_run, wait_until
from serve_probe import free_port, http_get, serving

from puffer_tui.app.commands import serve
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import RunState

pytest.importorskip("textual_serve", reason="the web extra (textual-serve) is not installed")


def test_serve_answers_with_textuals_page_and_stops_cleanly(tmp_path):
    with serving(tmp_path) as served:
        status, _, page = http_get(served.base, cookie=served.cookie)
        assert status == 200
        assert "textual.js" in page and 'class="textual-terminal"' in page
        assert f"ws://127.0.0.1:{served.port}/ws" in page
        assert "puffer-tui" in page  # the page's title: the app it runs


@pytest.mark.parametrize("argv, message", [
    (["--", "train", "squared"], "not 'train': opening a page starts no training"),
    (["--port", "70000"], "--port 70000 is not a port"),
    (["--host", "no.such.host.invalid"], "--host no.such.host.invalid: cannot resolve it"),
])
def test_what_cannot_be_served_is_one_line_and_exit_2(argv, message, capsys):
    assert serve.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_attach_to_no_live_run_is_refused_before_serving(tmp_path, capsys):
    assert serve.main(["--runs-dir", str(tmp_path), "--", "attach"]) == 2
    assert f"no runs in {tmp_path}" in capsys.readouterr().err
    assert serve.main(["--runs-dir", str(tmp_path), "--", "attach", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_port_in_use_is_refused(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert serve.main(["--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


def test_without_textual_serve_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert serve.main(["--port", str(free_port())]) == 2
    assert 'pip install "puffer-tui[web]"' in capsys.readouterr().err


def test_the_page_runs_this_pythons_app_with_the_args():
    command = serve.app_command(["attach", "my run"])
    assert command.startswith(f"exec {sys.executable} -m puffer_tui.app.cli")
    assert command.endswith("attach 'my run'")
    assert serve.is_loopback("127.0.0.1") and serve.is_loopback("localhost")
    assert not serve.is_loopback("0.0.0.0")


def test_a_browser_shows_the_live_dashboard_of_a_running_engine(tmp_path):
    if find_browser() is None:
        pytest.skip("no headless browser to drive (chromium, chromium-browser, google-chrome); "
                    "on Debian: apt-get install chromium")
    pytest.importorskip("aiohttp", reason="aiohttp (the web extra) drives the browser")
    psutil = pytest.importorskip("psutil")
    run = make_run(tmp_path, **{"train.total_timesteps": 10**9})
    engine = subprocess.Popen([sys.executable, "-m", "puffer_tui.engine", str(run)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_until(lambda: rd.run_state(run) == RunState.RUNNING, 120, 0.2, "the engine")
        with serving(tmp_path, "attach", run.name) as served:
            server = served.process
            apps = []

            def stop_serving_with_the_page_open():
                apps.extend(p for p in psutil.Process(server.pid).children(recursive=True)
                            if "attach" in _cmdline(p))  # the page's app, a child of serve
                server.send_signal(signal.SIGTERM)
                server.wait(60)

            # the URL serve printed: its token lets the browser in (a cookie from then on)
            png = screenshot_live_page(served.url + "&fontsize=14", 1280, 800, timeout=120,
                                       while_open=stop_serving_with_the_page_open)
            assert apps, "no app process was started for the page"
            assert server.returncode == 0
            assert not psutil.wait_procs(apps, timeout=10)[1], "the page's app outlived serve"
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        (tmp_path / "dashboard.png").write_bytes(png)
        if os.environ.get("PUFFER_TUI_SCREENSHOT"):  # keep it to look at
            with open(os.environ["PUFFER_TUI_SCREENSHOT"], "wb") as out:
                out.write(png)
        assert rd.run_state(run) == RunState.RUNNING  # the page detached; training goes on
    finally:
        engine.send_signal(signal.SIGTERM)
        try:
            engine.wait(60)
        except subprocess.TimeoutExpired:
            kill_engine(run)
            engine.wait(10)


def _cmdline(process) -> list[str]:
    import psutil

    try:
        return process.cmdline()
    except psutil.Error:  # gone meanwhile
        return []


def test_puffer_tui_serve_passes_the_args_after_double_dash(tmp_path, capsys):
    from puffer_tui.app.cli import main

    assert main(["serve", "--runs-dir", str(tmp_path), "--", "train", "squared",
                 "--env.size", "9"]) == 2
    assert "not 'train'" in capsys.readouterr().err
    assert main(["serve", "--runs-dir", str(tmp_path), "--", "attach"]) == 2
    assert f"no runs in {tmp_path}" in capsys.readouterr().err
