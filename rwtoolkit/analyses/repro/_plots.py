"""Matplotlib panels of the reproduced figures (Agg canvas, no pyplot state), written atomically as PNG.

Conventions every figure follows: legends sit outside the data (right of or below the axes); reference
lines (OPT, chance level 1/K, thresholds) have their own colour and dash pattern, never that of a data
curve (data curves are solid); colour scales of heatmaps include 0 (so a matrix with nearly equal
entries looks constant, not striped) and are shared where panels are compared; a panel whose claim
disagrees with the paper carries a red mark; figures from ``--quick`` runs say so in their title.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from rwtoolkit.io import save_figure_atomic

#: Values at or below this are drawn at it on log axes, in a band labelled as float64 rounding: exact
#: symmetry gives 0, and float64 sums of a few terms leave values of a few × its unit roundoff 1.1e-16.
LOG_FLOOR = 1e-15

#: Reference lines: each kind its own colour and dash pattern, all distinct from the solid data curves.
REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "optimum": {"color": "black", "ls": "--", "lw": 1.3},
    "chance": {"color": "tab:red", "ls": ":", "lw": 1.6},
    "threshold": {"color": "dimgrey", "ls": "-.", "lw": 1.2},
}
#: Second title line of figures from ``rw reproduce --quick``.
QUICK_NOTE = "[QUICK SIZES (rw reproduce --quick): fewer steps and samples than the paper's runs]"
#: Gid of the red mark drawn on a panel whose claim disagrees with the paper (tests look for it).
DISAGREE_GID = "disagrees-with-paper"
LEGEND_FONTSIZE = 8


def save_png(fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` through a temp file in the same folder and os.replace (atomic)."""
    save_figure_atomic(fig, path, dpi=110, metadata={"Software": None})


def colour_limits(*matrices: np.ndarray) -> tuple[float, float]:
    """Colour limits shared by ``matrices``: [0, max] for nonnegative data, [min, 0] for nonpositive, and
    ±max|M| when the signs are mixed. Including 0 keeps a matrix of nearly equal entries one colour.

    >>> colour_limits(np.array([[1.55, 1.67]]))
    (0.0, 1.67)
    >>> colour_limits(np.array([[-1.0, 0.5]]), np.array([[2.0]]))
    (-2.0, 2.0)
    """
    values = np.concatenate([np.asarray(M, dtype=float).ravel() for M in matrices])
    lo, hi = float(values.min()), float(values.max())
    if lo >= 0:
        return 0.0, hi if hi > 0 else 1.0
    if hi <= 0:
        return lo, 0.0
    m = max(-lo, hi)
    return -m, m


def relative_spread(M: np.ndarray) -> float:
    """(max - min) / max|M| of the entries (0 for a zero matrix): how far from constant the matrix is.

    >>> round(relative_spread(np.array([[1.55, 1.67]])), 4)
    0.0719
    """
    M = np.asarray(M, dtype=float)
    top = float(np.abs(M).max())
    return 0.0 if top == 0 else float(M.max() - M.min()) / top


