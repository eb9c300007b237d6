"""Number and duration formatting shared by the widgets.

Tested in: tests/app/test_app_store.py (test_formatting), tests/app/test_duration_format.py"""

from __future__ import annotations

import io
import math

from rich.console import Console
from textual.renderables.sparkline import Sparkline


def human(x: float | None, digits: int = 3) -> str:
    """1234567 -> '1.23M'; None/NaN -> '-'."""
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "-"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.{digits}g}{unit}"
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}g}"


def duration(seconds: float | None, coarse: bool = False) -> str:
    """The one duration format: a clock, 3725 -> '1:02:05' (from 48 h on, days: '3d04h');
    coarse, the largest unit rounded, 3725 -> '1h', 90 -> '2m' (ages in listings);
    None/NaN -> '-'."""
    if seconds is None or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "-"
    if coarse:
        seconds = max(0.0, float(seconds))
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds >= size:
                return f"{seconds / size:.0f}{unit}"
        return f"{seconds:.0f}s"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 48:
        return f"{hours // 24}d{hours % 24:02d}h"
    return f"{hours}:{minutes:02d}:{secs:02d}"


def metric(x: float | None) -> str:
    """A loss or statistic: 4 significant digits, scientific when tiny or huge."""
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "-"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:.2e}"
    return f"{x:.4g}"


def bytes_text(n: int | float | None) -> str:
    if not n:
        return "-"
    for unit, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{int(n)}B"


def load_colour(percent: float) -> str:
    """btop-like: green when idle, yellow when busy, red when saturated."""
    if percent >= 85:
        return "red"
    if percent >= 60:
        return "yellow"
    if percent >= 30:
        return "green"
    return "dark_green"


BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(fraction: float, width: int) -> str:
    """A horizontal bar `width` cells wide, with eighth-cell resolution."""
    if width <= 0:
        return ""
    fraction = min(max(fraction if math.isfinite(fraction) else 0.0, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (BLOCKS[part] if part else "")
    return text.ljust(width)


_CONSOLE = Console(file=io.StringIO(), width=1000)  # only renders a sparkline's segments


def spark(values: list[float], width: int) -> str:
    """A one-line sparkline of the last `width` values (Textual's Sparkline, one per column)."""
    values = [v for v in values[-width:] if math.isfinite(v)]
    if not values:
        return ""
    line = Sparkline(values, width=len(values), height=1)
    return "".join(segment.text for segment in _CONSOLE.render(line))
