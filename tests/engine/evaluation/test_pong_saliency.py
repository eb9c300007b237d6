"""What drives a trained Pong policy's choice (ALE/Pong-v5, the fixture in tests/fixtures/
trained_pong/, made by tools/trained_fixture.py from a run of the preset): the most salient
pixels of |d log pi(a|s) / d pixel| x contrast (engine/evaluation/policy_view.py), summed over
the frame stack, are the ball's and the paddles', not the score's; and training moves the
saliency onto the ball and the agent's own paddle, where the same network freshly initialized
spreads it over whatever is drawn (most of all the score)."""

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("ale_py", reason="needs ale-py (the atari extra)")

from puffer_tui.engine.algo.policy import load_policy  # noqa: E402
from puffer_tui.engine.evaluation.evaluate import Evaluator  # noqa: E402
from puffer_tui.engine.evaluation.policy_view import EvaluatorWatch  # noqa: E402
from puffer_tui.engine.shared.checkpoint import latest_checkpoint  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "trained_pong"
NEAR = 2  # pixels: "on an object" is within this of one of its pixels (in any stacked frame)
DECISIONS = 40  # decisions sampled with the ball in play
PADDLE_ROWS = 5  # a paddle is 6-7 rows tall in the 84-row frame, the ball 1-3


def parts(stack: np.ndarray) -> dict[str, np.ndarray] | None:
    """Masks of an (4, 84, 84) observation: the ball, the agent's paddle (right), the
    opponent's (left), each grown by NEAR and from every frame of the stack, and the score
    (above the top wall); None while the ball is out of play. The walls are rows of one value
    other than the background (the commonest value), the field the rows between them; what
    differs from the background there is a paddle (a column of several such pixels) or the
    ball."""
    newest = stack[-1]
    height = newest.shape[0]
    background = np.bincount(newest.reshape(-1)).argmax()
    walls = np.flatnonzero((newest.min(1) == newest.max(1)) & (newest[:, 0] != background))
    upper, lower = walls[walls < height // 2], walls[walls >= height // 2]
    field = np.zeros(height, bool)
    field[upper.max() + 1: lower.min()] = True
    drawn = np.zeros(stack.shape, bool)
    drawn[:, field] = stack[:, field] != background
    columns = np.arange(newest.shape[1])
    paddle_columns = drawn.sum(1) >= PADDLE_ROWS  # (frames, columns)
    ball = drawn & ~paddle_columns[:, None, :]
    if not ball[-1].any():
        return None
    paddles = drawn & paddle_columns[:, None, :]
    own = (paddles & (columns >= newest.shape[1] // 2)).any(0)
    theirs = (paddles & (columns < newest.shape[1] // 2)).any(0)
    score = np.zeros(newest.shape, bool)
    score[: upper.min()] = True
    return {"ball": _near(ball.any(0)), "own paddle": _near(own),
            "their paddle": _near(theirs), "score": score & ~_near(ball.any(0))}


def _near(mask: np.ndarray) -> np.ndarray:
    grown = mask.copy()
    for dy in range(-NEAR, NEAR + 1):
        for dx in range(-NEAR, NEAR + 1):
            grown |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return grown


def saliency_by_part(policy, config) -> dict[str, float]:
    """Over DECISIONS decisions with the ball in play: the share of the saliency's mass on
    each part (mean over decisions), and `top on objects`, the share of decisions whose most
    salient pixel is on the ball or a paddle."""
    evaluator = Evaluator(policy, config, None, num_envs=1, seed=3, deterministic=False,
                          episodes=1)
    watch = EvaluatorWatch(evaluator, "action")
    shares, tops = [], []
    try:
        for step, _ in enumerate(watch.frames(lambda: None)):
            if step % 4:  # every 4th decision: they differ more
                continue
            stack = np.asarray(watch.watch._obs)  # noqa: SLF001 - the decision's own input
            masks = parts(stack)
            if masks is None:
                continue
            grid = np.asarray(watch.watch.gradient("action")).reshape(stack.shape).sum(0)
            total = float(grid.sum()) or 1.0
            shares.append({name: float(grid[mask].sum()) / total
                           for name, mask in masks.items()})
            top = np.unravel_index(np.argmax(grid), grid.shape)
            tops.append(any(masks[name][top] for name in ("ball", "own paddle",
                                                          "their paddle")))
            if len(tops) == DECISIONS:
                break
    finally:
        evaluator.close()
    assert len(tops) == DECISIONS, "the ball was in play too rarely"
    out = {name: float(np.mean([s[name] for s in shares])) for name in shares[0]}
    out["top on objects"] = float(np.mean(tops))
    return out


def trained():
    """(policy, config) of the fixture: a copy of its own for each caller."""
    checkpoint = latest_checkpoint(FIXTURE)
    assert checkpoint is not None, f"no checkpoint under {FIXTURE}"
    return load_policy(checkpoint)


def fresh():
    policy, config = trained()
    torch.manual_seed(0)
    for module in policy.modules():
        if module is not policy and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return policy, config


def test_the_fixture_is_a_policy_that_plays():
    """A random policy scores -20 to -21 a game; the fixture's two games here were -10 and
    -5 when it was made (its README): it returns the ball."""
    policy, config = trained()
    evaluator = Evaluator(policy, config, None, num_envs=1, seed=5, deterministic=False,
                          episodes=2)
    try:
        while not evaluator.finished:
            evaluator.step()
        score = evaluator.result()["episode_return"]
    finally:
        evaluator.close()
    assert score > -15, score


def test_a_trained_pong_policy_looks_at_the_ball_and_the_paddles():
    seen = saliency_by_part(*trained())
    assert seen["top on objects"] >= 0.8, seen
    assert seen["ball"] + seen["own paddle"] + seen["their paddle"] > 2 * seen["score"], seen


def test_training_moves_the_saliency_onto_the_ball_and_its_own_paddle():
    before, after = saliency_by_part(*fresh()), saliency_by_part(*trained())
    mine = ("ball", "own paddle")
    assert sum(after[p] for p in mine) >= 1.5 * sum(before[p] for p in mine), (before, after)
    assert after["score"] < before["score"] / 2, (before, after)
