"""A served page (`puffer-tui serve`) in headless chromium: a Tab pressed in the launcher and
the characters typed right behind it all reach the field the Tab focused. Before PufferApp's
priority tab binding (tests/screens/test_tab_order.py has the cause) the env list ate the first of
them: "a lone Tab takes effect only with the next key". The keys go through the browser as a
person's do (DevTools key events, xterm.js, textual.js's websocket, textual-serve)."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import threading
import time

import pytest
from browser_screenshot import (
    FIRST_BYTE_JS,
    DevTools,
    _devtools_url,
    find_browser,
    start_chromium,
    stop_chromium,
)
from serve_probe import serving

pytest.importorskip("textual_serve", reason="the web extra (textual-serve) is not installed")
pytest.importorskip("aiohttp", reason="aiohttp (the web extra) drives the browser")

SPEC = "gym:CartPole-v1"
# before the page's own script: keep what its websocket receives, as text
SPY = """(() => {
  const Real = window.WebSocket;
  window.__received = [];
  window.WebSocket = function (...args) {
    const ws = new Real(...args);
    ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      const keep = (b) => window.__received.push(new TextDecoder().decode(b));
      e.data instanceof Blob ? e.data.arrayBuffer().then(keep) : keep(e.data);
    });
    return ws;
  };
  Object.assign(window.WebSocket, Real);
  window.WebSocket.prototype = Real.prototype;
})()"""
SGR = re.compile(r"\x1b\[[0-9;]*m")


def key_events(key: str) -> list[dict]:
    """The DevTools events of one key press: Tab by its code, a character by its text."""
    if key == "\t":
        down = {"type": "rawKeyDown", "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}
        up = {"type": "keyUp", "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}
    else:
        down, up = {"type": "keyDown", "key": key, "text": key}, {"type": "keyUp", "key": key}
    return [down, up]


async def burst(tools: DevTools, keys: str) -> None:
    """Every key event sent before any reply is read: pressed as fast as the page takes them."""
    ids = []
    for key in keys:
        for params in key_events(key):
            ids.append(next(tools.ids))
            await tools.ws.send_json({"id": ids[-1], "method": "Input.dispatchKeyEvent",
                                      "params": params, "sessionId": tools.session})
    waiting = set(ids)
    while waiting:
        reply = await tools.ws.receive_json()
        assert "error" not in reply, reply
        waiting.discard(reply.get("id"))


async def received(tools: DevTools) -> str:
    return SGR.sub("", "".join(await tools.evaluate("window.__received") or []))


async def until_shown(tools: DevTools, text: str, deadline: float, quiet: float = 0.0) -> str:
    """The page's output once it holds `text` (and nothing new came for `quiet` seconds)."""
    seen, since = "", time.monotonic()
    while True:
        now = await received(tools)
        if now != seen:
            seen, since = now, time.monotonic()
        if text in seen and time.monotonic() - since >= quiet:
            return seen
        if time.monotonic() > deadline:
            return seen
        await asyncio.sleep(0.2)


async def type_after_tab(devtools_url: str, url: str) -> tuple[str, str]:
    import aiohttp

    deadline = time.monotonic() + 120
    async with aiohttp.ClientSession() as http, http.ws_connect(devtools_url,
                                                                max_msg_size=0) as ws:
        tools = DevTools(ws)
        target = await tools.call("Target.createTarget", url="about:blank")
        tools.session = (await tools.call("Target.attachToTarget", targetId=target["targetId"],
                                          flatten=True))["sessionId"]
        await tools.call("Page.enable")  # without it the spy may miss the new document
        await tools.call("Page.addScriptToEvaluateOnNewDocument", source=SPY)
        await tools.call("Page.navigate", url=url)
        while not await tools.evaluate(FIRST_BYTE_JS):
            assert time.monotonic() < deadline, "the page showed no output of its app"
            await asyncio.sleep(0.2)
        # the launcher drawn (its footer) and settled: the env list has the focus
        before = await until_shown(tools, "Autotune", deadline, quiet=1.5)
        assert "Autotune" in before, before[-2000:]
        await tools.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        await tools.evaluate("window.__received.length = 0")
        await burst(tools, "\t" + SPEC)
        return before, await until_shown(tools, SPEC, time.monotonic() + 30, quiet=1.0)


def test_keys_typed_right_after_a_tab_in_a_served_page_reach_the_field_it_focused(tmp_path):
    browser = find_browser()
    if browser is None:
        pytest.skip("no headless browser to drive (chromium, chromium-browser, google-chrome); "
                    "on Debian: apt-get install chromium")
    with serving(tmp_path / "runs") as served, \
            tempfile.TemporaryDirectory(prefix="puffer-tui-chromium-") as profile:
        chromium = start_chromium(browser, profile, "--window-size=1280,800")
        try:
            devtools_url = _devtools_url(chromium, time.monotonic() + 30)
            threading.Thread(target=chromium.stderr.read, daemon=True).start()
            _, after = asyncio.run(type_after_tab(devtools_url, served.url))
        finally:
            stop_chromium(chromium)
    assert SPEC in after, json.dumps(after[-600:])
