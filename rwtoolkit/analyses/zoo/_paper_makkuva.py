"""Makkuva et al., *Attention with Markov* (2024): the unigram point θ_π on the paper's own model (issue 42).

The row ``makkuva_unigram_point_paper``: on ``examples/papers/makkuva_markov.py`` (``tied_no_norm`` and
``untied_no_norm``, the paper's equations without layer norm, run in exact SymPy arithmetic) and the paper's loss
(the binary cross-entropy at every position, the toolkit's ``CrossEntropy("lm")``), the point θ_π (every parameter
0 but the bias b = log(π₁/π₀), so σ(logit_n) = π₁ at every position) is checked for stationarity and its Hessian's
inertia is counted exactly; a float64 GD run from θ_π plus a small dyadic perturbation is reported beside it as
float64 evidence.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo._claims import Finding, Progress, ZooClaim, paper_model
from rwtoolkit.io import Verdict

#: The models checked: (factory, tied).
MODELS = (("tied_no_norm", True), ("untied_no_norm", False))
#: (p, q, N) of quick mode, and those full mode adds (sequence length L = N − 1).
QUICK_CASES = (("7/10", "7/10", 3),)
FULL_CASES = (("3/10", "3/10", 3), ("7/10", "7/10", 5), ("3/10", "3/10", 5))
#: The float64 GD run from θ_π + δ: step size, steps (quick, full), perturbation scale 2^-6 and its seed.
GD_ETA, GD_STEPS, GD_SCALE, GD_SEED = 1.0, (200, 2000), 2.0**-6, 0


def unigram_point(model: Any, task: Any) -> tuple[dict[str, Any], Any, Any]:
    """θ_π of the paper's model on the binary task in exact SymPy numbers, with the exact batch and arithmetic.

    Every parameter is 0 but b = log(π₁/π₀), so the logit is b and the prediction π₁ at every position. The task
    starts its chain in π (rwtoolkit/tasks/_markov.py), so every position's marginal is π and θ_π is the optimum of
    the constant predictors of the position-averaged law. Returns (the point, the batch, the arithmetic).
    """
    from rwtoolkit.engines.exact import SYMPY
    from rwtoolkit.models import batch, rational_positions

    pop = task.population()
    P = SYMPY.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(SYMPY, pop.tokens, pop.labels, [Fraction(x) for x in pop.exact_probs()], pop.K, P)
    start = dict(model.own_start(SYMPY, data.inputs.sizes, "own"))
    pi = [sp.Integer(0), sp.Integer(0)]
    for y, prob in zip(pop.labels.tolist(), pop.exact_probs(), strict=True):
        pi[int(y)] += sp.nsimplify(prob)
    point = {k: SYMPY.asarray(np.full(np.shape(v), sp.Integer(0), dtype=object)) for k, v in start.items()}
    point["b"] = SYMPY.asarray(np.array([sp.log(pi[1] / pi[0])], dtype=object))
    return point, data, SYMPY


def float_gd(model: Any, task: Any, point: dict[str, Any], steps: int) -> dict[str, list[float]]:
    """Float64 GD (η = GD_ETA) on the paper's loss from θ_π plus a seeded perturbation in {±2^-6}: L(t) − L(θ_π)
    and ‖θ(t) − θ_π‖ at every step (float64 evidence)."""
    from rwtoolkit.models import FLOAT64, CrossEntropy, batch, evaluate, rational_positions

    pop = task.population()
    P = FLOAT64.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(FLOAT64, pop.tokens, pop.labels, [Fraction(x) for x in pop.exact_probs()], pop.K, P)
    centre = {
        k: np.array([float(x) for x in np.asarray(v).flat]).reshape(np.shape(v)) for k, v in point.items()
    }
    rng = np.random.default_rng(GD_SEED)
    theta = {k: v + GD_SCALE * rng.choice([-1.0, 1.0], size=v.shape) for k, v in centre.items()}
    objective = CrossEntropy("lm")
    base = float(
        evaluate(model, FLOAT64, {k: FLOAT64.asarray(v) for k, v in centre.items()}, data, objective).loss
    )
    gap: list[float] = []
    distance: list[float] = []
    for _ in range(steps + 1):
        ev = evaluate(model, FLOAT64, {k: FLOAT64.asarray(v) for k, v in theta.items()}, data, objective)
        gap.append(float(ev.loss) - base)
        distance.append(float(np.sqrt(sum(float(np.sum((theta[k] - centre[k]) ** 2)) for k in theta))))
        assert ev.gradient is not None
        theta = {k: theta[k] - GD_ETA * np.asarray(ev.gradient[k], dtype=float) for k in theta}
    return {"gap": gap, "distance": distance}


def _run(quick: bool, progress: Progress) -> Finding:
    """Exact stationarity and Hessian inertia at θ_π, tied and untied, and the float64 GD from θ_π + δ."""
    from rwtoolkit.engines.exact import hessian_inertia
    from rwtoolkit.models import CrossEntropy, evaluate, hessian
    from rwtoolkit.tasks import binary_markov_task

    cases = QUICK_CASES + (() if quick else FULL_CASES)
    evidence: list[str] = []
    configurations: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    figure: dict[str, Any] = {}
    for name, tied in MODELS:
        model = paper_model(f"makkuva_markov.py:{name}")
        for p, q, N in cases:
            progress(f"{name} binary_markov p={p} q={q} N={N}: exact gradient and Hessian at θ_π")
            started = time.perf_counter()
            task = binary_markov_task(p, q, N)
            point, data, ar = unigram_point(model, task)
            ev = evaluate(model, ar, point, data, CrossEntropy("lm"))
            assert ev.gradient is not None
            stationary = all(sp.simplify(g) == 0 for v in ev.gradient.values() for g in np.asarray(v).flat)
            H = sp.Matrix(hessian(model, ar, point, data, CrossEntropy("lm")).tolist())
            plus, zero, minus = hessian_inertia(H)
            above = Fraction(p) + Fraction(q) > 1
            saddle_expected = not (tied and above)
            verdicts.append(Verdict.HOLDS if stationary and (minus > 0) == saddle_expected else Verdict.FAILS)
            gd = float_gd(model, task, point, GD_STEPS[0] if quick else GD_STEPS[1])
            what = (
                "a saddle (negative curvature, decided exactly)"
                if minus
                else f"no negative curvature (second order only: the {zero} flat directions leave a minimum undecided)"
            )
            evidence.append(
                f"{name} binary_markov p={p} q={q} (p+q={Fraction(p) + Fraction(q)}) N={N}: θ_π (b = "
                f"{point['b'][0]}), L(θ_π) = {sp.nsimplify(ev.loss)}; ∇L {'= 0 exactly' if stationary else '≠ 0'}; "
                f"Hessian inertia (+{plus}, 0×{zero}, −{minus}) exactly: {what}; the paper: "
                f"{'a saddle' if saddle_expected else 'a local minimum'}; float64 evidence: GD η={GD_ETA} from "
                f"θ_π + 2^-6 signs, after {len(gd['gap']) - 1} steps L − L(θ_π) = {gd['gap'][-1]:.3e}, "
                f"‖θ − θ_π‖ = {gd['distance'][-1]:.3e} (from {gd['distance'][0]:.3e}) "
                f"[{time.perf_counter() - started:.1f} s]"
            )
            configurations.append(
                {"model": name, "task": "binary_markov", "p": p, "q": q, "N": N, "loss": "lm"}
            )
            figure[f"{name} p={p} q={q} N={N}"] = {
                "eigenvalues": np.linalg.eigvalsh(np.array(H.evalf(), dtype=float)).tolist(),
                "inertia": [plus, zero, minus],
                "gap": gd["gap"],
                "distance": gd["distance"],
            }
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figure)


def figure(claim: ZooClaim, progress: Progress) -> Figure:
    """The exact Hessian eigenvalues at θ_π per (model, source) (markers), and the float64 GD's L(t) − L(θ_π)
    from θ_π + δ (lines), per model and source."""
    data = claim.figure or claim.run(True, progress).figure
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    ax_eig, ax_gd = fig.subplots(1, 2)
    for i, (label, entry) in enumerate(data.items()):
        ev = np.asarray(entry["eigenvalues"])
        ax_eig.plot(np.full(ev.shape, i), ev, "o", markersize=4, label=f"{label} {tuple(entry['inertia'])}")
        ax_gd.plot(np.abs(entry["gap"]) + 1e-18, label=label)
    ax_eig.axhline(0, color="grey", linewidth=0.5)
    ax_eig.set_xticks(range(len(data)), [str(i) for i in range(len(data))])
    ax_eig.set_xlabel("configuration (legend: exact inertia +, 0, −)")
    ax_eig.set_ylabel("Hessian eigenvalue at θ_π (exact, shown as float)")
    ax_eig.legend(fontsize=6)
    ax_gd.set_yscale("log")
    ax_gd.set_xlabel("GD step t (float64, η = 1)")
    ax_gd.set_ylabel("|L(t) − L(θ_π)| (float64 evidence)")
    ax_gd.legend(fontsize=6)
    fig.suptitle("Makkuva et al.: θ_π on the paper's model (no layer norm), tied vs untied")
    return fig


CLAIM = ZooClaim(
    id="makkuva_unigram_point_paper",
    source="Makkuva et al., Attention with Markov (2024): for p + q > 1 the point θ_π predicting the stationary law "
    "π is a bad local minimum with weight tying and a saddle without it (theorem numbers not verified in the text)",
    statement="θ_π (every parameter 0, b = log(π₁/π₀)) is a stationary point of the paper's loss on its model; its "
    "Hessian has a negative eigenvalue exactly when the model is untied or p + q < 1",
    model="examples/papers/makkuva_markov.py: tied_no_norm and untied_no_norm (the paper's equations, no layer norm)",
    task="binary_markov (p, q), started in π; p + q > 1 and p + q < 1",
    criterion="exact SymPy gradient and Hessian of CrossEntropy('lm') through the traced model at θ_π, the inertia "
    "by Descartes' rule on the exact characteristic polynomial; no negative eigenvalue is the second-order "
    "condition only, not a proof of a minimum; the ReLU kink at θ_π is harmless: W_2 ReLU(W_1 y) is O(|δ|³) there "
    "(y = 0 at θ_π, ReLU positively homogeneous); the float64 GD from θ_π + δ is float64 evidence, not in the verdict",
    run=_run,
)
