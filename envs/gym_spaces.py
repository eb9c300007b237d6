"""Flattening of Gymnasium spaces into the flat spaces PufferEnv buffers hold, and back.

PufferEnv buffers have one observation row per agent (a single Box) and one action row
(Discrete, MultiDiscrete or Box). Gymnasium envs may use structured spaces; the two layouts
here convert between them without losing anything (the "emulation" idea: look like a simple
env to the trainer, unflatten right before the structure is needed).

Observations (`ObservationLayout`):
    * a top-level Box passes through with its own shape and dtype;
    * anything else becomes a 1-D Box, the leaves of nested Dict/Tuple spaces laid out one
      after another in the spaces' own key order: Box -> its values, Discrete -> one-hot of
      length n, MultiDiscrete -> its integer values, MultiBinary -> its 0/1 values;
    * a TextChoices (text that is one of a known list, each one choice per slot: MiniGrid's
      missions, envs/minigrid_mission.py) -> one one-hot per slot;
    * subspaces no flat row can hold (Text, MissionSpace, Graph, Sequence, ...) are dropped,
      with one warning naming them (`ObservationLayout.dropped`);
    * the flat Box of a structured space is a `StructuredBox`: it also names its leaves, so a
      policy can unflatten views of each leaf on the device (engine/algo/encoders.py);
    * the flat dtype is the narrowest one that holds every leaf exactly: without float Boxes,
      the narrowest integer type holding all leaves' value ranges (uint8 for one-hots and
      bits); with them, their common float type, widened to float64 when an integer leaf's
      range needs it. Integers beyond float64's exact range next to floats are refused.

Actions (`ActionLayout`):
    * Discrete, MultiDiscrete, MultiBinary and float Box pass through (MultiDiscrete and
      MultiBinary as a 1-D MultiDiscrete; `start` offsets are removed and added back);
    * Dict/Tuple whose leaves are all discrete become one 1-D MultiDiscrete; all-Box ones
      one 1-D float32 Box; a mix of discrete and continuous leaves is refused.
"""

from __future__ import annotations

import multiprocessing
import sys
import warnings
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from puffer_tui.envs.text_choices import TextChoices

