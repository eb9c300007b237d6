"""Policies: an observation encoder, an MLP or LSTM core, an action head and a value head.

    policy = make_policy(observation_space, action_space, config.train)
    actions, state = policy.act(observations)            # numpy in, numpy out (evaluation)
    policy, config = load_policy("runs/x/checkpoints/latest.pt")

The encoder (engine/algo/encoders.py) fits the observations: a CNN for images, one encoder per leaf
for Dict/Tuple observations, else an MLP layer; small-integer observations (uint8 grids with a
handful of cell values, like squared) are one-hot encoded per cell: a grid cell's value is a
category, not a magnitude.

Continuous control options (engine/shared/config.py): `separate_critic` gives the value its own
encoder and hidden layer (no trunk shared with the actor); `activation` is the MLP's
nonlinearity; `obs_norm` (ObservationNormalizer, engine/algo/normalization.py) holds the running
statistics of the observations: the trainer normalizes what it collects itself (and copies its
statistics here after each epoch), `act` applies them to raw observations, so evaluation and
recordings see what training saw. They are buffers: saved and loaded with the weights.
`exploration` "gsde" makes Box actions' noise a function of the actor's last hidden layer
(engine/algo/distributions.py); `act` with deterministic=True gives the mean either way.

The LSTM's state is reset where an episode ends: the caller passes `starts`, true for rows
whose current observation is the first of a new episode, and those rows' state is zeroed
before the step.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from puffer_tui.engine.algo.distributions import ActionHead
from puffer_tui.engine.algo.encoders import (  # noqa: F401 (ObservationEncoder: its old home)
    ACTIVATIONS,
    MAX_ONE_HOT_VALUES,
    ObservationEncoder,
    has_image,
    make_encoder,
)
from puffer_tui.engine.algo.normalization import ObservationNormalizer
from puffer_tui.engine.shared.checkpoint import open_verified  # refuses damaged files by name
from puffer_tui.engine.shared.config import Config, ConfigError, from_dict
from puffer_tui.envs import env_class


def _init(layer: nn.Linear, gain: float = np.sqrt(2)) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class Policy(nn.Module):
    """Actor-critic. `step` is the one-step API used while collecting and evaluating;
    `forward_sequence` replays [segments, horizon] minibatches while learning."""

    def __init__(self, observation_space, action_space, hidden_size: int = 128,
                 recurrent: bool = False, sequence_resets: bool = True,
                 encoder: str = "auto", cnn_channels: int = 32, activation: str = "gelu",
                 separate_critic: bool = False, init_log_std: float = 0.0,
                 action_squash: str = "clip", observation_clip: float | None = None,
                 exploration: str = "gaussian"):
        super().__init__()
        if separate_critic and recurrent:
            raise ValueError("train.separate_critic is for MLP policies; with train.policy lstm "
                             "the actor and critic share the LSTM (set separate_critic false)")
        self.observation_space = observation_space
        self.action_space = action_space
        self.hidden_size = hidden_size
        self.recurrent = recurrent
        self.separate_critic = separate_critic
        self.activation = ACTIVATIONS[activation]
        # observation_clip None: no normalization; else the clip of the normalized values
        self.obs_norm = (ObservationNormalizer(tuple(observation_space.shape), observation_clip)
                         if observation_clip is not None else None)
        self.encoder = make_encoder(observation_space, hidden_size, encoder, cnn_channels,
                                    activation)
        # Resetting the state inside training sequences (where episodes end) is exact but
        # steps the cell once per time step; without it the whole sequence is one fused LSTM
        # call (PufferLib's choice) and the state flows across episode ends within a segment.
        self.sequence_resets = sequence_resets
        if recurrent:
            self.lstm = nn.LSTM(hidden_size, hidden_size, batch_first=True)
            for name, param in self.lstm.named_parameters():
                if "bias" in name:
                    nn.init.zeros_(param)
                else:
                    nn.init.orthogonal_(param, 1.0)
        else:
            self.hidden = _init(nn.Linear(hidden_size, hidden_size))
        if separate_critic:
            self.critic_encoder = make_encoder(observation_space, hidden_size, encoder,
                                               cnn_channels, activation)
            self.critic_hidden = _init(nn.Linear(hidden_size, hidden_size))
        self.actor = ActionHead(action_space, hidden_size, init_log_std, action_squash,
                                exploration)
        self.critic = _init(nn.Linear(hidden_size, 1), 1.0)

    # -- recurrent state ----------------------------------------------------------------------

    def initial_state(self, rows: int, device=None):
        """Zero (h, c) for `rows` agents, or None for the MLP."""
        if not self.recurrent:
            return None
        h = torch.zeros(rows, self.hidden_size, device=device)
        return (h, torch.zeros_like(h))

    @staticmethod
    def reset_state(state, starts: torch.Tensor | None):
        """State with the rows where `starts` is true zeroed (a new episode begins there)."""
        if state is None or starts is None:
            return state
        keep = (~starts.bool()).unsqueeze(-1).to(state[0].dtype)
        return (state[0] * keep, state[1] * keep)

    # -- forward ------------------------------------------------------------------------------

    def _heads(self, hidden: torch.Tensor):
        """(action params, values) from one matrix product with the two heads' weights
        stacked: on CPU a product with 1 or 5 columns costs nearly as much as a wide one, in
        the backward pass too. The same function as actor(hidden), critic(hidden)."""
        weight = torch.cat((self.actor.linear.weight, self.critic.weight))
        bias = torch.cat((self.actor.linear.bias, self.critic.bias))
        out = torch.addmm(bias, hidden, weight.t())
        return self.actor.with_features(out[:, :-1], hidden), out[:, -1]

    def _separate(self, obs: torch.Tensor):
        """(action params, values) of the separate actor and critic networks."""
        actor = self.activation(self.hidden(self.encoder(obs)))
        critic = self.activation(self.critic_hidden(self.critic_encoder(obs)))
        return self.actor(actor), self.critic(critic).squeeze(-1)

    def step(self, obs: torch.Tensor, state=None, starts: torch.Tensor | None = None):
        """One step for N rows: (action params [N, .], values [N], new state)."""
        if self.separate_critic:
            params, value = self._separate(obs)
            return params, value, None
        x = self.encoder(obs)
        if self.recurrent:
            if state is None:
                state = self.initial_state(obs.shape[0], obs.device)
            h, c = self._cell(x, self.reset_state(state, starts))
            params, value = self._heads(h)
            return params, value, (h, c)
        params, value = self._heads(self.activation(self.hidden(x)))
        return params, value, None

    def forward_sequence(self, obs: torch.Tensor, state=None, starts: torch.Tensor | None = None):
        """[B, T, *obs] sequences from state `state` ([B, hidden] pairs, or None for zeros):
        (action params [B*T, .], values [B*T]), time-major within each row (b, t) -> b*T + t."""
        batch, horizon = obs.shape[:2]
        flat = obs.reshape(batch * horizon, *obs.shape[2:])
        if self.separate_critic:
            return self._separate(flat)
        x = self.encoder(flat)
        if not self.recurrent:
            return self._heads(self.activation(self.hidden(x)))
        x = x.view(batch, horizon, -1)
        if state is None:
            state = self.initial_state(batch, obs.device)
        if starts is not None:
            state = self.reset_state(state, starts[:, 0])
        if starts is None or not self.sequence_resets or not bool(starts[:, 1:].any()):
            hidden, _ = self.lstm(x, (state[0].unsqueeze(0), state[1].unsqueeze(0)))
            return self._heads(hidden.reshape(batch * horizon, -1))
        outputs = []
        for t in range(horizon):
            state = self._cell(x[:, t], self.reset_state(state, starts[:, t]) if t else state)
            outputs.append(state[0])
        hidden = torch.stack(outputs, 1).reshape(batch * horizon, -1)
        return self._heads(hidden)

    def _cell(self, x: torch.Tensor, state):
        """One LSTM step with the sequence LSTM's own weights."""
        lstm = self.lstm
        return torch.lstm_cell(x, state, lstm.weight_ih_l0, lstm.weight_hh_l0,
                               lstm.bias_ih_l0, lstm.bias_hh_l0)

    def forward(self, obs, state=None, starts=None):
        return self.step(obs, state, starts)

    # -- evaluation ---------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, observations: np.ndarray, state=None, deterministic: bool = False,
            starts: np.ndarray | None = None):
        """Actions (numpy, as the env takes them) for a batch of observations, and the new
        recurrent state (pass it back next call; None for the MLP)."""
        device = next(self.parameters()).device
        obs = torch.as_tensor(np.asarray(observations), device=device)
        expected = tuple(self.observation_space.shape)
        if tuple(obs.shape[1:]) != expected:
            raise ValueError(f"observations have shape {tuple(obs.shape)}, expected "
                             f"(N, {', '.join(map(str, expected))})")
        start_t = None if starts is None else torch.as_tensor(np.asarray(starts), device=device)
        if self.obs_norm is not None:  # training's statistics, frozen
            obs = self.obs_norm(obs)
        params, _, state = self.step(obs, state, start_t)
        actions, _ = self.actor.sample(params, deterministic)
        return self.actor.to_env(actions).cpu().numpy(), state

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def make_policy(observation_space, action_space, train_config) -> Policy:
    """The policy the config asks for (`train.policy`: auto/lstm pick the encoder from the
    observations, mlp and cnn force one; `train.hidden_size`, `train.cnn_channels`)."""
    kind = getattr(train_config, "policy", "auto")
    normalized = getattr(train_config, "normalize_observations", False) and \
        normalizable(observation_space)
    return Policy(observation_space, action_space, hidden_size=train_config.hidden_size,
                  recurrent=kind == "lstm",
                  sequence_resets=train_config.lstm_sequence_resets,
                  encoder=kind, cnn_channels=getattr(train_config, "cnn_channels", 32),
                  activation=getattr(train_config, "activation", "gelu"),
                  separate_critic=getattr(train_config, "separate_critic", False),
                  init_log_std=getattr(train_config, "init_log_std", 0.0),
                  action_squash=getattr(train_config, "action_squash", "clip"),
                  observation_clip=train_config.observation_clip if normalized else None,
                  exploration=getattr(train_config, "exploration", "gaussian"))


