"""What drives a trained Pong policy's choice (ALE/Pong-v5, the fixture in tests/fixtures/
trained_pong/): the pixels of highest saliency, |d log pi(a|s) / d pixel| summed over the
frame stack, are the ball's and the paddles', not the background's or the score's, where the
same network freshly initialized looks nowhere in particular."""

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
TOP = 5  # the most salient pixels looked at per decision
DECISIONS = 40  # decisions sampled with the ball in play
PADDLE_ROWS = 5  # a paddle is 6-7 rows tall in the 84-row frame, the ball 1-3


def objects_in_play(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the pixels near the paddles and the ball in any frame of the stack, near the ball in
    the newest) of an (4, 84, 84) observation; None while the ball is out of play. The field
    is the rows mostly of the background (the commonest value: not the walls, the score
    above them or the walls' blended edges); whatever differs from it there is a paddle or
    the ball. The paddles stand in columns of several such pixels; the ball is the rest."""
    newest = stack[-1]
    background = np.bincount(newest.reshape(-1)).argmax()
    field = (newest == background).mean(1) > 0.5
    objects = np.zeros(newest.shape, bool)
    objects[field] = (stack[:, field] != background).any(0)
    now = np.zeros(newest.shape, bool)
    now[field] = newest[field] != background
    paddles = now.sum(0) >= PADDLE_ROWS
    ball = now & ~paddles[None, :]
    if not ball.any():
        return None
    return _near(objects), _near(ball)


def _near(mask: np.ndarray) -> np.ndarray:
    grown = mask.copy()
    for dy in range(-NEAR, NEAR + 1):
        for dx in range(-NEAR, NEAR + 1):
            grown |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return grown


def saliency_hits(policy, config) -> tuple[float, float, float]:
    """Over DECISIONS decisions with the ball in play: the share of the TOP most salient pixels
    on an object, the share of decisions whose most salient pixel is on one, and the share
    whose TOP pixels include one near the ball."""
    evaluator = Evaluator(policy, config, None, num_envs=1, seed=3, deterministic=False,
                          episodes=1)
    watch = EvaluatorWatch(evaluator, "action")
    on_objects, first_on, ball_seen = [], [], []
    try:
        for step, _ in enumerate(watch.frames(lambda: None)):
            if step % 4 or step > 20_000:  # every 4th decision: they differ more
                continue
            stack = np.asarray(watch.watch._obs)  # noqa: SLF001 - the decision's own input
            found = objects_in_play(stack)
            if found is None:
                continue
            objects, ball = found
            grid = np.asarray(watch.watch.gradient("action")).reshape(stack.shape).sum(0)
            top = np.argsort(-grid.reshape(-1), kind="stable")[:TOP]
            on_objects.append(objects.reshape(-1)[top].mean())
            first_on.append(bool(objects.reshape(-1)[top[0]]))
            ball_seen.append(bool(ball.reshape(-1)[top].any()))
            if len(on_objects) == DECISIONS:
                break
    finally:
        evaluator.close()
    assert len(on_objects) == DECISIONS, "the ball was in play too rarely"
    return float(np.mean(on_objects)), float(np.mean(first_on)), float(np.mean(ball_seen))


@pytest.fixture
def trained():
    """(policy, config) of the fixture, a copy of its own for each test."""
    checkpoint = latest_checkpoint(FIXTURE)
    assert checkpoint is not None, f"no checkpoint under {FIXTURE}"
    return load_policy(checkpoint)


def test_the_fixture_is_a_policy_that_plays(trained):
    policy, config = trained
    evaluator = Evaluator(policy, config, None, num_envs=1, seed=5, deterministic=False,
                          episodes=1)
    try:
        while not evaluator.finished:
            evaluator.step()
        score = evaluator.result()["episode_return"]
    finally:
        evaluator.close()
    assert score > -15, score  # a random policy scores -20 to -21


def test_a_trained_pong_policy_looks_at_the_ball_and_the_paddles(trained):
    policy, config = trained
    on_objects, first_on, ball_seen = saliency_hits(policy, config)
    assert on_objects >= 0.8 and first_on >= 0.8, (on_objects, first_on)
    assert ball_seen >= 0.5, ball_seen


def test_a_fresh_network_looks_nowhere_in_particular(trained):
    policy, config = trained
    torch.manual_seed(0)
    for module in policy.modules():
        if module is not policy and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    on_objects, first_on, _ = saliency_hits(policy, config)
    assert on_objects < 0.5 and first_on < 0.5, (on_objects, first_on)
