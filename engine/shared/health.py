"""Per-epoch guards against values that silently ruin a run: NaN / infinity and a full disk.

The trainer calls `check_batch` once per epoch on the collected batch (before learning from
it) and `check_update` after the update; either raises NonFiniteError naming the source
(the agent rows and fields of the batch, the loss terms, or the gradients), and the engine
pauses the run. Checks are whole-tensor reductions, once per epoch: microseconds to a few
milliseconds next to an epoch's seconds. torch is imported lazily: the engine's command
queue uses `is_disk_full` before torch is loaded.
"""

from __future__ import annotations

import errno

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_LOSS_TERMS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")
_SHOW = 8  # most rows named in a message


class NonFiniteError(RuntimeError):
    """NaN or infinity found; `source` says where (env rows, loss term, gradients);
    `weights_finite` whether the policy's weights are still usable."""

    def __init__(self, source: str, weights_finite: bool):
        super().__init__(source)
        self.source = source
        self.weights_finite = weights_finite


def is_disk_full(error: BaseException) -> bool:
    """True for ENOSPC / EDQUOT, also when wrapped (torch raises RuntimeError from C++ with
    the OSError only in the chain, or only in the text)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return True
        if "No space left on device" in str(error) or "Disk quota exceeded" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def all_finite(tensor) -> bool:
    """No NaN or infinity in `tensor`. The sum is a fast exact test when it is finite (any NaN
    or infinity makes it non-finite); a non-finite sum may be an overflow of large finite
    values, so then every element is checked. About 20x cheaper than isfinite().all()."""
    import torch

    if not tensor.is_floating_point() or tensor.numel() == 0:
        return True
    return bool(torch.isfinite(tensor.sum())) or bool(torch.isfinite(tensor).all())


def _bad_rows(values):
    """[segments, horizon, ...] -> bool [segments, horizon]: some value is not finite."""
    import torch

    bad = ~torch.isfinite(values)
    return bad.reshape(*bad.shape[:2], -1).any(-1) if bad.dim() > 2 else bad


def _describe(field: str, bad, num_agents: int) -> str:
    import torch

    segments = torch.nonzero(bad.any(1)).flatten().tolist()
    # At the start of a batch agent row i fills segment i; later segments go to whichever
    # row finishes first, so their row is not recorded.
    rows = sorted({s for s in segments if s < num_agents})
    steps = int(bad.sum())
    text = f"{field} of {steps} step(s) in {len(segments)} segment(s)"
    if rows:
        shown = ", ".join(map(str, rows[:_SHOW])) + (", ..." if len(rows) > _SHOW else "")
        text += f" (agent rows {shown})"
    else:
        shown = ", ".join(map(str, segments[:_SHOW])) + (", ..." if len(segments) > _SHOW else "")
        text += f" (segments {shown})"
    return text


def check_batch(data: dict, num_agents: int) -> None:
    """Raise NonFiniteError when the env handed back NaN/inf rewards or observations."""

    problems = []
    for field in ("rewards", "observations"):
        values = data.get(field)
        if values is None or all_finite(values):  # integer observations cannot hold NaN
            continue
        problems.append(_describe(field, _bad_rows(values), num_agents))
    if problems:
        raise NonFiniteError("the env returned non-finite " + "; ".join(problems)
                             + " (the batch was discarded before learning from it)",
                             weights_finite=True)


def weights_finite(module) -> bool:
    return all(all_finite(p.detach()) for p in module.parameters())


def check_update(stats: dict, policy) -> None:
    """Raise NonFiniteError when the update's loss terms, gradients or weights are not finite."""
    import math


    terms = [name for name in _LOSS_TERMS
             if name in stats and not math.isfinite(float(stats[name]))]
    finite = weights_finite(policy)
    if terms:
        # terms averaged over the epoch's minibatches: once one minibatch went bad, the
        # weights carry it into the later ones, so several terms may be listed
        raise NonFiniteError(f"non-finite loss term(s): {', '.join(terms)}", finite)
    grads = [name for name, p in policy.named_parameters()
             if p.grad is not None and not all_finite(p.grad)]
    if grads or not finite:
        where = f"gradients of {', '.join(grads[:_SHOW])}" if grads else "the weights"
        raise NonFiniteError(f"non-finite values in {where} after the update "
                             f"(the loss terms were finite)", finite)
