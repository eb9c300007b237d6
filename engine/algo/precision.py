"""The precision of the policy's passes: float32, or bfloat16 under torch.autocast (matrix
products in bfloat16; the heads' outputs cast back to float32 before the loss, whose arithmetic,
like the advantages and the optimizer's state, stays float32). The update's forward passes and
the collection's use the same context, so the log-probabilities an update compares were
computed alike."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

PRECISIONS = ("float32", "bfloat16")


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be float32 or bfloat16, got {precision!r}")
    return precision


def autocast(precision: str, device: torch.device):
    """The context of the policy's forward passes in `precision` on `device`."""
    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


class CollectionCasts:
    """The collection's forward passes under bfloat16, each weight cast once a collection.

    autocast casts a float32 weight to bfloat16 on every forward pass, and caches the copy
    only while an autocast context is open (and never in inference mode). Around one step
    that cache dies with the step: casting Pong's 3136 x 512 layer anew each step cost more
    than half the forward pass of 8 frames (docs/learning-history.md). This context keeps an outer (disabled) autocast
    open for the whole collection, so each step's `step()` context (no_grad and autocast)
    reuses the copies; nothing else runs under autocast. The weights do not change during a
    collection (the learner runs after it), but should a safe point load new ones in place,
    `refresh()` sees their version counters move and drops the stale copies.
    In float32 it is inference mode a step, as before."""

    def __init__(self, params: list[torch.Tensor], device: torch.device, bfloat16: bool,
                 autocast: Callable):
        # autocast: the learner's own context (Learner.autocast), so that collection and
        # update compute the log-probs an update compares in the same precision
        self.params, self.device, self.bfloat16 = params, device, bfloat16
        self.autocast = autocast
        self._outer = None
        self._versions = None

    def _version(self) -> int:
        return sum(p._version for p in self.params)

    def __enter__(self) -> CollectionCasts:
        if self.bfloat16:
            self._outer = torch.autocast(self.device.type, enabled=False)
            self._outer.__enter__()
            self._versions = self._version()
        return self

    def __exit__(self, *exc) -> None:
        if self._outer is not None:  # leaving the outermost autocast clears its cache
            self._outer.__exit__(*exc)
            self._outer = None

    def refresh(self) -> None:
        """Drop the cached copies if a weight changed in place since they were made."""
        if self._outer is not None and self._version() != self._versions:
            torch.clear_autocast_cache()
            self._versions = self._version()

    def step(self):
        """The context of one step's forward passes."""
        if not self.bfloat16:
            return torch.inference_mode()
        stack = contextlib.ExitStack()
        stack.enter_context(torch.no_grad())
        stack.enter_context(self.autocast())
        return stack
