"""The control protocol's messages: parsing and validating requests, encoding replies and pushes.

Pure functions, no I/O: engine/runtime/control_server.py does the socket work. The wire format is
described in docs/protocol.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from enum import StrEnum

from puffer_tui.engine.shared.config import ConfigError, FieldSpec, live_specs, spec_for

PROTOCOL_VERSION = 1
MAX_MESSAGE = 1 << 20  # bytes per line, newline excluded


class RunState(StrEnum):
    """An engine's state, in hello/status/telemetry and in status.json. Members equal their
    strings, so JSON written or read as plain text compares as before."""

    STARTING = "starting"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"
    FINISHED = "finished"
    STOPPED = "stopped"
    ERROR = "error"


# states while the engine lives, and the final ones written to status.json at exit
LIVE_STATES = (RunState.STARTING, RunState.RUNNING, RunState.PAUSED, RunState.STOPPING)
FINAL_STATES = (RunState.FINISHED, RunState.STOPPED, RunState.ERROR)


# Metric groups: the trainer's epoch row nests its numbers by who made them (CleanRL style), so
# an env stat named like a trainer number cannot overwrite it. The row's own top-level numbers:
ROW_KEYS = ("epoch", "global_step", "sps", "uptime", "learning_rate")
LOSSES, TIMING, TIMING_PCT, ENV = "losses", "timing", "timing_pct", "env"
METRIC_GROUPS = (LOSSES, TIMING, TIMING_PCT, ENV)
# An epoch that ran an evaluation (engine/evaluation/periodic_eval.py) has an "eval" group too:
# metrics.jsonl columns "eval/<name>", TensorBoard tags "eval/<name>", telemetry "eval".
EVAL = "eval"
EVAL_KEYS = ("score", "episode_return", "episode_length", "episodes", "seconds")
LOSS_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
             "explained_variance")
TIMING_KEYS = ("env", "forward", "copy", "learn", "misc")  # where an epoch's wall time goes

# Per-worker throughput (multi-process learners, Ray actors): the row's and telemetry's
# "workers" list, one {"rank"|"actor", "node", "sps"} entry each; telemetry only, not a
# metrics.jsonl column group. "cluster": Ray's CPUs {"cpus", "cpus_reserved"} when Ray runs.
WORKERS, CLUSTER = "workers", "cluster"
# The launcher's id for the engine it starts (environment variable), echoed in status.json as
# "launch_id": under torchrun the launcher's child is torchrun's agent, not rank 0.
LAUNCH_ID_ENV = "PUFFER_TUI_LAUNCH_ID"


class MessageType(StrEnum):
    """The `type` of a server push (replies carry an `id` instead; the client files them as
    REPLY in its push queue)."""

    TELEMETRY = "telemetry"
    EVENT = "event"
    FRAME = "frame"
    DIAGNOSIS = "diagnosis"
    SWEEP = "sweep"  # a sweep driver's snapshot, to the clients that sent `subscribe`
    REPLY = "reply"

# command -> the argument names it accepts
COMMANDS = {
    "hello": {"client"},
    "status": set(),
    "pause": set(),
    "resume": set(),
    "set": {"key", "value"},
    "checkpoint": set(),
    "stop": {"checkpoint"},
    "render": {"env", "view", "fps", "policy", "saliency"},
    "diagnosis": {"silence"},
}
# commands the trainer applies at its safe points (the rest the server answers itself)
QUEUED = ("pause", "resume", "set", "checkpoint", "stop", "diagnosis")

# Diagnosis (engine/diagnosis/rules.py): the rules' names, a `diagnosis` push's statuses, and the
# metrics row's / telemetry's field listing them (the row's only when something changed).
DIAGNOSIS_RULES = ("kl_blowup", "policy_collapse", "value_dominates", "critic_blind",
                   "plateau", "score_lost", "grad_always_clipped", "obs_scale", "episode_ends",
                   "short_horizon", "env_bound")
FIRED, CLEARED = "fired", "cleared"
DIAGNOSES = "diagnoses"
# a sweep driver's commands (engine/sweep/server.py, steering in engine/sweep/steering.py);
# `subscribe` answers with the snapshot, and each new one is then pushed as a SWEEP message
SWEEP_COMMANDS = {
    "hello": {"client"},
    "status": set(),
    "stop": set(),
    "pause": set(),
    "resume": set(),
    "prune": {"trial"},
    "add": {"trials"},
    "subscribe": set(),
}


def json_safe(value):
    """Numbers JSON can carry: NaN and infinities become None (JSON has no spelling for them)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy / torch scalars
        return json_safe(value.item())
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