def heatmap(
    fig: Figure,
    ax: Axes,
    M: np.ndarray,
    title: str,
    xlabel: str = "column j (node)",
    ylabel: str = "row i (node)",
    limits: tuple[float, float] | None = None,
    colourbar: bool = True,
) -> AxesImage:
    """A matrix as an image (1-based tick labels); returns the image.

    ``limits``: the colour limits (default ``colour_limits(M)``; pass shared ones to compare panels).
    Matrices whose entries differ by less than 10 % of their size get the spread in the title.
    """
    M = np.asarray(M, dtype=float)
    vmin, vmax = limits if limits is not None else colour_limits(M)
    cmap = "RdBu_r" if vmin < 0 < vmax else "viridis"
    im = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if colourbar:
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    spread = relative_spread(M)
    if 0 < spread < 0.1:
        title += f"\n(entries within {100 * spread:.2g} % of max |entry|)"
    elif spread == 0 and M.size > 1:
        title += "\n(all entries equal)"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for setter, n in ((ax.set_xticks, M.shape[1]), (ax.set_yticks, M.shape[0])):
        step = max(1, n // 6)
        ticks = list(range(0, n, step))
        setter(ticks, [str(t + 1) for t in ticks])
    return im


def legend_outside(ax: Axes, where: str = "right", ncol: int = 1) -> None:
    """The legend of ``ax`` outside its data: to the right of the axes, or below the x-axis label."""
    if where == "right":
        ax.legend(fontsize=LEGEND_FONTSIZE, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    else:
        ax.legend(
            fontsize=LEGEND_FONTSIZE,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
            ncol=ncol,
            borderaxespad=0,
        )


def reference_line(ax: Axes, value: float, kind: str, label: str) -> None:
    """A horizontal reference line in the style of its ``kind`` (a key of ``REFERENCE_STYLES``)."""
    ax.axhline(value, label=label, zorder=1, **REFERENCE_STYLES[kind])


def curves(
    ax: Axes,
    series: Sequence[tuple[str, Sequence[float | None]]],
    title: str,
    ylabel: str,
    log: bool = False,
    refs: Sequence[tuple[float, str, str]] = (),
    legend: str | None = "right",
    colours: Sequence[str] | None = None,
) -> None:
    """Metric curves against the iteration; the first series is the main option (thick line).

    ``refs``: (value, kind, label) reference lines; ``legend``: "right", "below" or None (the caller
    places a shared legend). Data curves are solid, told apart by colour (and markers for the options).
    """
    clipped = False
    for i, (label, values) in enumerate(series):
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        if log:
            clipped = clipped or bool(np.any(y <= LOG_FLOOR))
            y = np.maximum(y, LOG_FLOOR)
        style: dict[str, Any] = (
            {"lw": 2.4, "zorder": 3}
            if i == 0
            else {
                "lw": 1.2,
                "marker": "os^vDP*X"[i % 8],
                "ms": 3.5,
                "markevery": max(1, len(y) // 8),
                "zorder": 2,
            }
        )
        if colours is not None:
            style["color"] = colours[i]
        ax.plot(np.arange(len(y)), y, label=label, ls="-", **style)
    for value, kind, label in refs:
        reference_line(ax, value, kind, label)
    if log:
        ax.set_yscale("log")
        if clipped:
            rounding_band(ax)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("GD iteration t")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if legend is not None:
        legend_outside(ax, legend)


def rounding_band(ax: Axes) -> None:
    """Shade y ≤ LOG_FLOOR on a log axis and say that values there are float64 rounding (or exact 0)."""
    ax.axhspan(LOG_FLOOR / 10, LOG_FLOOR * 1.3, color="0.9", zorder=0)
    ax.text(
        0.01,
        LOG_FLOOR / 3.5,
        f"≤ {LOG_FLOOR:g}: float64 rounding level (exact 0 drawn at {LOG_FLOOR:g})",
        transform=ax.get_yaxis_transform(),
        ha="left",
        va="center",
        fontsize=7,
        color="0.3",
    )
    top = ax.get_ylim()[1]
    ax.set_ylim(LOG_FLOOR / 10, max(top, LOG_FLOOR * 100))


def attention_profile(
    ax: Axes, profiles: Sequence[tuple[str, Sequence[float]]], title: str, legend: str | None = "right"
) -> None:
    """Mean attention S_i over test inputs against the position i = 1..N (N = the query slot).

    The y-axis starts at 0, so that per-position noise around the uniform 1/(N-1) is not magnified.
    """
    for i, (label, prof) in enumerate(profiles):
        ax.plot(np.arange(1, len(prof) + 1), prof, marker=".", ms=3, label=label, lw=1.8 if i == 0 else 1.1)
    ax.set_ylim(0, max(1.05 * max(max(p) for _, p in profiles), 0.02))
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("position i (N-1 = parent, N = query slot)")
    ax.set_ylabel("mean attention S_i")
    ax.grid(alpha=0.3)
    if legend is not None:
        legend_outside(ax, legend)


def mark_disagreement(ax: Axes, claims: Sequence[str]) -> None:
    """A red frame and a red title naming ``claims`` on a panel whose claim(s) disagree with the paper."""
    if not claims:
        return
    for spine in ax.spines.values():
        spine.set_edgecolor("tab:red")
        spine.set_linewidth(2.5)
    note = textwrap.fill("✘ disagrees with the paper: " + "; ".join(claims), 44)
    ax.set_title(f"{ax.get_title()}\n{note}", fontsize=9, color="tab:red", fontweight="bold")
    ax.title.set_gid(DISAGREE_GID)


def new_figure(
    rows: int, cols: int, suptitle: str, width: float = 4.6, height: float = 3.7, quick: bool = False
) -> tuple[Figure, np.ndarray]:
    """A Figure of rows × cols axes (always a 2-D array) with a title naming the setting.

    ``quick``: the figure comes from reduced sizes; a second title line says so.
    """
    fig = Figure(figsize=(width * cols, height * rows + 0.8), layout="constrained")
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    fig.suptitle(suptitle + (f"\n{QUICK_NOTE}" if quick else ""), fontsize=10)
    return fig, axes
