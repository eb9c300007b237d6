"""The trainer's optimizer (`train.optimizer`): Adam, or Muon for the hidden matrices.

    optimizer = make_optimizer(policy, config.train)

adam: one Adam over every parameter; its fused kernel where torch has one for the device
(CPU and CUDA: one pass over all parameters instead of a dozen small ops per tensor), called
by `FusedAdam` below rather than through torch.optim.Adam, whose first step imports
torch._dynamo: a second or so of CPU in every run's start-up, for nothing an eager trainer
uses.

muon: `torch.optim.Muon` (momentum + Newton-Schulz orthogonalised updates; PufferLib 3.0's
default) for the hidden 2-D weight matrices, and Adam for the rest. Muon only takes 2-D
parameters, and its authors keep the input and output layers on Adam: biases, the encoder's
input table (an embedding: one row per cell value), convolution kernels, the action and value
heads. Muon's step is scaled to match Adam's update size (`adjust_lr_fn="match_rms_adamw"`),
so one `train.learning_rate` drives both; it has no weight decay, like the Adam beside it.
`MuonWithAdam` drives the two as one optimizer; its state_dict holds both states.

Tested in: tests/engine/algo/test_trainer_options.py.
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


class FusedAdam:
    """Adam by torch's fused kernel (`torch._fused_adam_`, the op `torch.optim.Adam(fused=True)`
    calls on CPU and CUDA), without torch.optim's wrapper and its torch._dynamo import. The
    arithmetic is the kernel's, so the steps are torch.optim.Adam's to the bit; `state_dict` is
    torch.optim.Adam's format (one group; per parameter index a float32 `step`, `exp_avg` and
    `exp_avg_sq`), so checkpoints load in either."""

    def __init__(self, params, lr: float, betas: tuple[float, float], eps: float):
        self.param_groups = [{"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": 0,
                              "amsgrad": False, "maximize": False, "foreach": None,
                              "capturable": False, "differentiable": False, "fused": True,
                              "decoupled_weight_decay": False, "params": list(params)}]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}  # made at a first step
        self._groups_key: tuple | None = None  # what _grouped was built for
        self._grouped: list[tuple] = []

    @property
    def params(self) -> list[torch.Tensor]:
        return self.param_groups[0]["params"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                # as torch.optim: a gradient made outside autograd (numpy_mlp.py's
                # are views of one buffer) has nothing to detach, and views cannot be
                if param.grad.grad_fn is not None:
                    param.grad.detach_()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        # parameters without a gradient (not in this loss) keep their moments, as in torch
        live = [p for p in self.params if p.grad is not None]
        for param in live:
            if param not in self.state:
                self.state[param] = {
                    "step": torch.zeros((), dtype=torch.float32, device=param.device),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format)}
        beta1, beta2 = group["betas"]
        for same, exp_avgs, exp_avg_sqs, steps, step_buffer in self._groups(live):
            step_buffer.add_(1)  # every step count of the group: views of this buffer
            torch._fused_adam_(same, [p.grad for p in same], exp_avgs, exp_avg_sqs, [], steps,
                               amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                               weight_decay=group["weight_decay"], eps=group["eps"],
                               maximize=group["maximize"], grad_scale=None, found_inf=None)

    def _groups(self, live: list[torch.Tensor]) -> list[tuple]:
        """(parameters, exp_avgs, exp_avg_sqs, steps, step buffer) per device and dtype (the
        kernel takes one of each), built again only when the live parameters or the state
        changed: on a small MLP, rebuilding them each step cost a third of the step. The
        step counts become views of one buffer, counted up in one op instead of one each."""
        key = (id(self.state), tuple(map(id, live)))
        if key != self._groups_key:
            by_kind: dict[tuple, list[torch.Tensor]] = {}
            for param in live:
                by_kind.setdefault((param.device, param.dtype), []).append(param)
            self._grouped = []
            for same in by_kind.values():
                states = [self.state[p] for p in same]
                step_buffer = torch.stack([s["step"] for s in states])
                for i, state in enumerate(states):
                    state["step"] = step_buffer[i]
                self._grouped.append((same, [s["exp_avg"] for s in states],
                                      [s["exp_avg_sq"] for s in states],
                                      [s["step"] for s in states], step_buffer))
            self._groups_key = key
        return self._grouped

    def state_dict(self) -> dict:
        index = {param: i for i, param in enumerate(self.params)}
        group = {**self.param_groups[0], "params": list(range(len(self.params)))}
        return {"state": {index[p]: dict(s) for p, s in self.state.items()},
                "param_groups": [group]}

    def load_state_dict(self, state: dict) -> None:
        """torch.optim.Adam's rules: the group's settings come from `state` (lr, betas, eps),
        the moments are cast to each parameter's device and dtype, `step` stays float32."""
        groups = state["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            sizes = [len(g["params"]) for g in groups]
            raise ValueError(f"the optimizer state holds parameter groups of {sizes} "
                             f"parameters, this policy has one group of {len(self.params)}")
        if groups[0].get("amsgrad") or groups[0].get("decoupled_weight_decay"):
            raise ValueError("the optimizer state is AMSGrad's or AdamW's, this trainer "
                             "steps plain Adam")
        loaded = {}
        for position, entry in state["state"].items():
            param = self.params[groups[0]["params"].index(position)]
            if entry["exp_avg"].shape != param.shape:
                raise ValueError(f"the optimizer state of parameter {position} has shape "
                                 f"{tuple(entry['exp_avg'].shape)}, the policy's is "
                                 f"{tuple(param.shape)}")
            step = entry["step"]
            step = step if torch.is_tensor(step) else torch.tensor(float(step))
            loaded[param] = {
                "step": step.to(device=param.device, dtype=torch.float32, copy=True),
                "exp_avg": entry["exp_avg"].to(device=param.device, dtype=param.dtype,
                                               copy=True),
                "exp_avg_sq": entry["exp_avg_sq"].to(device=param.device, dtype=param.dtype,
                                                     copy=True)}
        settings = {k: v for k, v in groups[0].items() if k != "params"}
        settings["betas"] = tuple(settings["betas"])
        self.param_groups[0].update(settings)
        self.state = loaded
        self._groups_key = None


def _adam(params, train, device: torch.device):
    betas = (train.adam_beta1, train.adam_beta2)
    if device.type in ("cpu", "cuda"):  # where torch has the fused kernel
        return FusedAdam(params, lr=train.learning_rate, betas=betas, eps=train.adam_eps)
    return torch.optim.Adam(params, lr=train.learning_rate, eps=train.adam_eps, betas=betas)


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