class RequestError(ValueError):
    """A malformed request or bad arguments; `request_id` is the id to answer (or None)."""

    def __init__(self, message: str, request_id: int | None = None):
        super().__init__(message)
        self.request_id = request_id


def encode(message: dict) -> bytes:
    """One line of the wire format (NaN and infinities become null)."""
    return json.dumps(json_safe(message), separators=(",", ":")).encode("utf-8") + b"\n"


def encode_request(request_id: int, cmd: str, args: dict | None = None) -> bytes:
    """One request line, as a client sends it."""
    message = {"id": request_id, "cmd": cmd}
    if args:
        message["args"] = args
    return encode(message)


def split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines in `buffer` (newlines stripped, blank ones dropped) and the
    unfinished rest to keep for the next read."""
    *lines, rest = buffer.split(b"\n")
    return [line for line in lines if line.strip()], rest


def error_reply(request_id: int | None, text: str) -> dict:
    return {"id": request_id, "ok": False, "error": text}


def oversized_reply() -> dict:
    return error_reply(None, f"message exceeds {MAX_MESSAGE} bytes; discarded")


def parse_request(line: bytes, commands: dict = COMMANDS) -> tuple[int, str, dict]:
    """(id, cmd, args) of one request line, its args checked against `commands` (the
    engine's, or SWEEP_COMMANDS); RequestError says what is wrong."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RequestError(f"not a JSON object: {e}") from None
    except RecursionError:
        raise RequestError("JSON nested too deeply; a request is a flat object "
                           "{\"id\", \"cmd\", \"args\"}") from None
    if not isinstance(request, dict):
        raise RequestError("a request must be a JSON object {\"id\", \"cmd\", \"args\"}")
    request_id = request.get("id")
    if not isinstance(request_id, int) or isinstance(request_id, bool):
        raise RequestError("a request needs an integer \"id\"")
    cmd = request.get("cmd")
    if not isinstance(cmd, str) or cmd not in commands:
        raise RequestError(f"unknown command {cmd!r}; commands: {', '.join(commands)}",
                           request_id)
    args = request.get("args") or {}
    if not isinstance(args, dict):
        raise RequestError(f"{cmd}: \"args\" must be a JSON object", request_id)
    unknown = sorted(set(args) - commands[cmd])
    if unknown:
        allowed = ", ".join(sorted(commands[cmd])) or "none"
        raise RequestError(f"{cmd}: unknown argument {unknown[0]!r} (allowed: {allowed})",
                           request_id)
    if cmd == "diagnosis" and "silence" in args and args["silence"] not in DIAGNOSIS_RULES:
        raise RequestError(f"diagnosis: \"silence\" must be a rule name "
                           f"({', '.join(DIAGNOSIS_RULES)}), got {args['silence']!r}", request_id)
    if cmd == "stop" and not isinstance(args.get("checkpoint", True), bool):
        raise RequestError("stop: \"checkpoint\" must be true or false", request_id)
    return request_id, cmd, args


MAX_FRAME_RATE = 15  # frames a second the engine captures for renderers at most


def check_render_fps(args: dict) -> float:
    """How many frames a second this client wants at most (default and most: MAX_FRAME_RATE):
    a dashboard that draws 4 a second need not be sent 15."""
    fps = args.get("fps", MAX_FRAME_RATE)
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps <= MAX_FRAME_RATE:
        raise RequestError(f"render: \"fps\" must be a number in (0, {MAX_FRAME_RATE}], got {fps!r}")
    return float(fps)


def check_render_view(args: dict) -> str:
    """The view a `render` asks for: "env" (what the env draws, the default) or "obs" (the
    observation itself drawn as an image, e.g. an Atari frame stack)."""
    view = args.get("view", VIEW_ENV)
    if view not in VIEWS:
        raise RequestError(f"render: \"view\" must be one of {', '.join(map(repr, VIEWS))}, "
                           f"got {view!r}")
    return view


SALIENCY_OF = ("action", "value")  # of what the saliency's gradient is taken
SALIENCY_CYCLE = (None, *SALIENCY_OF)  # a viewer's key: off, of log pi(a|s), of V(s), off again


def next_saliency(current: str | None) -> str | None:
    """The saliency a viewer shows after one more press of its key (the dashboard's and the
    render screen's g, the eval window's g)."""
    index = SALIENCY_CYCLE.index(current) if current in SALIENCY_CYCLE else 0
    return SALIENCY_CYCLE[(index + 1) % len(SALIENCY_CYCLE)]


def check_render_policy(args: dict) -> tuple[bool, str | None]:
    """(whether the frames carry the policy's view, the saliency asked for: None, "action"
    (of log pi(a|s)) or "value" (of V(s))). A saliency implies the policy's view."""
    policy = args.get("policy", False)
    if not isinstance(policy, bool):
        raise RequestError(f"render: \"policy\" must be true or false, got {policy!r}")
    saliency = args.get("saliency")
    if saliency is not None and saliency not in SALIENCY_OF:
        raise RequestError(f"render: \"saliency\" must be null or one of "
                           f"{', '.join(map(repr, SALIENCY_OF))}, got {saliency!r}")
    return policy or saliency is not None, saliency


def check_render(args: dict, num_envs: int) -> int | None:
    """The env index a `render` asks for (None: stop streaming)."""
    env = args.get("env")
    if env is None:
        return None
    if not isinstance(env, int) or isinstance(env, bool) or not 0 <= env < num_envs:
        raise RequestError(f"render: \"env\" must be null or an integer in "
                           f"[0, {num_envs - 1}], got {env!r}")
    return env


@dataclass(frozen=True)
class LiveChange:
    """A live `set`, checked once against the schema: the canonical key and the typed value.
    The server makes it (check_set), the command queue hands it to the trainer as it is."""

    key: str
    value: bool | int | float | str

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        return self.key.partition(".")[2]


def check_live(key: str, value, env_name: str) -> LiveChange:
    """The one check of a live change: a known field, live, the value typed and in bounds
    (the schema's FieldSpec.coerce); ConfigError says what is wrong."""
    spec = spec_for(key, env_name)
    if not spec.live:
        live = ", ".join(s.key for s in live_specs())
        raise ConfigError(f"{spec.key} cannot be changed while training; it applies on "
                          f"restart (live fields: {live})")
    return LiveChange(spec.key, spec.coerce(value))


def check_set(args: dict, env_name: str) -> dict:
    """A `set` request's args checked (check_live): the queued command's args,
    `{"change": LiveChange}`. RequestError says what is wrong."""
    if "key" not in args or "value" not in args:
        raise RequestError("set needs \"key\" (e.g. \"train.learning_rate\") and \"value\"")
    key, value = args["key"], args["value"]
    if not isinstance(key, str):
        raise RequestError("set: \"key\" must be a string such as \"train.learning_rate\"")
    if not isinstance(value, (str, int, float, bool)):
        raise RequestError(f"set {key}: value must be a number, boolean or string")
    try:
        return {"change": check_live(key, value, env_name)}
    except ConfigError as e:
        raise RequestError(str(e)) from None


# -- telemetry: one typed snapshot, the same JSON on the wire --------------------------------


@dataclass(frozen=True)
class TelemetrySnapshot:
    """A telemetry push (and the `status` reply), field by field as docs/protocol.md lists
    them. The engine builds it (engine/runtime/telemetry.py, where the "now" rules live: SPS
    and ETA read 0 and null unless running); clients read these fields and decide nothing."""

    time: float = 0.0
    state: str = RunState.STARTING
    env: str = ""
    run: str = ""
    global_step: int = 0
    total_timesteps: int = 0
    epoch: int = 0
    sps: float = 0.0  # agent-steps/s now: 0 unless running
    sps_mean: float = 0.0  # over the run's training time (global_step / uptime)
    uptime: float = 0.0
    eta: float | None = None  # seconds, null unless running
    learning_rate: float | None = None
    losses: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    timing_pct: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    eval: dict = field(default_factory=dict)
    hyperparameters: dict = field(default_factory=dict)
    processes: list = field(default_factory=list)
    workers: list = field(default_factory=list)
    cluster: dict | None = None
    device: str = ""
    preset: str = ""
    gpu: dict | None = None
    diagnoses: list = field(default_factory=list)

    def to_wire(self) -> dict:
        """The JSON object (without "type"; a push adds it, a `status` reply does not)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def push(self) -> dict:
        return {"type": MessageType.TELEMETRY, **self.to_wire()}

    @classmethod
    def from_wire(cls, message: dict) -> TelemetrySnapshot:
        """A snapshot of a push or `status` reply. Unknown keys are ignored; a missing key, a
        null or a value of the wrong kind reads as the field's default (0, "", {}, [] or
        null), so an older or newer engine's telemetry still reads."""
        values = {}
        for f in dataclasses.fields(cls):
            kinds, value = _WIRE_KINDS[f.name], message.get(f.name)
            if isinstance(value, bool) or not isinstance(value, kinds):
                continue  # missing, null or the wrong kind: the default
            values[f.name] = float(value) if kinds is _NUMBER else value
        if values.get("state") in RunState._value2member_map_:
            values["state"] = RunState(values["state"])  # an unknown state stays a string
        return cls(**values)


