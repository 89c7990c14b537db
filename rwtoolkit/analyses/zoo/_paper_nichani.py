"""Nichani, Damian, Lee (2024) on the paper's own model: after stage 1 of the staged training, layer 1's attention
points from every non-root position to its parent in the causal graph, on the chain and on two other graphs.

The model is ``examples/papers/nichani_causal.py:simplified`` (position-position attention A1 from 0, token against
layer 1's output A2 from β₀ I, read-out log(f + ε)), trained with the paper's loss at the last position
(``CrossEntropy("last")``) in the paper's two stages: A1 alone for τ₁ steps with A2 fixed, then A2 alone for τ₂
steps (``STAGES(τ₁, τ₂)``). The task is the in-context causal graph (``icl_markov_task(S, N, α, parents)``): each
sequence draws π with Dirichlet(α) rows, x_i ~ π(x_{p(i)}, ·), roots uniform, and the label y ~ π(x_{N−1}, ·)
from the query (the authors' ``InContextTree``). The run is certified (arb balls, the generic ball engine with
stages); a float64 run of the same model, objective and stages stands beside it.

The criterion, per graph: at t = τ₁ every row i of softmax(A1) with a parent (p(i) ≠ 0) has its entry at p(i)
above every other entry of the row, each comparison decided in balls (holds), one decided the other way (does
not hold), or one undecided (inconclusive). The ε-smoothed read-out makes the model's loss a
cross-entropy of (f + ε)/(1 + Sε), so it is never below the task's conditional entropy H(y | x), reported beside
the stage-2 loss.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo._claims import Finding, Progress, ZooClaim, ball_text, paper_model
from rwtoolkit.io import Verdict

MODEL = "nichani_causal.py:simplified"
#: The alphabet and the Dirichlet prior of the task; the learning rate and the stages (τ₁ steps of A1, τ₂ of A2).
S, ALPHA = 2, 1
ETA, TAU1, TAU2 = Fraction(4), 100, 50
#: Certified checkpoints every EVERY steps (and the last).
EVERY = 10
#: The configurations (N, graph, query a root) of the quick and the full run: every graph with the query's parent
#: the graph's (the chain: the in-context Markov chain), and with the query a root, uniform and independent of the
#: context, as the authors' code draws it (``test_token``). N = 9: sequence length 8, 256 sequences.
QUICK = ((5, "chain", False), (5, "tree", False), (5, "skip", False), (5, "chain", True))
FULL = tuple((N, g, False) for N in (5, 7, 9) for g in ("chain", "tree", "skip")) + tuple(
    (N, g, True) for N in (5, 7) for g in ("chain", "tree", "skip")
)


def graphs(N: int) -> dict[str, tuple[int, ...]]:
    """The causal graphs checked at length N: 1-based parents of positions 2..N−1 (0: a root).

    chain p(i) = i − 1 (the in-context Markov chain); tree p(i) = ⌊i/2⌋ (a binary tree, x_1 its root);
    skip p(i) = i − 2 for i ≥ 3, position 2 a second root (two interleaved chains).

    >>> graphs(5)
    {'chain': (1, 2, 3), 'tree': (1, 1, 2), 'skip': (0, 1, 2)}
    """
    return {
        "chain": tuple(i - 1 for i in range(2, N)),
        "tree": tuple(i // 2 for i in range(2, N)),
        "skip": tuple(i - 2 for i in range(2, N)),
    }


def softmax_rows(A1: np.ndarray, exp: Any, zero: Any) -> np.ndarray:
    """softmax(A1) under the causal mask: row i is softmax over j ≤ i, 0 above the diagonal (any number type:
    ``exp`` its exponential, ``zero`` its 0)."""
    L = A1.shape[0]
    out = np.empty((L, L), dtype=object)
    for i in range(L):
        e = [exp(A1[i, j]) for j in range(i + 1)]
        total = sum(e[1:], e[0])
        for j in range(L):
            out[i, j] = e[j] / total if j <= i else zero
    return out


def parent_rows(weights: np.ndarray, parents: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """Rows (1-based positions) of ``weights`` (softmax(A1), balls or floats) whose parent entry is above every
    other entry of the row (decided), below or equal to one (failed), or neither (undecided); roots skipped.

    Position i = k + 2 has parent ``parents[k]`` (1-based, 0: a root): row i − 1, column p(i) − 1.

    >>> w = np.array([[1.0, 0, 0], [0.7, 0.3, 0], [0.2, 0.5, 0.3]])
    >>> parent_rows(w, (1, 2)), parent_rows(w, (1, 1)), parent_rows(w, (0, 2))
    (([2, 3], [], []), ([2], [3], []), ([3], [], []))
    """
    above, failed, undecided = [], [], []
    for k, p in enumerate(parents):
        if p == 0:
            continue
        i = k + 2
        row = [weights[i - 1, j] for j in range(i)]
        mine, others = row[p - 1], [row[j] for j in range(i) if j != p - 1]
        if all(mine > o for o in others):
            above.append(i)
        elif any(bool(mine <= o) for o in others):  # a ball comparison is True only where it is decided
            failed.append(i)
        else:
            undecided.append(i)
    return above, failed, undecided


def conditional_entropy(task: Any) -> Any:
    """H(y | x) of the task's exact population as an arb ball (natural log): the least cross-entropy of any
    predictor of the label from the sequence."""
    from flint import arb, fmpq

    pop = task.population()
    joint: dict[tuple[int, ...], list[Any]] = {}
    for tokens, y, q in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
        joint.setdefault(tuple(tokens), [fmpq(0)] * pop.K)[y] += fmpq(int(q.p), int(q.q))
    h = arb(0)
    for row in joint.values():
        total = sum(row[1:], row[0])
        for q in row:
            if q != 0:
                h -= arb(q) * (arb(q / total)).log()
    return h


def float_run(task: Any, steps: int) -> list[Any]:
    """Float64 GD of the same model, objective, rate and stages from its own start: every step's evaluation."""
    from rwtoolkit.models import FLOAT64, CrossEntropy, batch, gradient_steps, rational_positions

    model = paper_model(MODEL)
    pop = task.population()
    P = FLOAT64.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(FLOAT64, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)
    params = dict(model.own_start(FLOAT64, data.inputs.sizes, "own"))
    stages = [(TAU1, ["A1"]), (TAU2, ["A2"])]
    return list(
        gradient_steps(model, FLOAT64, params, data, CrossEntropy("last"), float(ETA), steps, stages=stages)
    )


