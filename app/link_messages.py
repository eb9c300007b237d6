"""The app's typed messages: what the engine link says, and what screens ask of it.

Three directions, one vocabulary:
- link -> app: the reader thread (and the connect and request workers) post `Telemetry`,
  `EngineEvent`, `Frame`, `Linked`, `LinkLost` and `Replied` to the app; the app folds them
  into its TelemetryStore. A message carries the link it came from, so one that arrives
  after the app moved to another run is recognised and dropped. A sweep driver's link posts
  `SweepStatus` to the sweep view the same way.
- app -> screens: `RunChanged`, `LinkStateChanged`, `RenderEnvChanged` and `Replied` are
  posted to the screens, which set their reactives from them (they do not bubble back up).
- screens -> app: `EngineRequest` and `RenderEnvStep` bubble up from a screen to the app,
  which sends the request from a worker; no screen calls the app by name for them.

Telemetry and frames supersede older ones still waiting in the queue (`can_replace`): under
load the app processes the newest state, not a backlog. Events and replies never do.

Each message is a dataclass (Textual calls Message.__post_init__ for them); eq=False keeps
messages compared by identity, as Textual's queue expects.

Tested in: tests/app/test_app_messages.py
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from puffer_tui.engine.shared.protocol import FINAL_STATES, MessageType

# Link states the header shows; None means linked and answering.
CONNECTING = "connecting"
STARTING = "starting engine"
NOT_RESPONDING = "not responding"
DISCONNECTED = "disconnected"


def can_steer(link_state: str | None, run_state: str) -> bool:
    """Pause, checkpoint, stop and set mean something only while a live engine listens."""
    return link_state in (None, NOT_RESPONDING) and run_state not in FINAL_STATES


# -- link -> app --------------------------------------------------------------------------------


@dataclass(eq=False)
class LinkMessage(Message, bubble=False):
    """A message from one engine link; `link` is the EngineClient (None: no link, in tests)."""

    link: object


@dataclass(eq=False)
class Telemetry(LinkMessage):
    push: dict

    def can_replace(self, message: Message) -> bool:
        # A newer push of the same epoch holds everything this one does (the counters are
        # cumulative, losses and stats are per epoch), so the older one may be skipped.
        return (isinstance(message, Telemetry) and message.link is self.link
                and message.push.get("epoch") == self.push.get("epoch"))


@dataclass(eq=False)
class EngineEvent(LinkMessage):
    push: dict


@dataclass(eq=False)
class Frame(LinkMessage):
    push: dict

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, Frame) and message.link is self.link


@dataclass(eq=False)
class Diagnosis(LinkMessage):
    """A diagnosis fired or cleared (docs/protocol.md); the next telemetry lists them too."""

    push: dict


@dataclass(eq=False)
class Linked(LinkMessage):
    """The connect worker reached the engine: its hello, and the run's history before now."""

    hello: dict
    history: tuple


@dataclass(eq=False)
class LinkLost(LinkMessage):
    reason: str


@dataclass(eq=False)
class SweepStatus(LinkMessage):
    """A sweep driver's snapshot (engine/sweep/snapshot.py), posted to the sweep view: the
    driver's answer to `subscribe` and each snapshot it pushes after it (`link`: the view's
    connection to the driver), or status.json while no driver answers (`link` None: the
    sweep has ended, or its driver died or has not started yet)."""

    snapshot: dict

    @property
    def live(self) -> bool:
        return self.link is not None

    @classmethod
    def from_push(cls, link, push: dict) -> SweepStatus:
        return cls(link, {k: v for k, v in push.items() if k != "type"})

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SweepStatus)  # the newest snapshot holds everything


PUSH_MESSAGES = {MessageType.TELEMETRY: Telemetry, MessageType.EVENT: EngineEvent,
                 MessageType.FRAME: Frame, MessageType.DIAGNOSIS: Diagnosis,
                 MessageType.SWEEP: SweepStatus.from_push}


def message_for_push(link, push: dict) -> LinkMessage | None:
    """The typed message for one push off the wire (None for a type the app ignores)."""
    kind = PUSH_MESSAGES.get(push.get("type"))
    return kind(link, push) if kind is not None else None


# -- screens -> app -----------------------------------------------------------------------------


@dataclass(eq=False)
class EngineRequest(Message):
    """A screen asks for an engine command. The reply comes back as `Replied` to `reply_to`
    (the screen that asked) when given, and is logged in the event log unless `quiet`."""

    cmd: str
    args: dict | None = None
    reply_to: object = None
    quiet: bool = False
    timeout: float = 3.0


@dataclass(eq=False)
class RenderEnvStep(Message):
    """A screen asks to watch the previous (-1) or next (+1) env."""

    delta: int


# -- app -> screens -----------------------------------------------------------------------------


@dataclass(eq=False)
class Replied(Message, bubble=False):
    """The engine's answer to an `EngineRequest` (`reply["ok"]` says whether it was done)."""

    cmd: str
    args: dict | None
    reply: dict
    link: object = None
    # Where the app sends it on (set on the copy the request worker posts to the app).
    quiet: bool = field(default=False, kw_only=True)
    reply_to: object = field(default=None, kw_only=True)
    on_reply: object = field(default=None, kw_only=True)


@dataclass(eq=False)
class RunChanged(Message, bubble=False):
    """The store changed. `parts` says what ("numbers", "frame"); `urgent` asks to redraw now
    rather than at the screen's next redraw slot (a key's effect should show at once)."""

    parts: frozenset[str]
    urgent: bool = False

    def can_replace(self, message: Message) -> bool:
        if not isinstance(message, RunChanged):
            return False
        message.parts = message.parts | self.parts  # the newer one carries both
        message.urgent = message.urgent or self.urgent
        return True


@dataclass(eq=False)
class LinkStateChanged(Message, bubble=False):
    """The link's state (None: linked and answering) and whether a link exists at all."""

    state: str | None
    linked: bool


@dataclass(eq=False)
class RenderEnvChanged(Message, bubble=False):
    index: int
