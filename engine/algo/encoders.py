"""Observation encoders: [N, *obs_shape] -> [N, hidden] features for the policy's core.

    encoder = make_encoder(observation_space, hidden_size, kind="auto", cnn_channels=32)

* `ObservationEncoder` (vectors): one-hot cells for small-integer grids, else floats.
* `ImageEncoder` (images: H x W x C, C x H x W or H x W Boxes with H, W >= 16): a
  Nature-CNN-like stack (8x8/4, 4x4/2, 3x3/1; a 3x3 stack for images under 36 pixels),
  channels first internally. Integer pixels are scaled to [0, 1] inside forward, on the
  device the observations were copied to (the buffers keep uint8: 4x less to store and copy).
* `LeafEncoders` (Dict/Tuple observations flattened into a `StructuredBox` by
  envs/gym_spaces.py): one encoder per leaf over its slice of the flat row, concatenated and
  mixed by one linear layer, so every leaf (MiniGrid's `image` and `direction`) reaches the
  policy.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from puffer_tui.engine.algo.one_hot_sum import fits, one_hot_sum
from puffer_tui.envs.image_spaces import MIN_IMAGE_SIDE, has_image, image_layout  # noqa: F401
from puffer_tui.envs.text_choices import TextChoices

# train.activation: the MLP's nonlinearity (tanh is the usual choice for continuous control)
ACTIVATIONS = {"gelu": nn.functional.gelu, "tanh": torch.tanh, "relu": nn.functional.relu}
MAX_ONE_HOT_VALUES = 16  # integer observations with at most this many values are one-hot
NATURE_MIN_SIDE = 36  # the 8x8/4, 4x4/2, 3x3/1 stack needs at least this many pixels


def _init(layer, gain: float = np.sqrt(2)):
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class ObservationEncoder(nn.Module):
    """[N, *obs_shape] -> [N, hidden]: one-hot cells for small-integer grids, else floats.

    A linear layer stored as `table` [inputs, hidden] + `bias`. One-hot grids are mostly
    zeros (squared: 5 non-zero cells of 121), so on CPU the layer sums the table rows of the
    non-zero cells (engine/algo/one_hot_sum.py for uint8 cells, else embedding_bag) instead of
    multiplying a mostly-zero matrix: the same function, several times cheaper forward and
    backward. On GPUs, and for dense grids, the matmul.
    """

    SPARSE_FRACTION = 0.25  # use the row sums when at most this fraction of cells is non-zero

    def __init__(self, space: spaces.Box, hidden_size: int, activation: str = "gelu"):
        super().__init__()
        self.activation = ACTIVATIONS[activation]
        if not isinstance(space, spaces.Box):
            raise TypeError(f"observations must be a Box space, got {space!r}")
        self.obs_shape = tuple(space.shape)
        self.cells = int(np.prod(self.obs_shape))
        self.output_size = hidden_size
        self.one_hot_values = 0
        self.loaded_from_numbers = False  # set by a checkpoint whose table read values as numbers
        if np.issubdtype(space.dtype, np.integer) and self.cells:
            low, high = int(np.min(space.low)), int(np.max(space.high))
            if low >= 0 and high < MAX_ONE_HOT_VALUES:
                self.one_hot_values = high + 1
        # Value 0 needs no input of its own: the bias stands for "every cell is 0". Input
        # (v - 1) * cells + cell is "cell holds value v".
        width = self.cells * (self.one_hot_values - 1) if self.one_hot_values else self.cells
        weight = torch.empty(hidden_size, max(width, 1))
        nn.init.orthogonal_(weight, np.sqrt(2))
        self.table = nn.Parameter(weight.t().contiguous())
        self.bias = nn.Parameter(torch.zeros(hidden_size))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A table saved when these cells were read as numbers ([cells, hidden]: MiniGrid's
        # image before its codes' bounds were known, envs/minigrid_codes.py) becomes the
        # one-hot table of the same function: "cell c holds v" adds v times c's row.
        key = prefix + "table"
        saved = state_dict.get(key)
        self.loaded_from_numbers = False  # this load's: a later one of a new table clears it
        if saved is not None and self.one_hot_values > 2 and \
                tuple(saved.shape) == (self.cells, self.table.shape[1]):
            values = torch.arange(1, self.one_hot_values, dtype=saved.dtype, device=saved.device)
            state_dict[key] = (values[:, None, None] * saved[None]).reshape(-1, saved.shape[1])
            self.loaded_from_numbers = True
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        flat = obs.reshape(obs.shape[0], -1)
        if not self.one_hot_values:
            x = torch.addmm(self.bias, flat.float(), self.table)
        elif self.one_hot_values == 1:
            x = self.bias.expand(flat.shape[0], -1)
        else:
            x = None
            # traced (export): the dense product, which ONNX and TorchScript can hold
            if flat.device.type == "cpu" and not torch.jit.is_tracing():
                x = self._sparse(flat)
            if x is None:
                one_hot = torch.cat([flat == v for v in range(1, self.one_hot_values)], 1)
                x = torch.addmm(self.bias, one_hot.float(), self.table)
        return self.activation(x)

    def _sparse(self, flat: torch.Tensor) -> torch.Tensor | None:
        """Sum of the table rows of each row's non-zero cells, or None if too many."""
        if int(torch.count_nonzero(flat)) > self.SPARSE_FRACTION * flat.numel():
            return None
        if fits(flat, self.table):  # uint8 cells: the C kernels, both ways
            return one_hot_sum(flat, self.table, self.bias)
        values = flat.reshape(-1)
        nonzero = values.nonzero().squeeze(1)
        rows = nonzero // self.cells
        index = (values[nonzero].long() - 1) * self.cells + nonzero % self.cells
        offsets = torch.searchsorted(rows, torch.arange(flat.shape[0]))
        summed = nn.functional.embedding_bag(index, self.table, offsets, mode="sum")
        return summed + self.bias