_NUMBER = (int, float)
_WIRE_KINDS = {"time": _NUMBER, "state": (str,), "env": (str,), "run": (str,),
               "global_step": (int,), "total_timesteps": (int,), "epoch": (int,),
               "sps": _NUMBER, "sps_mean": _NUMBER, "uptime": _NUMBER, "eta": _NUMBER,
               "learning_rate": _NUMBER, "losses": (dict,), "timing": (dict,),
               "timing_pct": (dict,), "stats": (dict,), "eval": (dict,),
               "hyperparameters": (dict,), "processes": (list,), "workers": (list,),
               "cluster": (dict,), "device": (str,), "preset": (str,), "gpu": (dict,),
               "diagnoses": (list,)}


# -- the field schema in hello: what the hyperparameter editor is built from ----------------

_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def schema_to_wire(specs) -> list[dict]:
    """FieldSpecs as hello's `schema` list."""
    return [{"section": s.section, "name": s.name, "type": s.type.__name__,
             "default": s.default, "low": s.low, "high": s.high, "help": s.help,
             "live": s.live, "choices": list(s.choices) if s.choices else None}
            for s in specs]


def spec_from_wire(field: dict) -> FieldSpec:
    """schema_to_wire undone for one entry: the FieldSpec the engine checks values with."""
    choices = field.get("choices")
    return FieldSpec(
        field["section"], field["name"], _TYPES.get(field.get("type"), str), field.get("default"),
        field.get("low"), field.get("high"), field.get("help", ""), bool(field.get("live")),
        tuple(choices) if choices else None,
    )