_DISCRETE = (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
_LEAF_SPACES = (spaces.Box, *_DISCRETE)
_OBSERVATION_LEAVES = (*_LEAF_SPACES, TextChoices)
_INTEGER_DTYPES = ("u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8")


@dataclass(frozen=True)
class Leaf:
    """One non-container space inside a (possibly nested) space and its slice of a flat row."""

    path: tuple  # Dict keys / Tuple indices from the root; () for a top-level leaf
    space: spaces.Space
    offset: int
    size: int

    @property
    def name(self) -> str:
        return _path_name(self.path)


def _path_name(path: tuple) -> str:
    """"a/0/b" for a leaf path, "<root>" for the top level."""
    return "/".join(str(p) for p in path) or "<root>"


def iter_leaves(space: spaces.Space, path: tuple = (), dropped: list | None = None,
                leaf_spaces: tuple = _LEAF_SPACES):
    """(path, space) of every leaf in depth-first order. Unsupported spaces raise TypeError,
    or, when a `dropped` list is given, are appended to it as (path, space) and skipped."""
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            yield from iter_leaves(sub, (*path, key), dropped, leaf_spaces)
    elif isinstance(space, spaces.Tuple):
        for index, sub in enumerate(space.spaces):
            yield from iter_leaves(sub, (*path, index), dropped, leaf_spaces)
    elif isinstance(space, leaf_spaces):
        yield path, space
    elif dropped is not None and path:
        dropped.append((path, space))
    else:
        raise TypeError(
            f"unsupported space {space!r} at {_path_name(path)}: use Box, Discrete, "
            "MultiDiscrete, MultiBinary, or Dict/Tuple of them"
        )


def _lookup(structure, path: tuple):
    for key in path:
        try:
            structure = structure[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"value has no entry {key!r} (looking for {path})") from exc
    return structure


def _assemble(space: spaces.Space, values: dict, path: tuple = ()):
    """Rebuild the Dict/Tuple structure of `space` from {leaf path: value}; leaves missing
    from `values` (dropped subspaces) are left out (a Tuple keeps None in their place)."""
    if isinstance(space, spaces.Dict):
        return {key: _assemble(sub, values, (*path, key)) for key, sub in space.spaces.items()
                if _has_leaves(sub, values, (*path, key))}
    if isinstance(space, spaces.Tuple):
        return tuple(_assemble(sub, values, (*path, i)) for i, sub in enumerate(space.spaces))
    return values.get(path)


def _has_leaves(space: spaces.Space, values: dict, path: tuple) -> bool:
    if isinstance(space, spaces.Dict):
        return any(_has_leaves(sub, values, (*path, k)) for k, sub in space.spaces.items())
    if isinstance(space, spaces.Tuple):
        return any(_has_leaves(sub, values, (*path, i)) for i, sub in enumerate(space.spaces))
    return path in values


def _int_dtype(low: int, high: int) -> np.dtype:
    """The narrowest integer dtype holding every value in [low, high] (unsigned if it can)."""
    for dtype in map(np.dtype, _INTEGER_DTYPES):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    raise ValueError(f"no integer dtype holds the range [{low}, {high}]")


def _cast(x, dtype: np.dtype):
    """x (numpy array/scalar or torch tensor) converted to `dtype`."""
    if isinstance(x, (np.ndarray, np.generic)):
        return x.astype(dtype, copy=False)
    import torch  # only when the caller hands us tensors

    return x.to(torch.from_numpy(np.empty(0, dtype)).dtype)


# ---- observations ---------------------------------------------------------------------------


def _observation_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Flat (low, high) arrays of the values one leaf can take."""
    if isinstance(space, spaces.Box):
        return space.low.reshape(-1), space.high.reshape(-1)
    if isinstance(space, spaces.Discrete):
        return np.zeros(int(space.n), np.uint8), np.ones(int(space.n), np.uint8)
    if isinstance(space, TextChoices):
        return np.zeros(space.size, np.uint8), np.ones(space.size, np.uint8)
    if isinstance(space, spaces.MultiBinary):
        size = int(np.prod(space.shape))
        return np.zeros(size, np.uint8), np.ones(size, np.uint8)
    start = np.asarray(space.start).reshape(-1)
    return start, start + np.asarray(space.nvec).reshape(-1) - 1  # MultiDiscrete


def _is_float_box(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and space.dtype.kind == "f"


def _exact_integer_limit(dtype: np.dtype) -> int:
    """Every integer of magnitude up to this is exactly representable in float `dtype`."""
    return 2 ** (np.finfo(dtype).nmant + 1)


def _flat_observation_dtype(leaves) -> np.dtype:
    """The narrowest dtype holding every leaf's values exactly.

    Integer-valued leaves (integer/bool Boxes, one-hots, bits, MultiDiscrete) are judged by
    their value range, not their dtype, so that e.g. a one-hot next to an int8 range stays
    int8. Float Boxes promote to their common float type, widened to float64 if the integer
    leaves need it; beyond float64's exact range the mix is refused."""
    ranges = []  # (largest magnitude, low, high, leaf) of each integer-valued leaf
    for leaf in leaves:
        if not _is_float_box(leaf.space) and leaf.size:
            lows, highs = _observation_bounds(leaf.space)
            low, high = int(lows.min()), int(highs.max())
            ranges.append((max(abs(low), abs(high)), low, high, leaf))
    floats = [leaf.space.dtype for leaf in leaves if _is_float_box(leaf.space)]
    if not floats:
        return _int_dtype(min(r[1] for r in ranges), max(r[2] for r in ranges))
    widest = max(ranges, key=lambda r: r[0], default=(0, 0, 0, None))
    for dtype in (np.result_type(*floats), np.dtype(np.float64)):
        if widest[0] <= _exact_integer_limit(dtype):
            return dtype
    culprit = widest[3]
    raise ValueError(
        f"observation leaf {culprit.name} ({culprit.space!r}) cannot be stored exactly next "
        f"to float leaves in one Box: its integer range exceeds float64's exact range "
        f"({_exact_integer_limit(np.float64)}); narrow its bounds or observe it separately"
    )


class StructuredBox(spaces.Box):
    """The flat Box of a Dict/Tuple observation, naming where each leaf lives in a row.

    Everything that handles Boxes handles it; `leaves` (Leaf: path, space, offset, size) lets
    a policy encode each leaf on its own. It holds only the kept leaves, which pickle."""

    def __init__(self, low, high, shape, dtype, leaves):
        super().__init__(low, high, shape, dtype)
        self.leaves = tuple(leaves)

    def __repr__(self) -> str:
        names = ", ".join(f"{leaf.name}: {leaf.space}" for leaf in self.leaves)
        return f"StructuredBox({self.shape}, {self.dtype}; {names})"


_warned_drops: set[str] = set()


class DroppedSubspacesWarning(UserWarning):
    """Subspaces of an observation no flat row can hold (MiniGrid's `mission` text)."""


# shown as one plain line on stderr (below), not as Python's "file:line: UserWarning" with
# a source line at every start; code that asks for warnings (catch_warnings) still gets it
warnings.filterwarnings("ignore", category=DroppedSubspacesWarning)


def _warn_dropped(space: spaces.Space, dropped) -> None:
    """One warning per process naming the dropped subspaces; none in vec worker processes
    (the parent built the same layout and warned already)."""
    names = ", ".join(f"{_path_name(path)} ({type(sub).__name__})" for path, sub in dropped)
    text = (f"observation subspaces dropped (no encoder for them): {names}; the policy sees "
            "the rest")
    if text in _warned_drops or multiprocessing.parent_process() is not None:
        return
    _warned_drops.add(text)
    print(f"puffer-tui: note: {text}", file=sys.stderr, flush=True)
    warnings.warn(text, DroppedSubspacesWarning, stacklevel=3)


class ObservationLayout:
    """Where each leaf of a Gymnasium observation space lives in one flat Box row.

        layout = ObservationLayout(gym_env.observation_space)
        layout.space                     # the flat Box (what the buffers hold)
        layout.flatten(obs, out=row)     # structure -> flat row (written in place)
        layout.unflatten(batch)          # (..., flat) numpy array or torch tensor -> structure
    """

    def __init__(self, space: spaces.Space):
        self.original_space = space
        self.passthrough = isinstance(space, spaces.Box)
        self.dropped = ()
        if self.passthrough:
            self.leaves = (Leaf((), space, 0, int(np.prod(space.shape))),)
            self.space = space
            return
        leaves, offset, dropped = [], 0, []
        for path, sub in iter_leaves(space, dropped=dropped, leaf_spaces=_OBSERVATION_LEAVES):
            size = _observation_size(sub)
            leaves.append(Leaf(path, sub, offset, size))
            offset += size
        self.dropped = tuple(_path_name(path) for path, _ in dropped)
        if offset == 0:
            raise ValueError(f"observation space {space!r} has no elements to observe"
                             + (f" (dropped: {', '.join(self.dropped)})" if dropped else ""))
        if dropped:
            _warn_dropped(space, dropped)
        self.leaves = tuple(leaves)
        dtype = _flat_observation_dtype(self.leaves)
        lows, highs = zip(*(_observation_bounds(leaf.space) for leaf in leaves), strict=True)
        self.space = StructuredBox(
            np.concatenate(lows).astype(dtype), np.concatenate(highs).astype(dtype),
            (offset,), dtype, self.leaves,
        )

    @property
    def size(self) -> int:
        return int(np.prod(self.space.shape))

    def flatten(self, observation, out: np.ndarray | None = None) -> np.ndarray:
        """Write one observation into `out` (a row of the flat space; allocated if None)."""
        if out is None:
            out = np.zeros(self.space.shape, self.space.dtype)
        if self.passthrough:
            value = np.asarray(observation)
            if value.shape != out.shape:
                raise ValueError(
                    f"observation has shape {value.shape}, expected {out.shape} "
                    f"for {self.original_space!r}"
                )
            np.copyto(out, value, casting="unsafe")
            return out
        for leaf in self.leaves:
            value = _lookup(observation, leaf.path)
            part = out[leaf.offset : leaf.offset + leaf.size]
            if isinstance(leaf.space, spaces.Discrete):
                index = int(value) - int(leaf.space.start)
                if not 0 <= index < leaf.size:
                    raise ValueError(f"observation {leaf.name} = {value} is outside {leaf.space}")
                part[:] = 0
                part[index] = 1
                continue
            if isinstance(leaf.space, TextChoices):
                try:
                    ones = leaf.space.one_hots(value)
                except ValueError as exc:
                    raise ValueError(f"observation {leaf.name}: {exc}") from None
                part[:] = 0
                part[list(ones)] = 1
                continue
            value = np.asarray(value)
            if value.size != leaf.size:
                raise ValueError(
                    f"observation {leaf.name} has shape {value.shape}, expected "
                    f"{leaf.space.shape} for {leaf.space!r}"
                )
            np.copyto(part, value.reshape(-1), casting="unsafe")
        return out

    def unflatten(self, flat):
        """The original structure from flat rows of shape (..., *space.shape).

        Leading (batch) dimensions are kept on every leaf; a single row gives exactly what the
        Gymnasium space would contain (Discrete -> np.int64 scalar, Box -> array of its dtype).
        Works on numpy arrays and torch tensors alike."""
        if self.passthrough:
            return _cast(flat, self.space.dtype)
        if tuple(flat.shape[-1:]) != self.space.shape:
            raise ValueError(
                f"flat observations have shape {tuple(flat.shape)}, expected (..., {self.size})"
            )
        values = {}
        for leaf in self.leaves:
            part = flat[..., leaf.offset : leaf.offset + leaf.size]
            lead = tuple(part.shape[:-1])
            if isinstance(leaf.space, spaces.Discrete):
                index = part.argmax(-1) + int(leaf.space.start)
                values[leaf.path] = _cast(index, leaf.space.dtype)
            elif isinstance(leaf.space, TextChoices):
                values[leaf.path] = _texts(leaf.space, part)
            else:
                shaped = part.reshape((*lead, *leaf.space.shape))
                values[leaf.path] = _cast(shaped, leaf.space.dtype)
        return _assemble(self.original_space, values)


def _observation_size(space: spaces.Space) -> int:
    """How many inputs of a flat row one observation leaf takes."""
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, TextChoices):
        return space.size
    return int(np.prod(space.shape))