class ImageEncoder(nn.Module):
    """[N, *image_shape] (any dtype) -> [N, hidden]: conv stack, flatten, linear, ReLU."""

    def __init__(self, space: spaces.Box, hidden_size: int, channels: int = 32):
        super().__init__()
        self.layout = image_layout(space.shape)
        if self.layout is None:
            raise ValueError(f"{space} is not an image (H x W x C, C x H x W or H x W with "
                             f"H, W >= {MIN_IMAGE_SIDE})")
        shape = tuple(space.shape)
        if self.layout == "hwc":
            c, h, w = shape[2], shape[0], shape[1]
        elif self.layout == "chw":
            c, h, w = shape
        else:  # "hw": one channel
            c, h, w = 1, *shape
        self.obs_shape = shape
        self.output_size = hidden_size
        # Integer pixels are scaled by their top value (255 for uint8 frames) on the device.
        high = float(np.max(space.high)) if space.dtype.kind in "ui" else 1.0
        self.scale = 1.0 / high if np.isfinite(high) and high > 1 else 1.0
        if min(h, w) >= NATURE_MIN_SIDE:
            kernels = ((8, 4), (4, 2), (3, 1))
        else:
            kernels = ((3, 2), (3, 2), (3, 1))
        widths = (channels, 2 * channels, 2 * channels)
        layers, inputs = [], c
        for (kernel, stride), width in zip(kernels, widths, strict=True):
            layers += [_init(nn.Conv2d(inputs, width, kernel, stride)), nn.ReLU()]
            inputs = width
        self.convs = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, c, h, w)).shape[1]
        self.linear = _init(nn.Linear(flat, hidden_size))
        # Channels-last kernels: oneDNN's (and cuDNN's) fast path, faster in float32 and
        # more so in bfloat16 (docs/measurement-log.md). Same weights, same results.
        self.convs.to(memory_format=torch.channels_last)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # One pass over the float frames, not four: the layout change runs on the raw pixels
        # (uint8: a quarter of the bytes) and the conversion, the scaling and autocast's cast
        # are one kernel writing the dtype the first conv reads. The frames are most of an
        # update's memory traffic (256 Atari frames: 29 MB as float32).
        x = obs.reshape(obs.shape[0], *self.obs_shape)
        if self.layout == "hwc":
            x = x.permute(0, 3, 1, 2)
        elif self.layout == "hw":
            x = x.unsqueeze(1)
        x = x.contiguous(memory_format=torch.channels_last)
        # Only 8-bit pixels start in bfloat16: every value converts exactly (wider integers
        # would round twice); others convert to float32 and autocast casts them in the conv.
        dtype = _compute_dtype(x.device) if x.dtype in (torch.uint8, torch.int8) \
            else torch.float32
        if self.scale != 1.0 and dtype == torch.float32 and not x.is_floating_point():
            x = x * self.scale  # integer * float: float32, converted and scaled in one pass
        elif x.dtype != dtype:
            x = x.to(dtype)
            if self.scale != 1.0:
                x.mul_(self.scale)  # our copy: scaled in place
        elif self.scale != 1.0:
            x = x * self.scale
        return nn.functional.relu(self.linear(self.convs(x)))


def _compute_dtype(device: torch.device) -> torch.dtype:
    """The dtype convolutions compute in here: autocast's (bfloat16 under train.precision
    bfloat16) or float32. 8-bit pixels convert to bfloat16 exactly, and the scaled product
    rounds once either way, so starting in bfloat16 gives the conv the same input as
    autocast's cast of the float32 frame would."""
    if torch.is_autocast_enabled(device.type):
        return torch.get_autocast_dtype(device.type)
    return torch.float32


def _leaf_box(flat_space: spaces.Box, leaf) -> spaces.Box:
    """The Box a leaf's slice of the flat row is: its own Box, or its flat bounds (one-hots,
    bits, MultiDiscrete values)."""
    if isinstance(leaf.space, spaces.Box):
        return leaf.space
    low = flat_space.low[leaf.offset : leaf.offset + leaf.size]
    high = flat_space.high[leaf.offset : leaf.offset + leaf.size]
    dtype = np.uint8 if int(high.max(initial=0)) < 256 and int(low.min(initial=0)) >= 0 \
        else flat_space.dtype
    return spaces.Box(low.astype(dtype), high.astype(dtype), (leaf.size,), dtype)


