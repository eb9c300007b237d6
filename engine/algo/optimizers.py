"""The trainer's optimizer (`train.optimizer`): Adam, or Muon for the hidden matrices.

    optimizer = make_optimizer(policy, config.train)

adam: one Adam over every parameter; its fused kernel where torch has one for the device
(CPU and CUDA: one pass over all parameters instead of a dozen small ops per tensor).

muon: `torch.optim.Muon` (momentum + Newton-Schulz orthogonalised updates; PufferLib 3.0's
default) for the hidden 2-D weight matrices, and Adam for the rest. Muon only takes 2-D
parameters, and its authors keep the input and output layers on Adam: biases, the encoder's
input table (an embedding: one row per cell value), convolution kernels, the action and value
heads. Muon's step is scaled to match Adam's update size (`adjust_lr_fn="match_rms_adamw"`),
so one `train.learning_rate` drives both; it has no weight decay, like the Adam beside it.
`MuonWithAdam` drives the two as one optimizer; its state_dict holds both states.
"""

from __future__ import annotations

import torch

from puffer_tui.engine.shared.config import ConfigError

_HEADS = ("actor.", "critic.")


def muon_parameter_names(policy: torch.nn.Module) -> list[str]:
    """Names of the parameters Muon trains: 2-D weights that are neither the encoder's
    input table nor an output head (DDP's `module.` prefix is looked through)."""
    names = []
    for name, param in policy.named_parameters():
        bare = name.removeprefix("module.")
        if param.ndim == 2 and not bare.startswith(_HEADS) and not bare.endswith("table"):
            names.append(name)
    return names


def _adam(params, train, device: torch.device) -> torch.optim.Adam:
    fused = device.type in ("cpu", "cuda")
    return torch.optim.Adam(params, lr=train.learning_rate, eps=train.adam_eps,
                            betas=(train.adam_beta1, train.adam_beta2), fused=fused)


class MuonWithAdam:
    """Muon for some parameters, Adam for the others, stepped together. `param_groups`
    lists Adam's groups first, then Muon's (the learner sets `lr` on each)."""

    def __init__(self, muon: torch.optim.Optimizer, adam: torch.optim.Optimizer):
        self.muon, self.adam = muon, adam

    @property
    def param_groups(self) -> list[dict]:
        return self.adam.param_groups + self.muon.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.adam.zero_grad(set_to_none=set_to_none)
        self.muon.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        self.adam.step()
        self.muon.step()

    def state_dict(self) -> dict:
        return {"adam": self.adam.state_dict(), "muon": self.muon.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if set(state) != {"adam", "muon"}:
            raise ValueError("the checkpoint's optimizer state is a single optimizer's, this "
                             "trainer uses train.optimizer muon (Muon + Adam); resume with "
                             "the run's own train.optimizer")
        self.adam.load_state_dict(state["adam"])
        self.muon.load_state_dict(state["muon"])


def check_available(train) -> None:
    """ConfigError naming the fix when this torch lacks the optimizer `train` asks for (cheap:
    preflight can call it before a run dir exists)."""
    if train.optimizer == "muon" and not hasattr(torch.optim, "Muon"):
        raise ConfigError(f"train.optimizer muon needs torch.optim.Muon (torch >= 2.9), this is "
                          f"torch {torch.__version__}; upgrade torch or use train.optimizer adam")


def make_optimizer(policy: torch.nn.Module, train, device: torch.device | None = None):
    """The optimizer `train.optimizer` names, over `policy`'s parameters."""
    device = device or next(policy.parameters()).device
    if train.optimizer == "adam":
        return _adam(policy.parameters(), train, device)
    if train.optimizer != "muon":
        raise ValueError(f"train.optimizer must be adam or muon, got {train.optimizer!r}")
    check_available(train)
    muon_names = set(muon_parameter_names(policy))
    named = list(policy.named_parameters())
    matrices = [p for n, p in named if n in muon_names]
    rest = [p for n, p in named if n not in muon_names]
    if not matrices:  # nothing Muon can train (e.g. no hidden layer): plain Adam
        return _adam(rest, train, device)
    muon = torch.optim.Muon(matrices, lr=train.learning_rate, weight_decay=0.0,
                            momentum=train.adam_beta1, adjust_lr_fn="match_rms_adamw")
    return MuonWithAdam(muon, _adam(rest, train, device))
