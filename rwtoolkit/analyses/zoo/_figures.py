"""One figure per claim of the zoo (matplotlib PNG, Agg canvas, written atomically): the exact or certified
values the verdict rests on, and a float64 run of ``rwtoolkit.engines.numeric.train_model`` beside them.

* the invariance claims: the distance from the invariant set over t, from zero (exact steps as markers,
  the float run as a line; both 0) and from a Gaussian start σ = 0.05 (the float run leaves the set);
* ``learned_positions_stuck``: max |V − mean V| over t on the stuck walk (0 from zero: V ∝ 1);
* ``makkuva_unigram_point``: ‖∂L/∂V‖_F at (c π 1ᵀ, 0) against c, from the exact formula: never 0;
* ``makkuva_tied_unigram``: the exact Hessian's eigenvalues at the unigram point per configuration, and
  float64 GD (cross-entropy) from that point plus a Gaussian perturbation of σ = 10⁻², L(t) − L(θ_π);
* ``edelman_stages``: R² of f against the unigram and bigram predictors, certified balls at the
  checkpoints (markers), the float run at every step (lines);
* ``nichani_parent_attention``: the mean layer-1 attention at the last step, the parent cells outlined;
* the rows on the papers' own models (``rwtoolkit.analyses.zoo._papers``): each module's own ``figure``.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo._claims import (
    ICL_ALPHA,
    ICL_EPS,
    ICL_ETA,
    Progress,
    ZooClaim,
    icl_predictors,
    r_squared,
)
from rwtoolkit.analyses.zoo._papers import PAPER_ROWS
from rwtoolkit.io import save_figure_atomic

#: Steps of the float runs beside the invariance claims, and the Gaussian start's scale.
FLOAT_STEPS = 60
GAUSSIAN_SIGMA = 0.05
STYLE: dict[str, dict[str, Any]] = {"exact": {"marker": "o", "ls": "none", "color": "black", "ms": 5}}


def _save(fig: Figure, path: Path) -> Path:
    return save_figure_atomic(fig, path, dpi=110, metadata={"Software": None})


def _float_run(task: Any, model: Any, init: str, steps: int = FLOAT_STEPS) -> Any:
    from rwtoolkit.engines.numeric import train_model
    from rwtoolkit.models import rational_positions

    P = np.asarray(rational_positions(task.N, 1), dtype=float)
    return train_model(task, model, P, steps, init=init, sigma=GAUSSIAN_SIGMA, keep_params=True)


def _invariance_figure(
    title: str,
    ylabel: str,
    distance: Callable[[dict[str, np.ndarray]], float],
    model_hyper: dict,
    task: tuple[int, int, str] = (3, 4, "3/10"),
) -> Callable[[ZooClaim, Progress], Figure]:
    def draw(claim: ZooClaim, progress: Progress) -> Figure:
        from rwtoolkit.engines.exact import EXACT, derive_model
        from rwtoolkit.models import get_model
        from rwtoolkit.tasks import CircleWalk

        walk, model = CircleWalk(*task), get_model(**model_hyper)
        fig = Figure(figsize=(6.8, 3.6), layout="constrained")
        ax = fig.add_subplot(1, 1, 1)
        for init, colour in (("zero", "tab:blue"), ("gaussian", "tab:orange")):
            progress(f"figure: float64 GD from {init}, {FLOAT_STEPS} steps")
            run = _float_run(walk, model, init)
            ts = sorted(run.params)
            label = "float64 from zero" if init == "zero" else f"float64 from Gaussian σ = {GAUSSIAN_SIGMA}"
            ax.plot(ts, [distance(run.params[t]) for t in ts], color=colour, lw=1.6, label=label)
        progress("figure: exact GD from zero, 3 steps")
        exact = derive_model(walk, model, 3)
        ax.plot(
            range(4),
            [distance({k: EXACT.to_float(v) for k, v in s.params.items()}) for s in exact.states],
            label="exact from zero (t ≤ 3)",
            **STYLE["exact"],
        )
        ax.set_xlabel("GD step t")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}\nCircleWalk({task[0]}, {task[1]}, {task[2]}), η = 1, ε = 1/10", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
        return fig

    return draw


def _key_query_distance(params: dict[str, np.ndarray]) -> float:
    return float(np.abs(params["W_K"]).max() + np.abs(params["W_Q"]).max())


def _heads_distance(params: dict[str, np.ndarray]) -> float:
    return float(sum(np.abs(params[k][0] - params[k][1]).max() for k in ("V", "W")))


def _norm(params: dict[str, np.ndarray]) -> float:
    return float(max(np.abs(v).max() for v in params.values()))


def _makkuva(claim: ZooClaim, progress: Progress) -> Figure:
    fig = Figure(figsize=(6.8, 3.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    cs = np.linspace(0, 20, 201)
    for name, data in claim.figure.items():
        E = np.array([[float(x) for x in row] for row in data["E"]])
        pi = np.array([float(x) for x in data["pi"]])
        scale = float(Fraction(data["N"] - 1, data["N"]))
        norms = [
            float(np.sqrt(sum((E[k] / (c * pi[k] * scale + float(data["eps"]))) @ E[k] for k in range(2))))
            for c in cs
        ]
        ax.plot(cs, norms, lw=1.6, label=f"binary_markov {name}")
    ax.axhline(0.0, color="tab:red", ls=":", lw=1.4, label="0 (a stationary point)")
    ax.set_xlabel("c (V = c π 1ᵀ, W = 0)")
    ax.set_ylabel("‖∂L/∂V‖_F (exact formula)")
    ax.set_ylim(bottom=-0.05)
    ax.set_title(
        "The unigram point is not stationary in the one-layer model (log-loss, ε = 1/10)", fontsize=10
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    return fig


def _float_r2(task: Any, steps: int) -> tuple[list[int], list[float], list[float]]:
    """R² of the float64 run's f against the unigram and bigram predictors at every step."""
    from rwtoolkit.models import FLOAT64, Tape, embed, get_model, rational_positions

    model = get_model("two_layer")
    run = _float_run(task, model, "zero", steps)
    pop = task.population()
    inputs = embed(FLOAT64, pop.tokens, pop.K, np.asarray(rational_positions(pop.N, 1), dtype=float))
    w = [float(q) for q in pop.exact_probs()]
    pred = {name: np.array(p, dtype=float) for name, p in icl_predictors(task).items()}
    ts: list[int] = []
    uni: list[float] = []
    big: list[float] = []
    for t in sorted(run.params):
        f = model.forward(Tape(FLOAT64), run.params[t], inputs).f.value
        r2 = [r_squared(f, pred[name], w) for name in ("unigram", "bigram")]
        if r2[0] is None:  # f the same for every input (t = 0): no stage yet
            continue
        ts.append(t)
        uni.append(float(r2[0]))
        big.append(float(r2[1]))
    return ts, uni, big