def schema_from_wire(fields: list[dict] | None) -> list[FieldSpec]:
    return [spec_from_wire(f) for f in fields or []]


# -- frames and palettes: what every renderer draws (the dashboard, the eval window) ----------
#
# A `frame` push is one of three kinds (engine/native/frames.py says what an env may return):
#   tiles: {"type", "env", "height", "width", "tiles": base64 H*W tile ids}     (no "kind": the
#          original form, byte for byte; drawn with the palette from hello)
#   rgb:   {"type", "env", "kind": "rgb", "height", "width", "rgb": base64 H*W*3 bytes}
#   text:  {"type", "env", "kind": "text", "text": str with SGR colour codes}
# plus "view": "obs" when it shows the observation rather than the env's own drawing.


class FrameKind(StrEnum):
    TILES = "tiles"
    RGB = "rgb"
    TEXT = "text"


VIEW_ENV, VIEW_OBS = "env", "obs"
VIEWS = (VIEW_ENV, VIEW_OBS)


@dataclass(frozen=True)
class Frame:
    """A decoded `frame` push. `data`: the tile ids (TILES, H*W bytes), the pixels (RGB, H*W*3
    bytes, row-major RGB) or the text (TEXT; height x width are its lines x widest line)."""

    env: int
    height: int
    width: int
    data: bytes | str
    kind: FrameKind = FrameKind.TILES
    view: str = VIEW_ENV
    policy: PolicyView | None = None  # the policy's view of this step, when asked for

    @property
    def tiles(self) -> bytes:
        return self.data


