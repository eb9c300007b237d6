"""A trained run's checkpoint slimmed into a test fixture: the policy's weights in half precision
and the run's config, none of the optimizer's or the vec env's state, saved as a checkpoint
(with its checksum) under FIXTURE_DIR/checkpoints/, so `load_policy` reads it as any other.

    python tools/trained_fixture.py RUN_DIR_OR_CHECKPOINT FIXTURE_DIR

The trained Pong policy of tests/engine/evaluation/test_pong_saliency.py was made this way
(its provenance is in tests/fixtures/trained_pong/README.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def slim(state: dict) -> dict:
    """The part of a trainer checkpoint a policy is rebuilt from, floats in half precision
    (a trained policy's choices do not hinge on the last bits: the test checks it plays)."""
    import torch

    weights = {k: v.half() if torch.is_floating_point(v) else v
               for k, v in state["policy"].items()}
    return {"config": state["config"], "policy": weights,
            "global_step": int(state["global_step"]), "epoch": int(state["epoch"])}


def main(argv=None) -> int:
    from puffer_tui.engine.shared.checkpoint import (
        latest_checkpoint,
        load_checkpoint,
        save_checkpoint,
    )

    p = argparse.ArgumentParser(prog="python tools/trained_fixture.py",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("source", type=Path, help="a run folder (its latest checkpoint) or a .pt")
    p.add_argument("fixture", type=Path, help="the fixture folder to write")
    args = p.parse_args(argv)
    source = latest_checkpoint(args.source) if args.source.is_dir() else args.source
    if source is None:
        p.error(f"{args.source} holds no checkpoint")
    path = save_checkpoint(args.fixture, slim(load_checkpoint(source)), keep=1)
    print(f"{path} ({path.stat().st_size / 1e6:.2f} MB) from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
