"""gSDE's exploration matrices: one W [features, actions] per env row, held for a number of
steps (engine/algo/distributions.py has the distribution they sample from).

    noise = head.make_noise(rows, sample_freq)        # None unless train.exploration gsde
    noise.resample()                                  # the start of each collection
    delta = noise.perturbation(features, rows, sigma) # features [n, F] @ (eps[row] * sigma)

What is kept is eps ~ N(0, 1); W = eps * sigma with the current sigma. sigma only changes in
the update, between collections, and every collection starts by drawing fresh eps for every
row from the run's torch stream: the matrices a collection uses are a function of that stream
alone, so a checkpoint (which saves the stream, at an epoch boundary) resumes with the same
ones without saving them. Within a collection a row draws new eps after `sample_freq` of its
own steps (0: never, the whole collection on one W, as SB3's sde_sample_freq -1); rows are
counted separately because a vec env may return only some rows on a step.

Tested in: tests/engine/algo/test_gsde.py.
"""

from __future__ import annotations

import numpy as np
import torch

from puffer_tui.engine.algo.rollout import is_identity


class SDENoise:
    def __init__(self, rows: int, features: int, actions: int, sample_freq: int = 0,
                 device: torch.device | str | None = None):
        if sample_freq < 0:
            raise ValueError(f"sde_sample_freq must be >= 0 (0: once a collection), "
                             f"got {sample_freq}")
        self.sample_freq = sample_freq
        # created outside inference mode, so that collection (inside it) may write into it
        self.eps = torch.zeros(rows, features, actions, device=device)
        self.age = np.zeros(rows, np.int64)  # steps each row has taken on its current eps

    @property
    def rows(self) -> int:
        return self.eps.shape[0]

    def resample(self, rows: np.ndarray | None = None) -> None:
        """Fresh eps for `rows` (None: every row)."""
        if rows is None:
            self.eps.normal_()
            self.age[:] = 0
            return
        rows = np.asarray(rows)
        index = torch.as_tensor(rows, device=self.eps.device)
        self.eps[index] = torch.randn((len(rows), *self.eps.shape[1:]), device=self.eps.device)
        self.age[rows] = 0

    def advance(self, n: int, rows) -> torch.Tensor:
        """eps [n, F, A] of rows `rows` (None: 0..n-1) for one step of those rows (rows due
        for new eps get them first)."""
        rows = np.arange(n) if rows is None else np.asarray(rows).reshape(-1)
        if len(rows) != n:
            raise ValueError(f"{n} feature rows but {len(rows)} row ids")
        if n == self.rows and is_identity(rows):  # every row (the synchronous case): no gather
            if self.sample_freq:
                due = self.age >= self.sample_freq
                if due.all():  # the same draws as resample(rows): one normal_ over eps
                    self.resample()
                elif due.any():
                    self.resample(np.flatnonzero(due))
            self.age += 1
            return self.eps
        if n and rows.max() >= self.rows:
            raise ValueError(f"row {rows.max()} is out of range: the noise has {self.rows} rows")
        if self.sample_freq:
            due = rows[self.age[rows] >= self.sample_freq]
            if len(due):
                self.resample(due)
        self.age[rows] += 1
        return self.eps[torch.as_tensor(rows, device=self.eps.device)]

    def perturbation(self, features: torch.Tensor, rows, sigma: torch.Tensor) -> torch.Tensor:
        """features [n, F] of rows `rows` (None: 0..n-1) -> f @ (eps[row] * sigma), [n, A];
        one step of those rows."""
        eps = self.advance(features.shape[0], rows)
        weights = eps * sigma.to(eps.dtype)
        return torch.bmm(features.to(eps.dtype).unsqueeze(1), weights).squeeze(1)