MAX_POLICY_HEADS, MAX_POLICY_ACTIONS = 64, 256
MAX_SERIES, MAX_SALIENCY_CELLS, MAX_RANKED = 512, 256 * 256, 64


@dataclass(frozen=True)
class EpisodeView:
    """The last finished episode of the watched agent: V(s_t) and the realized discounted
    return from t (both at most MAX_SERIES points), and the critic's RMS error over it."""

    values: tuple[float, ...]
    returns: tuple[float, ...]
    error: float
    length: int
    truncated: bool = False


@dataclass(frozen=True)
class Saliency:
    """|gradient| per observation cell, 0-1 (`of`: "action" or "value"): a grid (`grid`,
    height x width row-major) or ranked dimensions (`dims`: (index, magnitude, name))."""

    of: str
    height: int = 0
    width: int = 0
    grid: tuple[float, ...] = ()
    dims: tuple[tuple[int, float, str], ...] = ()


@dataclass(frozen=True)
class PolicyView:
    """A `frame` push's "policy" (engine/evaluation/policy_view.py): the watched agent's
    action distribution this step (`heads`: probabilities per discrete head; `mean`/`std`
    per continuous dimension), the action taken, V(s), the reward that arrived."""

    env: int
    agent: int
    kind: str  # "discrete", "multidiscrete" or "box"
    value: float | None
    reward: float | None
    step: int
    action: tuple = ()
    heads: tuple[tuple[float, ...], ...] = ()
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    episode: EpisodeView | None = None
    saliency: Saliency | None = None

    @classmethod
    def from_wire(cls, raw) -> PolicyView | None:
        """The view of a push's "policy" dict; None for a malformed one (the frame is kept)."""
        try:
            kind = str(raw["kind"])
            if kind not in ("discrete", "multidiscrete", "box"):
                return None
            heads = tuple(tuple(_number(p) for p in _list(head)[:MAX_POLICY_ACTIONS])
                          for head in _list(raw.get("heads", ()))[:MAX_POLICY_HEADS])
            return cls(
                env=int(raw.get("env", 0)), agent=int(raw.get("agent", 0)), kind=kind,
                value=_number(raw.get("value")), reward=_number(raw.get("reward")),
                step=int(raw.get("step", 0)),
                action=tuple(_list(raw.get("action", ()))[:MAX_POLICY_ACTIONS]),
                heads=heads,
                mean=tuple(_number(v) for v in _list(raw.get("mean", ()))[:MAX_POLICY_ACTIONS]),
                std=tuple(_number(v) for v in _list(raw.get("std", ()))[:MAX_POLICY_ACTIONS]),
                episode=_episode(raw.get("episode")),
                saliency=_saliency(raw.get("saliency")))
        except (KeyError, ValueError, TypeError, AttributeError):
            return None


def _list(v) -> list | tuple:
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"expected a list, got {type(v).__name__}")
    return v


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _episode(raw) -> EpisodeView | None:
    if not isinstance(raw, dict):
        return None
    values = tuple(_number(v) for v in _list(raw["values"])[:MAX_SERIES])
    returns = tuple(_number(v) for v in _list(raw["returns"])[:MAX_SERIES])
    error = _number(raw.get("error"))
    if error is None or len(values) != len(returns):
        return None
    return EpisodeView(values, returns, error, int(raw.get("length", len(values))),
                       bool(raw.get("truncated", False)))