class LeafEncoders(nn.Module):
    """[N, flat] rows of a StructuredBox -> [N, hidden]: each leaf's slice through its own
    encoder (a CNN for images, else ObservationEncoder), concatenated, one linear + GELU."""

    def __init__(self, space, hidden_size: int, kind: str = "auto", channels: int = 32):
        super().__init__()
        self.slices = []
        encoders = []
        for leaf in space.leaves:
            box = _leaf_box(space, leaf)
            self.slices.append((leaf.offset, leaf.size))
            encoders.append(_encoder_for(box, hidden_size, kind, channels))
        self.names = tuple(leaf.name for leaf in space.leaves)
        # text leaves (MiniGrid's mission, envs/minigrid_mission.py), which a checkpoint from
        # before they were read lacks
        self.text_leaves = tuple(i for i, leaf in enumerate(space.leaves)
                                 if isinstance(leaf.space, TextChoices))
        self.loaded_without_text = ()  # names of the text leaves the loaded checkpoint lacked
        self.encoders = nn.ModuleList(encoders)
        self.output_size = hidden_size
        self.mix = _init(nn.Linear(hidden_size * len(encoders), hidden_size))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A policy saved when the mission text was dropped has no encoder for it: its leaves'
        # encoders move to their places, the text leaves keep this model's fresh ones, and
        # their columns of the mix start at zero, so the loaded policy is the saved function
        # and learns to read the mission from there.
        self.loaded_without_text = ()
        saved_count = len({key[len(prefix) + len("encoders."):].split(".")[0]
                           for key in state_dict if key.startswith(prefix + "encoders.")})
        mix = state_dict.get(prefix + "mix.weight")
        kept = [i for i in range(len(self.encoders)) if i not in self.text_leaves]
        hidden = self.output_size
        if self.text_leaves and mix is not None and saved_count == len(kept) and \
                tuple(mix.shape) == (hidden, hidden * len(kept)):
            moved = {}
            for old, new in enumerate(kept):
                old_prefix, new_prefix = f"{prefix}encoders.{old}.", f"{prefix}encoders.{new}."
                for key in [k for k in state_dict if k.startswith(old_prefix)]:
                    moved[new_prefix + key[len(old_prefix):]] = state_dict.pop(key)
            for i in self.text_leaves:
                for name, value in self.encoders[i].state_dict().items():
                    moved[f"{prefix}encoders.{i}.{name}"] = value.detach().clone()
            state_dict.update(moved)
            wide = mix.new_zeros((hidden, hidden * len(self.encoders)))
            for old, new in enumerate(kept):
                wide[:, new * hidden:(new + 1) * hidden] = mix[:, old * hidden:(old + 1) * hidden]
            state_dict[prefix + "mix.weight"] = wide
            self.loaded_without_text = tuple(self.names[i] for i in self.text_leaves)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        flat = obs.reshape(obs.shape[0], -1)
        parts = [encoder(flat[:, offset : offset + size])
                 for (offset, size), encoder in zip(self.slices, self.encoders, strict=True)]
        return nn.functional.gelu(self.mix(torch.cat(parts, 1)))


def _encoder_for(box: spaces.Box, hidden_size: int, kind: str, channels: int,
                 activation: str = "gelu") -> nn.Module:
    if kind != "mlp" and image_layout(box.shape) is not None:
        return ImageEncoder(box, hidden_size, channels)
    return ObservationEncoder(box, hidden_size, activation)


def check_encoder_choice(space, kind: str) -> None:
    """ValueError naming the problem and the fix when `train.policy` `kind` cannot encode
    `space` (cheap: no model is built; preflight calls it before a run dir exists)."""
    if kind == "cnn" and not has_image(space):
        raise ValueError(
            f"train.policy cnn needs an image observation (H x W x C, C x H x W or H x W with "
            f"H, W >= {MIN_IMAGE_SIDE}), this env observes {space}; use train.policy auto or mlp")


def make_encoder(space, hidden_size: int, kind: str = "auto", channels: int = 32,
                 activation: str = "gelu") -> nn.Module:
    """The encoder for an observation space. `kind`: "auto"/"lstm" (a CNN for images, an MLP
    otherwise), "mlp" (never a CNN), "cnn" (a CNN, refused when there is no image).
    `activation` applies to a vector observation's layer (CNNs and leaf mixes keep theirs)."""
    if not isinstance(space, spaces.Box):
        raise TypeError(f"observations must be a Box space, got {space!r}")
    check_encoder_choice(space, kind)
    if getattr(space, "leaves", None) is not None:
        return LeafEncoders(space, hidden_size, kind, channels)
    return _encoder_for(space, hidden_size, kind, channels, activation)