def certified_run(task: Any) -> Any:
    """The certified staged run (arb balls) of the model on ``task``: checkpoints every ``EVERY`` steps."""
    from rwtoolkit.engines import select
    from rwtoolkit.engines.balls import ball_model_job

    model = paper_model(MODEL)
    steps = TAU1 + TAU2
    stages = [(TAU1, ["A1"]), (TAU2, ["A2"])]
    job = ball_model_job(task, model, steps, init="own", eta=ETA, objective="last", stages=stages)
    return select(model, "balls", "own").load()(
        task, model, steps, keep=lambda t: t % EVERY == 0, **job.arguments
    )


def _float_softmax(A1: np.ndarray) -> np.ndarray:
    return np.array(softmax_rows(np.asarray(A1, dtype=float), math.exp, 0.0), dtype=float)


def _configuration(
    N: int, name: str, parents: tuple[int, ...], progress: Progress
) -> tuple[Verdict, str, dict]:
    """One graph at one length: the certified and float runs, the verdict, the evidence line, the figure data."""
    from flint import arb

    from rwtoolkit.engines.balls import precision
    from rwtoolkit.tasks import icl_markov_task

    task = icl_markov_task(S, N, ALPHA, parents=parents)
    label = f"icl_markov S={S} N={N} α={ALPHA} {name} parents={list(parents)}"
    progress(f"{label}: simplified, stages A1 {TAU1} + A2 {TAU2} steps in balls")
    started = time.perf_counter()
    traj = certified_run(task)
    seconds = time.perf_counter() - started
    states = {r.step: r.state for r in traj.records}
    with precision(traj.prec):  # the softmax and H(y | x) at the run's precision
        weights = softmax_rows(states[TAU1].params["A1"], lambda x: x.exp(), arb(0))
        ball_weights = [
            softmax_rows(states[t].params["A1"], lambda x: x.exp(), arb(0)) for t in sorted(states)
        ]
        H = conditional_entropy(task)
    above, failed, undecided = parent_rows(weights, parents)
    widest = max(float(w.rad()) for w in weights.ravel())
    verdict = Verdict.INCONCLUSIVE if undecided else Verdict.FAILS if failed else Verdict.HOLDS
    frozen = all(
        a.mid() == b.mid() and a.rad() == b.rad()
        for a, b in zip(
            states[TAU1].params["A1"].ravel(), states[TAU1 + TAU2].params["A1"].ravel(), strict=True
        )
    )
    progress(f"{label}: float64 run of the same model and stages")
    floats = float_run(task, TAU1 + TAU2)
    fw = _float_softmax(floats[TAU1].params["A1"])
    f_above, f_failed, _ = parent_rows(fw, parents)
    gap = max(abs(float(w.mid()) - fw[i, j]) for (i, j), w in np.ndenumerate(weights))
    rows = []
    for k, p in enumerate(parents):
        i = k + 2
        if p == 0:
            rows.append(f"i={i}: a root")
            continue
        best_other = max((j for j in range(i) if j != p - 1), key=lambda j: float(weights[i - 1, j].mid()))
        status = "above" if i in above else "NOT above" if i in failed else "undecided"
        rows.append(
            f"i={i}: parent {p} {ball_text(weights[i - 1, p - 1], 3)} vs {best_other + 1} "
            f"{ball_text(weights[i - 1, best_other], 3)} {status}"
        )
    loss = {t: states[t].loss for t in (0, TAU1, TAU1 + TAU2)}
    A2 = states[TAU1 + TAU2].params["A2"]
    A2_text = "[" + ", ".join("[" + ", ".join(ball_text(a, 3) for a in row) + "]" for row in A2) + "]"
    line = (
        f"{label}, simplified (A1 = 0, A2 = I), CrossEntropy last, η={ETA}, A1 for τ₁={TAU1} then A2 for "
        f"τ₂={TAU2} steps, balls ({traj.prec} bits, {seconds:.1f} s): softmax(A1) at t={TAU1} (ball midpoints, "
        f"widest radius {widest:.1e}), the parent's entry against the row's largest other: {'; '.join(rows)}"
        + (f"; undecided rows {undecided}" if undecided else "")
        + f"; A1 {'unchanged' if frozen else 'CHANGED'} in stage 2; loss t=0 {ball_text(loss[0])}, t={TAU1} "
        f"{ball_text(loss[TAU1])}, t={TAU1 + TAU2} {ball_text(loss[TAU1 + TAU2])} (H(y|x) = {ball_text(H)}), A2(t={TAU1 + TAU2}) = "
        f"{A2_text}; float64 evidence: "
        f"parent above in rows {f_above}"
        + (f", not in {f_failed}" if f_failed else "")
        + f", max |softmax(A1) float − ball midpoint| = {gap:.1e}, loss t={TAU1 + TAU2} {floats[-1].loss:.4f}"
    )
    float_weights = [_float_softmax(e.params["A1"]) for e in floats]
    watched = [k + 2 for k, p in enumerate(parents) if p]
    figure = {
        "N": N,
        "graph": name,
        "parents": parents,
        "softmax": np.array([[float(w.mid()) for w in row] for row in weights]),
        "t": sorted(states),
        "parent_balls": {
            i: [float(w[i - 1, parents[i - 2] - 1].mid()) for w in ball_weights] for i in watched
        },
        "parent_float": {i: [float(w[i - 1, parents[i - 2] - 1]) for w in float_weights] for i in watched},
        "loss_balls": [float(states[t].loss.mid()) for t in sorted(states)],
        "loss_float": [float(e.loss) for e in floats],
        "entropy": float(H.mid()),
    }
    config = {
        "task": "icl_markov",
        "S": S,
        "N": N,
        "alpha": str(ALPHA),
        "graph": name,
        "parents": list(parents),
        "eta": str(ETA),
        "stages": [[TAU1, ["A1"]], [TAU2, ["A2"]]],
        "objective": "last",
    }
    return verdict, line, {"config": config, "figure": figure}


