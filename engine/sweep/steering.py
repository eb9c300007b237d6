"""Steering a running sweep: pause or resume launching trials, prune one trial, add trials.

Requests arrive on the control server's thread with a reply to call; they are queued and
carried out by the driver's own loop (between two looks at the running trials), so the
driver's state is only ever changed by one thread. The server never waits for them: the loop
calls the reply, and the server answers on its own when the loop has not within
ANSWER_WITHIN_S (engine/sweep/server.py).

Tested in: tests/engine/sweep/test_sweep_server.py, tests/screens/test_sweep_view.py
"""

from __future__ import annotations

import queue
from collections.abc import Callable

from puffer_tui.engine.shared import sweep_settings as st

STEERING_COMMANDS = ("pause", "resume", "prune", "add")
ANSWER_WITHIN_S = 5.0
MAX_ADDED = 10_000


class Steering:
    def __init__(self, driver):
        self.driver = driver
        self.launching = True  # False while a client has paused the sweep
        self._requests: queue.Queue = queue.Queue()

    def request(self, cmd: str, args: dict, reply: Callable[[dict], None]) -> None:
        """From the server's thread: queue `cmd` for the loop, which answers through `reply`."""
        self._requests.put((cmd, args, reply))

    def apply_pending(self) -> int:
        """On the driver's loop: carry out every queued request; how many there were."""
        applied = 0
        while True:
            try:
                cmd, args, reply = self._requests.get_nowait()
            except queue.Empty:
                return applied
            try:
                answer = self._apply(cmd, args)
            except Exception as e:  # a bad request must not end the sweep
                answer = {"ok": False, "error": f"{cmd}: {type(e).__name__}: {e}"}
            reply(answer)
            applied += 1

    def refuse_all(self, why: str) -> None:
        """The loop has ended: answer whatever is still queued."""
        while True:
            try:
                cmd, _args, reply = self._requests.get_nowait()
            except queue.Empty:
                return
            reply({"ok": False, "error": f"{cmd}: {why}"})

    def _apply(self, cmd: str, args: dict) -> dict:
        driver = self.driver
        if cmd in ("pause", "resume"):
            self.launching = cmd == "resume"
            return {"ok": True, "launching": self.launching,
                    "running": sorted(driver.running)}
        if cmd == "prune":
            number = args.get("trial")
            if isinstance(number, bool) or not isinstance(number, int):
                return {"ok": False, "error": "prune: give the trial's number, "
                                              "e.g. {\"trial\": 3}"}
            if number not in driver.running:
                return {"ok": False, "error": f"prune: trial {number} is not running under "
                                              f"this driver (running: {sorted(driver.running)})"}
            _trial, run, _slot = driver.running[number]
            run.stop("pruned")
            return {"ok": True, "trial": number}
        if cmd == "add":
            count = args.get("trials", 1)
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_ADDED:
                return {"ok": False, "error": f"add: trials must be an integer in [1, {MAX_ADDED}]"}
            driver.settings.trials += count
            st.save_settings(driver.settings, driver.dir)  # a resume keeps the new target
            return {"ok": True, "target": driver.settings.trials}
        return {"ok": False, "error": f"{cmd}: not a steering command"}
