"""Figure sizes, colours and axis helpers shared by every figure module."""

from __future__ import annotations

import math
from typing import Any

from simsched.present.plots import pyplot

WIDTH, HEIGHT = 7.5, 3.6  # inches; figures are saved at 100 dpi (PNG) or as SVG
HOUR = 3600.0


def figure(rows: int = 1, cols: int = 1, height: float = HEIGHT, width: float = WIDTH, **kwargs: Any):
    plt = pyplot()
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), layout="constrained", squeeze=False, **kwargs)
    return fig, axes


def time_axis(ax: Any, span_s: float) -> None:
    """Data stay in seconds; ticks read in hours when the run is longer than three hours."""
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    if span_s > 3 * HOUR:
        hours = span_s / HOUR
        step = next((s for s in (1, 2, 3, 6, 12, 24, 48, 72, 168, 336, 672) if hours / s <= 10),
                    24 * 7 * math.ceil(hours / (10 * 24 * 7)))
        ax.xaxis.set_major_locator(MultipleLocator(step * HOUR))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / HOUR:g}"))
        ax.set_xlabel("simulated time (h)")
    else:
        ax.set_xlabel("simulated time (s)")


def colormap(name: str, bad: str | None = None) -> Any:
    """A matplotlib colormap by name; ``bad`` colours the masked (missing) cells."""
    import matplotlib  # optional (the plots extra): imported only to draw

    cmap = matplotlib.colormaps[name]
    return cmap.with_extremes(bad=bad) if bad else cmap


def colors(n: int) -> list:
    """n distinguishable colours (tab10, then tab20, then a continuous map)."""
    import matplotlib

    if n <= 10:
        return [matplotlib.colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(n)]
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(i / max(1, n - 1)) for i in range(n)]