def _run(quick: bool, progress: Progress) -> Finding:
    verdicts, evidence, configurations, figures = [], [], [], {}
    for N, graph, query_root in QUICK if quick else FULL:
        parents = graphs(N)[graph]
        name = graph
        if query_root:  # the query x_{N−1} a root, as in the authors' code
            parents, name = (*parents[:-1], 0), f"{graph}, query a root"
        verdict, line, data = _configuration(N, name, parents, progress)
        verdicts.append(verdict)
        evidence.append(line)
        configurations.append(data["config"])
        figures[f"N={N} {name}"] = data["figure"]
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figures)


CLAIM = ZooClaim(
    id="nichani_parent_attention_paper",
    source="Nichani, Damian, Lee, How Transformers Learn Causal Structure with Gradient Descent (ICML 2024), the "
    "main theorem on the staged training (number not verified in the text): after stage 1 (A1 trained with "
    "A2 fixed) the first attention layer encodes the latent causal graph, each position attending to its parent",
    statement="after stage 1 of the paper's staged training, softmax(A1)[i, ·] is largest at the parent p(i) for "
    "every non-root position i, on the chain and on other causal graphs",
    model="examples/papers/nichani_causal.py:simplified, the paper's simplified two-layer model (A1 from 0, A2 "
    "from β₀ I, β₀ = 1; read-out log(f + ε), ε = 2⁻⁸), CrossEntropy last, GD η = 4 in stages: A1 for τ₁ = 100 "
    "steps, then A2 for τ₂ = 50",
    task="icl_markov S=2, α=1 with parents: the chain p(i) = i − 1, the tree p(i) = ⌊i/2⌋, the skip graph "
    "p(i) = i − 2 (position 2 a root), the label's parent the query x_{N−1}; each also with the query a root, "
    "uniform and independent of the context, as the authors' code draws it; roots uniform (the authors' code "
    "draws them from π's stationary law, which has no exact population here)",
    criterion="at t = τ₁, for every position i with a parent, softmax(A1)[i, p(i)] > softmax(A1)[i, j] for every "
    "other j ≤ i, each comparison decided in certified balls; any undecided comparison makes the row inconclusive",
    run=_run,
)