def _texts(space: TextChoices, part):
    """The texts of flat one-hot rows (..., space.size): a str for one row, else an array."""
    values = np.asarray(part.cpu() if hasattr(part, "cpu") else part)
    lead = values.shape[:-1]
    rows = values.reshape(-1, space.size)
    ends = [*space.starts[1:], space.size]
    choices = np.stack([rows[:, start:end].argmax(1)
                        for start, end in zip(space.starts, ends, strict=True)], 1)
    texts = [space.text_of(choice) for choice in choices]
    return texts[0] if not lead else np.array(texts, dtype=object).reshape(lead)


def flatten_by_leaves(observation, flat_space: StructuredBox) -> np.ndarray:
    """One Dict/Tuple observation as the row of `flat_space` (an ObservationLayout's space,
    which keeps the leaves): what a trained policy takes when only its spaces are at hand."""
    layout = ObservationLayout.__new__(ObservationLayout)
    layout.original_space, layout.passthrough, layout.dropped = flat_space, False, ()
    layout.leaves, layout.space = flat_space.leaves, flat_space
    return layout.flatten(observation)


def unflatten_observations(space: spaces.Space, flat):
    """Convenience: `ObservationLayout(space).unflatten(flat)`; build the layout once instead
    when calling this every step."""
    return ObservationLayout(space).unflatten(flat)