def _edelman(claim: ZooClaim, progress: Progress) -> Figure:
    from rwtoolkit.tasks import icl_markov_task

    runs = list(claim.figure.items())
    fig = Figure(figsize=(4.2 * len(runs) + 2.4, 3.6), layout="constrained")
    for i, (name, data) in enumerate(runs):
        ax: Axes = fig.add_subplot(1, len(runs), i + 1)
        progress(f"figure: float64 GD on icl_markov S=2 {name}, {data['steps']} steps")
        ts, uni, big = _float_r2(icl_markov_task(2, data["N"], ICL_ALPHA), data["steps"])
        ax.plot(ts, uni, color="tab:blue", lw=1.4, label="unigram, float64 run")
        ax.plot(ts, big, color="tab:green", lw=1.4, label="bigram, float64 run")
        ax.plot(data["t"], data["unigram"], "o", color="tab:blue", ms=3.5, label="unigram, certified balls")
        ax.plot(data["t"], data["bigram"], "s", color="tab:green", ms=3.5, label="bigram, certified balls")
        if "bigram" in data["first"]:
            ax.axvline(
                data["first"]["bigram"], color="dimgrey", ls="-.", lw=1.1, label="first bigram checkpoint"
            )
        ax.set_xlabel("GD step t")
        ax.set_ylabel("R² of f against the predictor")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"icl_markov S=2 {name}, two_layer, η = {ICL_ETA}, ε = {ICL_EPS}", fontsize=9)
    fig.axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    return fig


def _nichani(claim: ZooClaim, progress: Progress) -> Figure:
    from matplotlib.patches import Rectangle

    runs = list(claim.figure.items())
    fig = Figure(figsize=(3.6 * len(runs) + 1.4, 3.9), layout="constrained")
    image = None
    for i, (name, data) in enumerate(runs):
        ax = fig.add_subplot(1, len(runs), i + 1)
        grid = np.ma.masked_where(np.triu(np.ones_like(data["attention"]), 1) > 0, data["attention"])
        image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis")
        N = grid.shape[0]
        for row in range(1, N):
            ax.add_patch(Rectangle((row - 1.5, row - 0.5), 1, 1, fill=False, ec="white", lw=2))
        ax.set_xticks(range(N), [str(j + 1) for j in range(N)])
        ax.set_yticks(range(N), [str(j + 1) for j in range(N)])
        ax.set_xlabel("attended position j")
        ax.set_ylabel("position i")
        ax.set_title(f"{name}, t = {data['steps']} (parent outlined)", fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=fig.axes, fraction=0.04, label="mean layer-1 attention")
    return fig


#: Claim id → its figure.
#: The perturbation of the unigram point the float runs start from, their steps and learning rate.
UNIGRAM_SIGMA, UNIGRAM_STEPS, UNIGRAM_ETA = 1e-2, 400, 1.0