def figure(claim: ZooClaim, progress: Progress) -> Figure:
    """softmax(A1) at t = τ₁ per graph (certified ball midpoints, parents outlined), and the parent's attention
    over t: certified checkpoints as markers, the float64 run as lines (stage 2 from t = τ₁ keeps A1)."""
    from matplotlib.patches import Rectangle

    runs = [
        (name, data)
        for name, data in claim.figure.items()
        if data["N"] == max(d["N"] for d in claim.figure.values())
    ]
    fig = Figure(figsize=(3.3 * len(runs) + 1.2, 6.6), layout="constrained")
    grid = fig.add_gridspec(2, len(runs))
    image = None
    handles: dict[int, Any] = {}
    for c, (_, data) in enumerate(runs):
        ax = fig.add_subplot(grid[0, c])
        w = data["softmax"]
        L = w.shape[0]
        image = ax.imshow(
            np.ma.masked_where(np.triu(np.ones_like(w), 1) > 0, w), vmin=0, vmax=1, cmap="viridis"
        )
        for k, p in enumerate(data["parents"]):
            if p:
                ax.add_patch(Rectangle((p - 1.5, k + 0.5), 1, 1, fill=False, ec="white", lw=2))
        ax.set_xticks(range(L), [str(j + 1) for j in range(L)])
        ax.set_yticks(range(L), [str(j + 1) for j in range(L)])
        ax.set_xlabel("attended position j")
        ax.set_ylabel("position i")
        ax.set_title(f"{data['graph']}, N = {data['N']}: softmax(A1) at t = {TAU1}", fontsize=9)
        ax2 = fig.add_subplot(grid[1, c])
        for i, values in data["parent_balls"].items():
            colour = f"C{(i - 2) % 10}"  # one colour per position i, the same in every panel
            ax2.plot(range(len(data["parent_float"][i])), data["parent_float"][i], color=colour, lw=1.2)
            (marker,) = ax2.plot(data["t"], values, "o", color=colour, ms=3, label=f"i = {i}")
            handles.setdefault(i, marker)
        ax2.axvline(TAU1, color="dimgrey", ls="--", lw=1)
        ax2.set_xlabel("GD step t (stage 2 from the dashed line)")
        ax2.set_ylabel("softmax(A1)[i, p(i)]")
        ax2.set_ylim(0, 1.02)
        ax2.set_title("markers: certified balls; lines: float64 run", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=fig.axes[0::2], fraction=0.03, label="softmax(A1)")
    fig.legend(
        [handles[i] for i in sorted(handles)],
        [f"position i = {i}" for i in sorted(handles)],
        loc="outside right lower",
        fontsize=7,
        frameon=False,
        title="parent's attention",
        title_fontsize=7,
    )
    fig.suptitle(
        f"Nichani et al.: layer-1 attention after stage 1, simplified model, η = {ETA}, τ₁ = {TAU1}, τ₂ = {TAU2}",
        fontsize=10,
    )
    return fig
