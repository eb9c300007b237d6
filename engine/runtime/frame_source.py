"""Frames for renderers: which envs clients want, and the latest captured frame of each.

The control server's thread says what is wanted (`want`) and reads `frames`; the main
thread captures (`capture`, from the command queue's safe point) through `grab(env)`,
the trainer's frame of one env. A frame is replaced whole, so a reader never sees half.

Nothing is drawn while nobody watches: `capture` runs only for wanted envs, at most
1/FRAME_INTERVAL times a second. A frame is a tile grid, an RGB image or text (see
engine/native/frames.py); images are cut to the frame bounds here, so whatever an env's
render() returns, what is kept and sent stays small.

A wish is an env index (the env's own drawing) or `(env, view)` with a view of
protocol.VIEWS; `frame_key(env, view)` gives the key for both `want` and `frames`. Other
views than the env's are grabbed with `grab(env, view)`.

The policy's view (engine/evaluation/policy_view.py) is wished per env (`want`'s `policy`:
env -> the saliency asked for, or None): while any is wished, a `PolicyWatch` per such env is
the trainer's `step_watch` (one row's scalars read per step, its arrays copied only in the
steps just before a view: `keep_from`), and each capture adds its view to `views`; with none
wished the trainer has no `step_watch` and nothing is computed.

Tested in: tests/engine/runtime/test_process_wiring.py,
tests/engine/runtime/test_control_server.py"""

from __future__ import annotations

import time
from collections.abc import Callable

from puffer_tui.engine.native.frames import bound_frame

FRAME_INTERVAL = 1 / 15  # most frames per second captured for renderers
ENV_VIEW = "env"
# seconds before a policy view is due from which the watched row's steps are kept for it (a
# step that is longer leaves the view to the capture after: one step later)
KEEP_AHEAD = 0.01


def frame_key(env: int, view: str = ENV_VIEW):
    """What `want` takes and `frames` is keyed by: the bare env index for the env's view."""
    return env if view == ENV_VIEW else (env, view)


class FrameSource:
    """`grab(env[, view])` -> a frame; `trainer()` -> the trainer (or None before it is
    built), whose policy the policy views read."""

    def __init__(self, grab: Callable[..., object | None],
                 trainer: Callable[[], object | None] | None = None):
        self._grab = grab
        self._trainer = trainer
        self.wanted: frozenset = frozenset()
        self.frames: dict = {}  # frame_key -> (sequence number, frame)
        self.policy_wanted: dict[int, str | None] = {}  # env -> saliency ("action", "value")
        self.views: dict[int, tuple[int, dict]] = {}  # env -> (its frame's seq, policy view)
        self._watches: dict = {}  # env -> PolicyWatch
        self._watched = None  # the trainer whose step_watch is ours
        # the views are computed no more often than their fastest viewer draws them (the
        # server sets it: the dashboard 4 a second, the full-screen render 15)
        self.policy_interval = FRAME_INTERVAL
        self._next_view = 0.0
        self._seq = 0
        self._next = 0.0

    def want(self, keys: frozenset, policy: dict[int, str | None] | None = None) -> None:
        """Server thread: capture these (frame_key) from now on, the first frame at once;
        `policy`: the envs whose policy view is wanted too (env -> saliency or None)."""
        self.policy_wanted = dict(policy or {})
        self._next_view = 0.0  # a new wish: its first view at once
        if not self.policy_wanted:
            self._unwatch()  # at once: not one more step copied for nobody
        self.wanted = frozenset(keys)
        self._next = 0.0

    def due(self) -> bool:
        return bool(self.wanted) and time.monotonic() >= self._next

    def capture(self) -> None:
        """Main thread: grab a frame of every wanted env and view (and its policy view)."""
        now = time.monotonic()
        self._next = now + FRAME_INTERVAL
        self._sync_watches()
        views_due = now >= self._next_view
        if views_due:
            self._next_view = now + self.policy_interval
        for key in self.wanted:
            env, view = key if isinstance(key, tuple) else (key, ENV_VIEW)
            try:
                frame = self._grab(env) if view == ENV_VIEW else self._grab(env, view)
                frame = None if frame is None else bound_frame(frame)
            except Exception:  # a bad index or a renderless env: nothing to show
                frame = None
            if frame is not None:
                self._seq += 1
                self.frames[key] = (self._seq, frame)
                watch = self._watches.get(env) if view == ENV_VIEW and views_due else None
                if watch is not None:
                    if not watch.ready:
                        # the latest step came before keep_from: its row was not kept. The
                        # next capture's view has it (every step from now on is kept)
                        self._next_view = 0.0
                        continue
                    try:
                        policy_view = watch.view()
                    except Exception:  # a policy this view cannot read: the frame goes alone
                        policy_view = None
                    if policy_view is not None:
                        self.views[env] = (self._seq, policy_view)
        # the steps that come just before the next view keep their rows for it; the ones
        # between views copy only their scalars
        keep_from = max(self._next, self._next_view) - KEEP_AHEAD
        for watch in self._watches.values():
            watch.keep_from = keep_from

    # -- the policy's view ---------------------------------------------------------------------

    @property
    def watches(self) -> dict:
        return self._watches

    def _sync_watches(self) -> None:
        """Main thread: one PolicyWatch per env wished, installed as the trainer's step_watch."""
        wished = self.policy_wanted
        trainer = self._trainer() if self._trainer is not None and wished else None
        if trainer is None or getattr(trainer, "policy", None) is None:
            self._unwatch()
            return
        if trainer is not self._watched:
            self._unwatch()
        for env in [e for e in self._watches if e not in wished]:
            del self._watches[env]
            self.views.pop(env, None)
        for env, saliency in wished.items():
            watch = self._watches.get(env)
            if watch is None:
                watch = self._watches[env] = _make_watch(trainer)
            watch.follow(env, 0, saliency)
        if self._watched is None:
            watches = self._watches

            def observe(*args):
                for w in list(watches.values()):
                    w.observe(*args)

            trainer.step_watch = observe
            self._watched = trainer

    def _unwatch(self) -> None:
        trainer, self._watched = self._watched, None
        if trainer is not None:
            trainer.step_watch = None
        self._watches = {}
        self.views = {}


def _make_watch(trainer):
    # lazy: pulls torch; only a viewer who asks for the policy's view needs it
    from puffer_tui.engine.evaluation.policy_view import PolicyWatch

    agents = max(int(getattr(trainer, "num_agents", 1)) // max(int(trainer.num_envs), 1), 1)
    return PolicyWatch(trainer.policy, lambda: trainer.config.train.gamma, agents,
                       getattr(trainer, "frame_shape", None))
