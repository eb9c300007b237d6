"""Screenshots of the real app for the README and the docs, as SVG (Textual's own export).

    python tools/docs_screenshots.py             # docs/images/{dashboard,launcher}-WxH.svg
    python tools/docs_screenshots.py --out /tmp/shots --sizes 80x24
    python tools/docs_screenshots.py --pong      # docs/images/pong-policy-view.png

A real squared run is started (the Python API, detached), the app attaches to it under
Textual's Pilot at each size, waits until the dashboard shows some epochs and a live render,
and saves the screen; the launcher is shot the same way. The run is stopped and removed
afterwards. Nothing here is drawn by hand, so a picture cannot drift from the app: rerun this
after changing a screen (CI runs it and fails if it crashes: tests/test_docs_screenshots.py).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"
SIZES = ((80, 24), (120, 40))
EPOCHS_SHOWN = 3  # the curves need a few points before the picture says anything


async def shoot_dashboard(run_dir: Path, size: tuple[int, int], path: Path,
                          patience: float = 120.0) -> None:
    from puffer_tui.app.app import PufferApp

    app = PufferApp(run_dir=run_dir, attach=True)
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            await pilot.pause(0.5)
            latest = app.store.latest
            if latest is not None and latest.epoch >= EPOCHS_SHOWN:
                break
        else:
            raise RuntimeError(f"the dashboard showed no {EPOCHS_SHOWN} epochs in {patience:g} s")
        await pilot.pause(2.0)  # a few render frames and a redraw of every panel
        app.save_screenshot(filename=path.name, path=str(path.parent))


async def shoot_launcher(runs_root: Path, size: tuple[int, int], path: Path) -> None:
    from puffer_tui.app.app import PufferApp

    app = PufferApp(runs_root=runs_root)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(2.0)
        app.save_screenshot(filename=path.name, path=str(path.parent))


PONG_FIXTURE = ROOT / "tests" / "fixtures" / "trained_pong"
PONG_STEP = 440  # the decision shown: into a rally, the ball in play


def shoot_pong_policy_view(path: Path, fixture: Path = PONG_FIXTURE) -> None:
    """`eval --record --overlay`'s frame of the trained Pong fixture at decision PONG_STEP
    (and later, until the ball is in play): the saliency heat on the game and the panel."""
    # lazy: torch, ale-py and Pillow, which the screenshots of the app do not need
    import numpy as np
    from PIL import Image

    from puffer_tui.engine.algo.policy import load_policy
    from puffer_tui.engine.evaluation.evaluate import Evaluator
    from puffer_tui.engine.evaluation.recording_overlay import overlay_frames
    from puffer_tui.engine.shared.checkpoint import latest_checkpoint

    policy, config = load_policy(latest_checkpoint(fixture))
    evaluator = Evaluator(policy, config, None, num_envs=1, seed=3, deterministic=False,
                          episodes=1)
    try:
        for step, image in enumerate(overlay_frames(evaluator, None, "action", scale=2)):
            if step >= PONG_STEP and np.asarray(image).max() > 0:
                Image.fromarray(np.asarray(image)).save(path, optimize=True)
                return
    finally:
        evaluator.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the SVGs (docs/images)")
    parser.add_argument("--sizes", nargs="+", default=[f"{w}x{h}" for w, h in SIZES],
                        help="terminal sizes, e.g. 80x24 120x40")
    parser.add_argument("--pong", action="store_true",
                        help="instead: the trained Pong fixture's policy view in a recording "
                             "frame (pong-policy-view.png; needs the atari and record extras)")
    args = parser.parse_args(argv)
    sizes = [tuple(int(v) for v in text.split("x")) for text in args.sizes]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pong:
        target = args.out / "pong-policy-view.png"
        shoot_pong_policy_view(target)
        print(f"wrote {target}", flush=True)
        return 0
    import puffer_tui

    runs = Path(tempfile.mkdtemp(prefix="puffer-tui-shots-"))
    run = None
    try:
        run = puffer_tui.train("squared", total_timesteps=200_000_000, seed=1, runs_dir=runs,
                               detach=True)
        for width, height in sizes:
            target = args.out / f"dashboard-{width}x{height}.svg"
            asyncio.run(shoot_dashboard(run.path, (width, height), target))
            print(f"wrote {target}", flush=True)
        for width, height in sizes:
            target = args.out / f"launcher-{width}x{height}.svg"
            asyncio.run(shoot_launcher(runs, (width, height), target))
            print(f"wrote {target}", flush=True)
    finally:
        if run is not None and run.running:
            run.stop()
        shutil.rmtree(runs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