def _unigram_run(data: dict[str, Any]) -> tuple[np.ndarray, float]:
    """Float64 GD with the cross-entropy from the unigram point plus N(0, σ²) noise (seed 0): (L(t), L(θ_π))."""
    import torch

    from rwtoolkit.analyses.zoo._claims import unigram_point
    from rwtoolkit.engines.numeric import TensorLoss, TorchArithmetic
    from rwtoolkit.models import batch, descend, get_model
    from rwtoolkit.tasks import binary_markov_task

    model = get_model(data["model"])
    task = binary_markov_task(data["p"], data["q"], data["N"])
    point, P, _ = unigram_point(task, model)
    pop = task.population()
    ar, loss = TorchArithmetic(torch.float64), TensorLoss("log", 0.0)
    weights = [float(w) for w in pop.exact_probs()]
    population = batch(ar, pop.tokens, pop.labels, weights, pop.K, ar.asarray(np.asarray(P, dtype=float)))
    rng = np.random.default_rng(0)
    start = {
        k: ar.asarray(np.asarray(v, dtype=float) + UNIGRAM_SIGMA * rng.standard_normal(np.shape(v)))
        for k, v in point.items()
    }
    base = descend(
        model,
        ar,
        {k: ar.asarray(np.asarray(v, dtype=float)) for k, v in point.items()},
        population,
        loss,
        UNIGRAM_ETA,
        0,
    )[0]
    states = descend(model, ar, start, population, loss, UNIGRAM_ETA, UNIGRAM_STEPS)
    return np.array([float(s.loss) for s in states]), float(base.loss)


def _makkuva_tied(claim: ZooClaim, progress: Progress) -> Figure:
    fig = Figure(figsize=(11.5, 4.0), layout="constrained")
    spectrum, runs = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    short = {name: name.replace("_embedding", "") for name in claim.figure}
    colours = {"tied_embedding": "tab:blue", "untied_embedding": "tab:orange"}
    for row, (name, data) in enumerate(claim.figure.items()):
        values = np.asarray(data["eigenvalues"])
        above = float(Fraction(data["p"]) + Fraction(data["q"])) > 1
        marker = "o" if above else "s"
        spectrum.scatter(
            values, np.full(values.shape, row), s=18, color=colours[data["model"]], marker=marker
        )
        progress(f"figure: float64 GD from the unigram point, {name}, {UNIGRAM_STEPS} steps")
        losses, base = _unigram_run(data)
        runs.plot(
            np.arange(len(losses)),
            losses - base,
            lw=2.0 if above else 1.4,
            color=colours[data["model"]],
            ls="-" if above else "--",
            label=short[name],
            zorder=3,
        )
    spectrum.axvline(0.0, color="0.6", lw=0.8, ls=":")
    spectrum.set_yticks(range(len(claim.figure)), [short[n] for n in claim.figure], fontsize=7)
    spectrum.set_xlabel("eigenvalue of the exact Hessian at the unigram point")
    spectrum.set_title("Exact Hessian (circles: p + q > 1; squares: p + q < 1)", fontsize=9)
    runs.axhline(0.0, color="0.6", lw=0.8, ls=":")
    runs.set_xlabel("GD step t (float64, cross-entropy, η = 1)")
    runs.set_ylabel("L(t) − L(unigram point)")
    runs.set_title(f"GD from the point + N(0, {UNIGRAM_SIGMA:g}²) noise (solid: p + q > 1)", fontsize=9)
    runs.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    return fig


FIGURES: dict[str, Callable[[ZooClaim, Progress], Figure]] = {
    "key_query_stuck": _invariance_figure(
        "Separate key and query from zero never move",
        "max |W_K| + max |W_Q|",
        _key_query_distance,
        {"name": "key_query", "d": 1},
    ),
    "identical_heads": _invariance_figure(
        "Identical heads stay identical",
        "max |V₁ − V₂| + max |W₁ − W₂|",
        _heads_distance,
        {"name": "multi_head", "H": 2},
    ),
    "linear_zero_fixed": _invariance_figure(
        "Linear attention from zero never moves", "max |θ(t)|", _norm, {"name": "linear_attention"}
    ),
    "learned_positions_stuck": _invariance_figure(
        "Learned positions: V stays ∝ 1 (Theorem 4.1)",
        "max |V − mean V|",
        lambda params: float(np.abs(params["V"] - params["V"].mean()).max()),
        {"name": "learned_positions"},
        task=(3, 4, "1"),
    ),
    "makkuva_unigram_point": _makkuva,
    "makkuva_tied_unigram": _makkuva_tied,
    "edelman_stages": _edelman,
    "nichani_parent_attention": _nichani,
    **{module.CLAIM.id: module.figure for module in PAPER_ROWS.values()},
}


def write_figure(claim: ZooClaim, folder: str | Path, progress: Progress) -> Path:
    """FOLDER/<claim id>.png: the figure of a checked claim, from what its check found (atomic); ``progress``
    hears each run the figure adds (float64 GD beside the exact or certified values) as it starts."""
    return _save(FIGURES[claim.id](claim, progress), Path(folder) / f"{claim.id}.png")