def _saliency(raw) -> Saliency | None:
    import base64

    if not isinstance(raw, dict) or raw.get("of") not in SALIENCY_OF:
        return None
    if "cells" in raw:
        height, width = int(raw["height"]), int(raw["width"])
        cells = base64.b64decode(raw["cells"], validate=True)
        if height < 1 or width < 1 or height * width > MAX_SALIENCY_CELLS \
                or len(cells) != height * width:
            return None
        return Saliency(raw["of"], height, width, tuple(c / 255.0 for c in cells))
    dims = tuple((int(i), float(m), str(name)[:40]) for i, m, name in _list(raw["dims"])[:MAX_RANKED])
    return Saliency(raw["of"], dims=dims)


def frame_message(env: int, frame, view: str = VIEW_ENV, policy: dict | None = None) -> dict:
    """A `frame` push of what an env's frame() returned: a tile grid, an RGB image (cut to the
    frame bounds here if the env did not) or text, with the policy's view of the step when
    given (its wire dict; clients that do not know the field ignore it). ValueError for
    anything else."""
    import base64

    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.engine.native import frames

    message = {"type": MessageType.FRAME, "env": int(env)}
    if view != VIEW_ENV:
        message["view"] = view
    kind = frames.frame_kind(frame)
    if kind == frames.TILES:
        height, width = frame.shape
        message.update(height=int(height), width=int(width),
                       tiles=base64.b64encode(frame.tobytes()).decode("ascii"))
    elif kind == frames.RGB:
        pixels = frames.bound_frame(frame)
        height, width = pixels.shape[:2]
        message.update(kind=FrameKind.RGB, height=int(height), width=int(width),
                       rgb=base64.b64encode(pixels.tobytes()).decode("ascii"))
    elif kind == frames.TEXT:
        message.update(kind=FrameKind.TEXT, text=frames.clean_text(frame))
    else:
        raise ValueError(f"a frame is an H x W tile grid, an H x W x 3 image or a str, got "
                         f"{type(frame).__name__} {getattr(frame, 'shape', '')}")
    if policy is not None:
        message["policy"] = policy
    return message


def decode_frame(message: dict) -> Frame | None:
    """The Frame of a `frame` push; None for a malformed one or one over the frame bounds,
    which a renderer drops, keeping its last good frame. A malformed policy view is dropped
    alone (the frame has none)."""
    frame = _decode_frame(message)
    if frame is None or "policy" not in message:
        return frame
    return dataclasses.replace(frame, policy=PolicyView.from_wire(message["policy"]))


def _decode_frame(message: dict) -> Frame | None:
    import base64

    try:
        kind = FrameKind(message.get("kind", FrameKind.TILES))
        view = message.get("view", VIEW_ENV)
        env = int(message.get("env", 0))
        if view not in VIEWS:
            return None
        if kind == FrameKind.TEXT:
            return _text_frame(env, message["text"], view)
        field = "tiles" if kind == FrameKind.TILES else "rgb"
        data = base64.b64decode(message[field], validate=True)
        height, width = int(message["height"]), int(message["width"])
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    if height < 1 or width < 1:
        return None
    if kind == FrameKind.RGB:
        # lazy: pulls gymnasium, which this module does not load
        from puffer_tui.engine.native import frames

        if height > frames.MAX_RGB_HEIGHT or width > frames.MAX_RGB_WIDTH:
            return None
        if height * width * 3 != len(data):
            return None
    elif height * width != len(data):
        return None
    return Frame(env, height, width, data, kind, view)


def _text_frame(env: int, text, view: str) -> Frame | None:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.engine.native import frames

    if not isinstance(text, str) or len(text) > frames.MAX_TEXT_CHARS:
        return None
    text = frames.clean_text(text)  # the engine cleaned it; a renderer never trusts the wire
    lines = frames.strip_colour(text).split("\n")
    return Frame(env, len(lines), max(len(line) for line in lines), text, FrameKind.TEXT, view)


def palette_to_wire(palette: dict) -> dict:
    """An env's palette {tile id: (glyph, colour)} as JSON: {"id": [glyph, colour]}."""
    return {str(k): [glyph, colour] for k, (glyph, colour) in palette.items()}


def palette_from_wire(raw: dict | None) -> dict[int, tuple[str, str]]:
    """palette_to_wire undone: what renderers look tiles up in."""
    return {int(k): tuple(v) for k, v in (raw or {}).items()}
