"""Matplotlib panels of the reproduced figures (Agg canvas, no pyplot state), written atomically as PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rwio import save_figure_atomic

#: Zero spreads/residuals are drawn at this floor on log axes (exact symmetry has spread 0).
LOG_FLOOR = 1e-20


def save_png(fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` through a temp file in the same folder and os.replace (atomic)."""
    save_figure_atomic(fig, path, dpi=110, metadata={"Software": None})


def heatmap(fig: Figure, ax: Axes, M: np.ndarray, title: str, xlabel: str = "column j (node)",
            ylabel: str = "row i (node)", cmap: str = "viridis") -> None:  # fmt: skip
    """A matrix as an image with its colour bar; 1-based tick labels (MATH.md indexing)."""
    M = np.asarray(M, dtype=float)
    im = ax.imshow(M, cmap=cmap, aspect="equal", interpolation="nearest")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for setter, n in ((ax.set_xticks, M.shape[1]), (ax.set_yticks, M.shape[0])):
        step = max(1, n // 6)
        ticks = list(range(0, n, step))
        setter(ticks, [str(t + 1) for t in ticks])


def _style(i: int, is_main: bool) -> dict:
    return {"lw": 2.2 if is_main else 1.1, "ls": "-" if is_main else ("--", ":", "-.")[i % 3], "alpha": 1 if is_main else 0.85}


def curves(ax: Axes, series: Sequence[tuple[str, Sequence[float | None]]], title: str, ylabel: str,
           log: bool = False, hlines: Sequence[tuple[float, str]] = ()) -> None:  # fmt: skip
    """Metric curves against the iteration; the first series is the main option (thick line)."""
    for i, (label, values) in enumerate(series):
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        if log:
            y = np.maximum(y, LOG_FLOOR)
        ax.plot(np.arange(len(y)), y, label=label, **_style(i, i == 0))
    for value, label in hlines:
        ax.axhline(value, color="grey", lw=0.8, ls=":", label=label)
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("GD iteration t")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6.5, loc="best")
    ax.grid(alpha=0.3)


def attention_profile(ax: Axes, profiles: Sequence[tuple[str, Sequence[float]]], title: str) -> None:
    """Mean attention S_i over test inputs against the position i = 1..N (N = the query slot)."""
    for i, (label, prof) in enumerate(profiles):
        ax.plot(np.arange(1, len(prof) + 1), prof, marker=".", ms=3, label=label, lw=1.5 if i == 0 else 1)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("position i (N-1 = parent, N = query slot)")
    ax.set_ylabel("mean attention S_i")
    ax.legend(fontsize=6.5)
    ax.grid(alpha=0.3)


def new_figure(rows: int, cols: int, suptitle: str, width: float = 4.6, height: float = 3.7) -> tuple[Figure, np.ndarray]:
    """A Figure of rows × cols axes (always a 2-D array) with a title naming the setting."""
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    fig.suptitle(suptitle, fontsize=10)
    return fig, axes