def normalizable(observation_space) -> bool:
    """Whether train.normalize_observations applies: float vectors only (images, integer
    grids and structured observations with such leaves keep their own encodings)."""
    return (np.issubdtype(observation_space.dtype, np.floating)
            and getattr(observation_space, "leaves", None) is None
            and not has_image(observation_space))


def load_policy(checkpoint_path, device: str = "cpu"):
    """(policy with the checkpoint's weights, its Config) from a file of Trainer.state_dict()."""
    state = torch.load(open_verified(checkpoint_path), map_location=device, weights_only=True)
    if not isinstance(state, dict) or "policy" not in state or "config" not in state:
        raise ValueError(f"{checkpoint_path}: not a trainer checkpoint (needs 'policy' and 'config')")
    try:
        config: Config = from_dict(state["config"])
    except ConfigError as e:
        raise ValueError(f"{checkpoint_path}: its config is not valid here: {e}") from None
    cls = env_class(config.env_name)
    layout = cls.layout(cls.resolve(dict(config.env)))
    policy = make_policy(layout.observation_space, layout.action_space, config.train)
    if policy.obs_norm is not None and not any(k.startswith("obs_norm.") for k in state["policy"]):
        raise ValueError(f"{checkpoint_path}: its config normalizes observations "
                         f"(train.normalize_observations) but it holds no observation "
                         f"statistics; without them the policy sees other inputs than it "
                         f"trained on (a checkpoint from a damaged or older writer)")
    policy.load_state_dict(state["policy"])
    policy.to(device).eval()
    return policy, config