# ---- actions --------------------------------------------------------------------------------


class ActionLayout:
    """The flat action space for a Gymnasium action space, and the conversion back.

        layout = ActionLayout(gym_env.action_space)
        layout.space                     # Discrete, MultiDiscrete or Box (what buffers hold)
        layout.unflatten(row)            # one buffer row -> the action gym_env.step expects
        layout.flatten(action)           # a Gymnasium action -> one buffer row
    """

    def __init__(self, space: spaces.Space):
        self.original_space = space
        leaves, offset = [], 0
        for path, sub in iter_leaves(space):
            if isinstance(sub, spaces.Box) and sub.dtype.kind != "f":
                raise ValueError(
                    f"action space {space!r}: Box {_path_name(path)} has integer dtype "
                    f"{sub.dtype}; integer actions must use Discrete or MultiDiscrete"
                )
            size = 1 if isinstance(sub, spaces.Discrete) else int(np.prod(sub.shape))
            leaves.append(Leaf(path, sub, offset, size))
            offset += size
        self.leaves = tuple(leaves)
        continuous = [leaf for leaf in leaves if isinstance(leaf.space, spaces.Box)]
        discrete = [leaf for leaf in leaves if not isinstance(leaf.space, spaces.Box)]
        if continuous and discrete:
            raise ValueError(
                f"action space {space!r} mixes discrete ({', '.join(x.name for x in discrete)}) "
                f"and continuous ({', '.join(x.name for x in continuous)}) components; "
                "split it into separate envs or make every component discrete or every one Box"
            )
        if not leaves or offset == 0:
            raise ValueError(f"action space {space!r} has no components")
        self.continuous = bool(continuous)
        if isinstance(space, spaces.Discrete):
            self.space = spaces.Discrete(int(space.n))
        elif isinstance(space, spaces.Box):
            self.space = spaces.Box(
                space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32
            )
        elif self.continuous:
            low = np.concatenate([x.space.low.reshape(-1) for x in leaves]).astype(np.float32)
            high = np.concatenate([x.space.high.reshape(-1) for x in leaves]).astype(np.float32)
            self.space = spaces.Box(low, high, (offset,), np.float32)
        else:
            self.space = spaces.MultiDiscrete(np.concatenate([_nvec(x.space) for x in leaves]))

    def unflatten(self, row: np.ndarray):
        """One buffer row (int32 indices from 0, or float32 values) -> a Gymnasium action."""
        row = np.asarray(row).reshape(-1)
        values = {}
        for leaf in self.leaves:
            part = row[leaf.offset : leaf.offset + leaf.size]
            sub = leaf.space
            if isinstance(sub, spaces.Discrete):
                values[leaf.path] = sub.dtype.type(int(part[0]) + int(sub.start))
            elif isinstance(sub, spaces.MultiDiscrete):
                values[leaf.path] = (part.reshape(sub.shape) + sub.start).astype(sub.dtype)
            else:  # Box, MultiBinary: the values themselves
                values[leaf.path] = part.reshape(sub.shape).astype(sub.dtype)
        return _assemble(self.original_space, values)

    def flatten(self, action) -> np.ndarray:
        """A Gymnasium action -> one buffer row (the inverse of `unflatten`)."""
        dtype = np.float32 if self.continuous else np.int32
        row = np.zeros(int(np.prod(self.space.shape)), dtype)
        for leaf in self.leaves:
            value = np.asarray(_lookup(action, leaf.path))
            if isinstance(leaf.space, (spaces.Discrete, spaces.MultiDiscrete)):
                value = value - leaf.space.start
            row[leaf.offset : leaf.offset + leaf.size] = value.reshape(-1)
        return row.reshape(self.space.shape)


def _nvec(space: spaces.Space) -> np.ndarray:
    """Sizes of a discrete leaf's components."""
    if isinstance(space, spaces.Discrete):
        return np.array([int(space.n)], np.int64)
    if isinstance(space, spaces.MultiBinary):
        return np.full(int(np.prod(space.shape)), 2, np.int64)
    return np.asarray(space.nvec, np.int64).reshape(-1)

