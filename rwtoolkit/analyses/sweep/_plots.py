"""Phase diagrams of a finished sweep (``rw sweep plot DIR``), from ``results.parquet`` alone.

* ``phase_accuracy.png``: accuracy / OPT over (p, N), one panel per K, one colour scale [0, 1]; the exact
  vanishing set of C in p (docs/theory.md#signal) drawn as white circles at its exact p for each N.
* ``escape_sigma_mu.png``: the escape step over (σ, μ), one panel per dtype, one shared logarithmic
  colour scale; cells that do not escape within the run are hatched.
* ``learning_time.png``: the first step with accuracy >= learned_fraction·OPT against |p - p₀|, the
  distance to the nearest point of the vanishing set, log-log, coloured by N.

Cells with several runs (seeds, other varied fields) show their median.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _median_grid(df, x: str, y: str, value: str):
    """(xs, ys, grid[y, x]) with the median of ``value`` per cell (NaN where no run has a value)."""
    import numpy as np

    table = df.groupby([y, x])[value].median().unstack(x)
    return list(table.columns), list(table.index), table.to_numpy(dtype=float, na_value=np.nan)


def _edges(values: list[float], log: bool = False):
    """Cell edges at the midpoints between sorted centres (geometric midpoints on a log axis)."""
    import numpy as np

    v = np.log10(values) if log else np.asarray(values, dtype=float)
    if len(v) == 1:
        mids = np.array([v[0] - 0.5, v[0] + 0.5])
    else:
        inner = (v[1:] + v[:-1]) / 2
        mids = np.concatenate([[2 * v[0] - inner[0]], inner, [2 * v[-1] - inner[-1]]])
    return 10**mids if log else mids


def _panels(count: int):
    """A figure with ``count`` heat-map panels side by side and room for one shared colour bar."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, count, figsize=(4.6 * count + 1, 4.2), squeeze=False, constrained_layout=True)
    return fig, axes[0]


def _phase_accuracy(df, path: Path) -> Path:
    import numpy as np
    import sympy as sp

    from rwtoolkit.analyses.sweep._summaries import vanishing_for
    from rwtoolkit.io import save_figure_atomic

    df = df.assign(p_value=[float(sp.Rational(p)) for p in df["p"]])
    Ks = sorted(df["K"].unique())
    fig, axes = _panels(len(Ks))
    mesh: Any = None
    for ax, K in zip(axes, Ks, strict=True):
        part = df[df["K"] == K]
        ps, Ns, grid = _median_grid(part, "p_value", "N", "accuracy_over_opt")
        mesh = ax.pcolormesh(
            _edges(ps), _edges(Ns), np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=1
        )
        for N in Ns:
            points = [float(q) for q in vanishing_for(int(K), int(N)).points]
            ax.scatter(
                points,
                [N] * len(points),
                s=28,
                facecolors="none",
                edgecolors="white",
                linewidths=1.3,
            )
        ax.set_xlabel("p (probability of a clockwise step)")
        ax.set_ylabel("N (sequence length)")
        ax.set_title(f"K = {K}")
        ax.set_xlim(min(ps) - 0.05, max(ps) + 0.05)
    from matplotlib.lines import Line2D

    marker = Line2D([], [], ls="none", marker="o", mfc="none", mec="black", label="exact vanishing set of C")
    fig.legend(handles=[marker], loc="outside lower center", fontsize=8, frameon=False)
    fig.colorbar(mesh, ax=axes.tolist(), label="final accuracy / OPT")
    fig.suptitle("Accuracy after GD from the sweep's init, exact population")
    return save_figure_atomic(fig, path, dpi=150)


def _escape_sigma_mu(df, path: Path) -> Path:
    import numpy as np
    from matplotlib.colors import LogNorm

    from rwtoolkit.io import save_figure_atomic

    dtypes = sorted(df["dtype"].unique())
    steps = df["escape_step"].dropna()
    norm = LogNorm(vmin=max(1.0, float(steps.min())), vmax=max(2.0, float(steps.max())))
    fig, axes = _panels(len(dtypes))
    mesh: Any = None
    for ax, dtype in zip(axes, dtypes, strict=True):
        part = df[df["dtype"] == dtype]
        sigmas, mus, grid = _median_grid(part, "sigma", "mu", "escape_step")
        xe, ye = _edges(sigmas, log=True), _edges(mus, log=True)
        ax.pcolormesh(xe, ye, np.isnan(grid).astype(float), cmap="Greys", vmin=0, vmax=4, hatch="//")
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(grid), cmap="magma", norm=norm)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("σ (scale of the Gaussian init)")
        ax.set_ylabel("μ = ‖p_j‖²")
        ax.set_title(f"{dtype} (grey: no escape within {int(part['steps'].max())} steps)")
    fig.colorbar(mesh, ax=axes.tolist(), label="escape step (ρ > threshold)")
    fig.suptitle("Escape from the symmetric manifold")
    return save_figure_atomic(fig, path, dpi=150)


def _learning_time(df, path: Path) -> Path:
    import matplotlib.pyplot as plt

    from rwtoolkit.io import save_figure_atomic

    part = df.dropna(subset=["learning_step", "vanishing_distance"])
    part = part[part["vanishing_distance"] > 0]
    fig, ax = plt.subplots(figsize=(5.6, 4.2), constrained_layout=True)
    points = ax.scatter(
        part["vanishing_distance"], part["learning_step"].clip(lower=1), c=part["N"], cmap="viridis", s=22
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("|p − p₀|, distance to the exact vanishing set of C")
    ax.set_ylabel("learning step (accuracy ≥ fraction · OPT)")
    never = int(df["learning_step"].isna().sum())
    ax.set_title(f"Learning time near the vanishing set ({never} runs did not learn)")
    fig.colorbar(points, ax=ax, label="N", ticks=sorted(int(n) for n in part["N"].unique()))
    return save_figure_atomic(fig, path, dpi=150)


def plot_sweep(sweep_dir: str | os.PathLike, out: str | os.PathLike) -> tuple[list[Path], dict[str, str]]:
    """Write the phase diagrams the table supports into ``out``; returns (written, {skipped file: why}).

    The (p, N) diagram needs N and p varied; the (σ, μ) diagram σ and μ (``mu``) varied and
    some run that escapes; the learning-time plot two or more learned runs at positive distance.
    """
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    df = pd.read_parquet(Path(sweep_dir) / "results.parquet")
    out = Path(out)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    if df["N"].nunique() > 1 and df["p"].nunique() > 1 and df["accuracy_over_opt"].notna().any():
        written.append(_phase_accuracy(df, out / "phase_accuracy.png"))
    else:
        skipped["phase_accuracy.png"] = "the sweep does not vary both N and p"
    if df["sigma"].nunique() > 1 and df["mu"].nunique() > 1 and df["escape_step"].notna().any():
        written.append(_escape_sigma_mu(df, out / "escape_sigma_mu.png"))
    else:
        skipped["escape_sigma_mu.png"] = "the sweep does not vary both sigma and mu, or no run escapes"
    learned = df.dropna(subset=["learning_step", "vanishing_distance"])
    if int((learned["vanishing_distance"] > 0).sum()) >= 2:
        written.append(_learning_time(df, out / "learning_time.png"))
    else:
        skipped["learning_time.png"] = (
            "fewer than two runs learned at a positive distance from the vanishing set"
        )
    return written, skipped
