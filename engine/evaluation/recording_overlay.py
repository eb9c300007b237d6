"""`eval --record --overlay`: each recorded frame with the policy's view drawn into it.

    record_episodes(overlay_frames(evaluator, palette), path, fps, 1)

The frame (tiles through the env's palette, or the env's image) gets the saliency of the
action's log-probability blended in as heat (grids and images; engine/evaluation/
policy_view.py), and a panel on its right: V(s), the reward, a bar per discrete action (the
taken one in yellow) or mean ± std per continuous dimension, for flat observations the most
salient dimensions, and once an episode has ended V(s_t) against the realized return with
the critic's error. Every image has the same size, as an encoder needs.
"""

from __future__ import annotations

import numpy as np

from puffer_tui.engine.evaluation.evaluate import copied_frame
from puffer_tui.engine.evaluation.policy_view import EvaluatorWatch
from puffer_tui.engine.evaluation.recording import colour_table, default_scale, frame_pixels

PANEL_WIDTH, MIN_HEIGHT = 200, 220  # pixels of the panel; the least height of an image
LINE = 12  # pixels a text line (Pillow's default bitmap font)
HEAT = np.array((255, 64, 0), np.float32)
WHITE, DIM, CYAN, YELLOW, MAGENTA = (235, 235, 235), (140, 140, 140), (80, 200, 230), \
    (250, 210, 60), (220, 90, 220)


def overlay_frames(evaluator, palette: dict | None, saliency: str | None = "action",
                   scale: int | None = None, watch: EvaluatorWatch | None = None):
    """Env 0's frames as RGB images with the policy's view drawn in (see the module);
    `watch`: the EvaluatorWatch to read (the window's, whose saliency a key changes)."""
    table = colour_table(palette)
    watch = watch or EvaluatorWatch(evaluator, saliency)
    for frame, view in watch.frames(lambda: copied_frame(evaluator.frame())):
        if scale is None:
            scale = default_scale(np.shape(frame)[1])
        yield compose(frame_pixels(frame, table, scale), view)


def compose(image: np.ndarray, view: dict | None) -> np.ndarray:
    """The image with `view`'s saliency blended in, padded to MIN_HEIGHT, and its panel."""
    # lazy: Pillow comes with the record extra, which only a recording needs
    from PIL import Image, ImageDraw

    salient = (view or {}).get("saliency")
    if salient and "cells" in salient:
        image = _heat(image, salient)
    height = max(image.shape[0], MIN_HEIGHT)
    out = np.zeros((height, image.shape[1] + PANEL_WIDTH, 3), np.uint8)
    out[: image.shape[0], : image.shape[1]] = image
    canvas = Image.fromarray(out)
    draw = ImageDraw.Draw(canvas)
    _panel(draw, image.shape[1] + 6, PANEL_WIDTH - 12, height, view)
    return np.asarray(canvas)


def _heat(image: np.ndarray, salient: dict) -> np.ndarray:
    import base64

    h, w = int(salient["height"]), int(salient["width"])
    cells = np.frombuffer(base64.b64decode(salient["cells"]), np.uint8).reshape(h, w) / 255.0
    rows = np.minimum(np.arange(image.shape[0]) * h // image.shape[0], h - 1)
    cols = np.minimum(np.arange(image.shape[1]) * w // image.shape[1], w - 1)
    alpha = (cells[rows][:, cols] ** 0.7 * 0.9)[:, :, None]
    blended = image.astype(np.float32) * 0.45 * (1 - alpha) + HEAT * alpha
    return np.clip(blended, 0, 255).astype(np.uint8)


def _panel(draw, x: int, width: int, height: int, view: dict | None) -> None:
    y = 4
    if view is None:
        draw.text((x, y), "policy: -", fill=DIM)
        return
    value, reward = view.get("value"), view.get("reward")
    draw.text((x, y), f"V {value:+.2f}" if value is not None else "V -", fill=CYAN)
    draw.text((x + 70, y), f"r {reward:+.2f}" if reward is not None else "r -", fill=WHITE)
    draw.text((x + 140, y), f"t {view.get('step', 0)}", fill=DIM)
    y += LINE + 4
    bar_x, bar_w = x + 28, width - 64
    if view.get("kind") == "box":
        for i, (mean, std) in enumerate(zip(view.get("mean", []), view.get("std", []))):
            if y > height - 90:
                break
            mean, std = mean or 0.0, abs(std or 0.0)
            scale = max(abs(mean) + std, 1.0)
            centre = bar_x + bar_w // 2

            def px(v, scale=scale, centre=centre):
                return int(centre + v / scale * (bar_w // 2 - 1))

            draw.text((x, y), f"a{i}", fill=DIM)
            draw.line((bar_x, y + 5, bar_x + bar_w, y + 5), fill=(60, 60, 60))
            draw.rectangle((px(mean - std), y + 2, px(mean + std), y + 8), fill=CYAN)
            draw.line((px(mean), y, px(mean), y + 10), fill=WHITE)
            draw.text((bar_x + bar_w + 4, y), f"{mean:+.1f}", fill=WHITE)
            y += LINE
    else:
        for h, probs in enumerate(view.get("heads", [])):
            taken = view.get("action", [None] * (h + 1))[h]
            for a, p in enumerate(probs):
                if y > height - 90:
                    break
                colour = YELLOW if a == taken else CYAN
                draw.text((x, y), f"{'>' if a == taken else ' '}{a}", fill=colour)
                draw.rectangle((bar_x, y + 2, bar_x + int((p or 0) * bar_w), y + 9), fill=colour)
                draw.text((bar_x + bar_w + 4, y), f"{100 * (p or 0):.0f}%", fill=colour)
                y += LINE
            y += 2
    salient = view.get("saliency") or {}
    for _index, magnitude, name in salient.get("dims", [])[:4]:
        if y > height - 80:
            break
        draw.text((x, y), str(name)[:10], fill=DIM)
        draw.rectangle((x + 70, y + 2, x + 70 + int(magnitude * (width - 74)), y + 9),
                       fill=MAGENTA)
        y += LINE
    episode = view.get("episode")
    if episode:
        _chart(draw, x, max(y + 4, height - 76), width, episode)


def _chart(draw, x: int, y: int, width: int, episode: dict) -> None:
    draw.text((x, y), f"critic err {episode['error']:.3f}  ep {episode['length']}", fill=WHITE)
    top, bottom = y + LINE + 2, y + 70
    values = [v for v in episode["values"] if v is not None]
    returns = [g for g in episode["returns"] if g is not None]
    points = values + returns
    if len(values) < 2 or not points:
        return
    low, high = min(points), max(points)
    span = (high - low) or 1.0

    def line(series, colour):
        n = len(series)
        xy = [(x + int(i * (width - 1) / (n - 1)),
               bottom - int((v - low) / span * (bottom - top))) for i, v in enumerate(series)]
        draw.line(xy, fill=colour, width=1)

    line(returns, YELLOW)
    line(values, CYAN)
