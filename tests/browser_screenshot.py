"""Screenshots of a served page in headless chromium, driven over the DevTools protocol.

    png = screenshot_live_page("http://127.0.0.1:8000/", width=1280, height=800)

Chromium's own `--screenshot` shoots at load time, before textual-serve's page has its first
bytes from the app; here the page is loaded, the app's first output awaited (textual.js marks
the body `-first-byte`), and then shots are taken until one differs from the first: the page
is live (the dashboard's numbers move). `python tests/browser_screenshot.py URL OUT.png`
saves one from the command line.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FIRST_BYTE_JS = "document.body.classList.contains('-first-byte')"


def find_browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


class DevTools:
    """One page target of a chromium, over the browser's DevTools websocket."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)
        self.session: str | None = None

    async def call(self, method: str, **params) -> dict:
        message_id = next(self.ids)
        message = {"id": message_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        await self.ws.send_json(message)
        while True:
            reply = await self.ws.receive_json()
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    async def open(self, url: str, width: int, height: int) -> None:
        target = await self.call("Target.createTarget", url="about:blank")
        attached = await self.call("Target.attachToTarget", targetId=target["targetId"],
                                   flatten=True)
        self.session = attached["sessionId"]
        await self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                        deviceScaleFactor=1, mobile=False)
        await self.call("Page.navigate", url=url)

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def screenshot(self) -> bytes:
        shot = await self.call("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])


async def _shoot(devtools_url: str, url: str, width: int, height: int, timeout: float,
                 settle: float, while_open) -> bytes:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http, http.ws_connect(devtools_url, max_msg_size=0) as ws:
        tools = DevTools(ws)
        await tools.open(url, width, height)
        while not await tools.evaluate(FIRST_BYTE_JS):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} showed no output of its app in {timeout} s")
            await asyncio.sleep(0.2)
        await asyncio.sleep(settle)  # the app's first screens, the dashboard's first numbers
        first = await tools.screenshot()
        while True:
            await asyncio.sleep(0.5)
            shot = await tools.screenshot()
            if shot != first:
                if while_open is not None:
                    while_open()  # the page is still open and live
                return shot
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not change in {timeout} s: not live")


def screenshot_live_page(url: str, width: int = 1280, height: int = 800, timeout: float = 60.0,
                         settle: float = 3.0, browser: str | None = None,
                         while_open=None) -> bytes:
    """PNG bytes of `url` once its app has drawn and the page has changed since (live);
    `while_open()` is called then, before the browser closes the page."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError(f"no headless browser ({', '.join(BROWSERS)}); on Debian: "
                                f"apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="puffer-tui-chromium-") as profile:
        process = start_chromium(browser, profile, "--hide-scrollbars",
                                 f"--window-size={width},{height}")
        try:
            devtools_url = _devtools_url(process, time.monotonic() + 30)
            # chromium goes on logging: keep its pipe drained so it never blocks on it
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return asyncio.run(_shoot(devtools_url, url, width, height, timeout, settle,
                                      while_open))
        finally:
            stop_chromium(process)


def start_chromium(browser: str, profile: str, *flags: str) -> subprocess.Popen:
    """Headless chromium on about:blank with its DevTools on a free port, its profile (and
    its singleton socket dir, through TMPDIR) in `profile`, in a process group of its own
    so that stop_chromium() ends its helpers too."""
    return subprocess.Popen(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", f"--user-data-dir={profile}", *flags,
         "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": profile}, start_new_session=True)


def stop_chromium(process: subprocess.Popen) -> None:
    """End chromium and every helper of its group. Its helpers outlive the main process
    for a moment and go on writing the profile, which made the profile's removal fail
    ("Directory not empty: 'Default'")."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what is left of the group: none may write
    except ProcessLookupError:
        pass
    process.wait()


def _devtools_url(process: subprocess.Popen, deadline: float) -> str:
    """The browser's DevTools websocket, from the line chromium prints when it listens."""
    for line in process.stderr:
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        if found:
            return found.group(1)
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"chromium exited ({process.poll()}) without a DevTools address")


if __name__ == "__main__":
    png = screenshot_live_page(sys.argv[1])
    with open(sys.argv[2], "wb") as out:
        out.write(png)
    print(f"{len(png)} bytes written to {sys.argv[2]}")
