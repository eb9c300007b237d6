"""Steering a running sweep: pause or resume launching trials, prune one trial, add trials.

Requests arrive on the control server's threads; they are queued and carried out by the
driver's own loop (between two looks at the running trials), so the driver's state is only
ever changed by one thread. The client waits for the loop's answer.
"""

from __future__ import annotations

import queue
import threading

from puffer_tui.engine.shared import sweep_settings as st

STEERING_COMMANDS = ("pause", "resume", "prune", "add")
ANSWER_WITHIN_S = 5.0
MAX_ADDED = 10_000


class Steering:
    def __init__(self, driver):
        self.driver = driver
        self.launching = True  # False while a client has paused the sweep
        self._requests: queue.Queue = queue.Queue()

    def request(self, cmd: str, args: dict) -> dict:
        """From a server thread: queue `cmd` for the loop and wait for its answer."""
        done, box = threading.Event(), {}
        self._requests.put((cmd, args, box, done))
        if not done.wait(ANSWER_WITHIN_S):
            return {"ok": False, "error": f"{cmd}: the driver's loop did not take it within "
                                          f"{ANSWER_WITHIN_S:g} s (busy with the database?)"}
        return box["reply"]

    def apply_pending(self) -> None:
        """On the driver's loop: carry out every queued request."""
        while True:
            try:
                cmd, args, box, done = self._requests.get_nowait()
            except queue.Empty:
                return
            try:
                box["reply"] = self._apply(cmd, args)
            except Exception as e:  # a bad request must not end the sweep
                box["reply"] = {"ok": False, "error": f"{cmd}: {type(e).__name__}: {e}"}
            done.set()

    def refuse_all(self, why: str) -> None:
        """The loop has ended: answer whatever is still queued."""
        while True:
            try:
                cmd, _args, box, done = self._requests.get_nowait()
            except queue.Empty:
                return
            box["reply"] = {"ok": False, "error": f"{cmd}: {why}"}
            done.set()

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
