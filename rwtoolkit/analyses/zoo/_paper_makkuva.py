"""Makkuva et al., *Attention with Markov* (2024): the unigram point θ_π on the paper's own model (issue 42).

The row ``makkuva_unigram_point_paper``: on ``examples/papers/makkuva_markov.py`` (``tied_no_norm`` and
``untied_no_norm``, the paper's equations without layer norm, run in exact SymPy arithmetic) and the paper's loss
(the binary cross-entropy at every position, the toolkit's ``CrossEntropy("lm")``), the point θ_π (every parameter
0 but the bias b = log(π₁/π₀), so σ(logit_n) = π₁ at every position) is checked for stationarity and its Hessian's
inertia is counted exactly. The fate of GD started near θ_π (θ_π plus a dyadic perturbation of ±2⁻⁶(1 + m/16) per entry) is
certified in arb balls for ``CERT_STEPS`` steps (:func:`ball_gd`: whether the loss leaves L(θ_π), decided) and
followed further by a float64 run as float64 evidence.

With layer norm (``tied`` and ``untied``, the code's three pre-norms), the exact arithmetic refuses the norm's square
root, and the Hessian at θ_π is certified in arb balls instead (:func:`norm_curvature`). A negative eigenvalue is
certified by a vector v with vᵀHv < 0 decided in balls (v the float eigenvector of the smallest eigenvalue, an
exact dyadic vector). "No negative eigenvalue" cannot be decided in balls where H has a null direction, so the row
certifies the strongest statement balls decide: H + δI is positive definite (an arb Cholesky whose every pivot is
decided > 0, δ = 2⁻³⁰), that is, every eigenvalue exceeds −δ, against the saddles' certified vᵀHv ≤ −1.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo._claims import Finding, Progress, ZooClaim, ball_text, paper_model
from rwtoolkit.io import Verdict

#: The models checked: (factory, tied).
MODELS = (("tied_no_norm", True), ("untied_no_norm", False))
#: The models with the code's layer norms, certified in balls: (factory, tied); their (p, q, N), quick and full
#: (p ≠ q too: b = log(p/q) is a ball), the precision of the arb balls, and δ of the certified λ_min > −δ.
NORM_MODELS = (("tied", True), ("untied", False))
NORM_QUICK = (("7/10", "3/5", 3), ("1/5", "3/10", 3))
NORM_FULL = (("7/10", "7/10", 5), ("9/10", "4/5", 5), ("3/10", "3/10", 5))
NORM_BITS, NORM_DELTA = 128, Fraction(1, 2**30)
#: (p, q, N) of quick mode, and those full mode adds (sequence length L = N − 1).
QUICK_CASES = (("7/10", "7/10", 3),)
FULL_CASES = (("3/10", "3/10", 3), ("7/10", "7/10", 5), ("3/10", "3/10", 5))
#: The float64 GD run from θ_π + δ: step size, steps (quick, full), perturbation scale 2^-6 and its seed.
GD_ETA, GD_STEPS, GD_SCALE, GD_SEED = 1.0, (200, 2000), 2.0**-6, 0
#: The certified part of that run: steps, and the precision (256 bits plus 8 a step; the balls' widths at the end
#: are reported); a loss within ``STAYED`` of L(θ_π) at its end "stays", one below L(θ_π) − ``STAYED`` "leaves".
CERT_STEPS, CERT_BITS, STAYED = 200, 256 + 8 * 200, Fraction(1, 10**6)


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


def perturbed_gd(
    model: Any, task: Any, point: dict[str, Any], steps: int, ar: Any
) -> Iterator[tuple[Any, Any, Any]]:
    """(θ(t)'s evaluation, L(t) − L(θ_π), ‖θ(t) − θ_π‖²) in the arithmetic ``ar`` for t = 0, ..., ``steps`` of
    GD (η = GD_ETA, ``rwtoolkit.models.gradient_steps``, the one loop) on the paper's loss from θ_π + 2⁻⁶·u
    (``_perturbation``), the start exact before it enters ``ar``: θ_π must be rational (b = 0, p = q). The float and the ball run of the
    row are this one run in two arithmetics."""
    from rwtoolkit.models import CrossEntropy, batch, evaluate, gradient_steps, rational_positions

    centre = {
        k: np.array([Fraction(str(x)) for x in np.asarray(v).flat], dtype=object).reshape(np.shape(v))
        for k, v in point.items()
    }
    u = _perturbation({k: np.shape(v) for k, v in centre.items()})
    scale, eta = Fraction(GD_SCALE), Fraction(GD_ETA)  # 2⁻⁶ and 1, exact as floats
    pop = task.population()
    P = ar.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(ar, pop.tokens, pop.labels, [Fraction(x) for x in pop.exact_probs()], pop.K, P)
    exact = {k: ar.asarray(v) for k, v in centre.items()}
    start = {k: ar.asarray(centre[k] + scale * np.vectorize(Fraction, otypes=[object])(u[k])) for k in centre}
    objective = CrossEntropy("lm")
    base = evaluate(model, ar, exact, data, objective).loss
    zero = ar.asarray([Fraction(0)])[0]
    for ev in gradient_steps(model, ar, start, data, objective, ar.asarray([eta])[0], steps):
        yield (
            ev,
            ev.loss - base,
            sum((d * d for k in exact for d in np.asarray(ev.params[k] - exact[k]).flat), zero),
        )


def float_gd(model: Any, task: Any, point: dict[str, Any], steps: int) -> dict[str, list[float]]:
    """Float64 GD (``perturbed_gd`` in FLOAT64): L(t) − L(θ_π) and ‖θ(t) − θ_π‖ at every step (float64
    evidence)."""
    from rwtoolkit.models import FLOAT64

    gap: list[float] = []
    distance: list[float] = []
    for _, g, d2 in perturbed_gd(model, task, point, steps, FLOAT64):
        gap.append(float(g))
        distance.append(float(np.sqrt(d2)))
    return {"gap": gap, "distance": distance}


def _log2_radius(x: Any) -> float:
    """log₂ of a ball's radius (−inf for an exact ball): radii below float64's range stay readable."""
    from flint import arb

    r = arb(x.rad())
    return float("-inf") if r == 0 else float((r.log() / arb(2).log()).mid())


def _sci(x: Any) -> str:
    """A ball as its midpoint in three significant digits and its radius as a power of 2."""
    k = _log2_radius(x)
    return f"{float(x.mid()):.3e} (exact)" if k == float("-inf") else f"{float(x.mid()):.3e} ± 2^{k:.0f}"


def _fate_text(cert: dict[str, Any]) -> str:
    """The evidence of :func:`ball_gd`'s run, in one clause."""
    head = f"GD η = 1 from θ_π + 2^-6·u in arb balls ({CERT_BITS} bits)"
    if "gap" not in cert:
        return f"{head}: undecided ({cert['why']})"
    outcome = {
        "leaves": "leaves θ_π's loss, certified (L − L(θ_π) < −10⁻⁶)",
        "stays": "stays at θ_π's loss, certified (|L − L(θ_π)| < 10⁻⁶)",
        "undecided": "undecided in balls",
    }[cert["fate"]]
    return (
        f"{head}, widest radius at t = {cert['steps']} 2^{cert['widest']:.0f}: L − L(θ_π) = {_sci(cert['gap0'])} at "
        f"t = 0, {_sci(cert['gap'])} at t = {cert['steps']}; ‖θ − θ_π‖² = {_sci(cert['distance0'])} → "
        f"{_sci(cert['distance'])}: {outcome}"
    )


def _perturbation(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The seeded factors of the perturbation θ_π + 2⁻⁶·u, one array per parameter (float_gd's draw and
    ball_gd's): u = ±(1 + m/16), m ∈ {0, ..., 15}, exact dyadics. Magnitudes of one size (±1 only) cancel exactly
    in W_1 y at the first position, and a ReLU input that is exactly 0 cannot be signed in balls."""
    rng = np.random.default_rng(GD_SEED)
    return {
        k: rng.choice([-1.0, 1.0], size=shape) * (1 + rng.integers(0, 16, size=shape) / 16)
        for k, shape in shapes.items()
    }


def ball_gd(model: Any, task: Any, point: dict[str, Any], steps: int = CERT_STEPS) -> dict[str, Any]:
    """``perturbed_gd`` in arb balls at ``CERT_BITS`` bits. Returns the balls L(t) − L(θ_π) and ‖θ(t) − θ_π‖² at
    t = 0 and t = ``steps``, the decided fate ("leaves": the gap below −STAYED; "stays": |gap| < STAYED; else
    "undecided") and log₂ of the widest parameter radius at the end."""
    from flint import arb, fmpq

    from rwtoolkit.engines.balls import Undecided, ball_arithmetic, precision

    with precision(CERT_BITS):
        try:
            run = perturbed_gd(model, task, point, steps, ball_arithmetic())
            _, gap0, distance0 = next(run)
            ((last, gap, distance),) = deque(run, maxlen=1)  # only the last step is kept
        except Undecided as err:  # a ReLU input the balls cannot sign: the fate is undecided, said so
            return {"fate": "undecided", "steps": steps, "why": str(err)}
        bound = arb(fmpq(STAYED.numerator, STAYED.denominator))
        fate = "leaves" if gap < -bound else "stays" if abs(gap) < bound else "undecided"
        return {
            "gap0": gap0,
            "gap": gap,
            "distance0": distance0,
            "distance": distance,
            "fate": fate,
            "widest": max(_log2_radius(x) for v in last.params.values() for x in np.asarray(v).flat),
            "steps": steps,
        }


def _paper_expects_saddle(tied: bool, p: str, q: str) -> bool:
    """What the paper says θ_π is: a local minimum with weight tying when p + q > 1, a saddle otherwise."""
    return not (tied and Fraction(p) + Fraction(q) > 1)


def _configuration(name: str, p: str, q: str, N: int, **extra: Any) -> dict[str, Any]:
    """One checked configuration of the row's report: the model, the binary (p, q) source of length N, the
    language-model objective, then ``extra`` (the ball precision or the certified fate)."""
    return {"model": name, "task": "binary_markov", "p": p, "q": q, "N": N, "loss": "lm", **extra}


def norm_curvature(model: Any, task: Any, saddle_expected: bool) -> tuple[Verdict, str, list[float]]:
    """The Hessian of the paper's loss at θ_π of a model with layer norms, in arb balls (NORM_BITS bits; γ = 1,
    β = 0, every other parameter 0 but b = log(π₁/π₀), a ball), decided as the module text says.

    Returns (the configuration's verdict, its evidence, the float eigenvalues of the midpoint for the figure).
    """
    from flint import arb, fmpq

    from rwtoolkit.engines.balls import ball_arithmetic, precision
    from rwtoolkit.models import CrossEntropy, batch, hessian, rational_positions

    pop = task.population()
    with precision(NORM_BITS):
        ar = ball_arithmetic()
        P = ar.asarray(rational_positions(pop.N, Fraction(1)))
        data = batch(ar, pop.tokens, pop.labels, [Fraction(x) for x in pop.exact_probs()], pop.K, P)
        start = dict(model.own_start(ar, data.inputs.sizes, "own"))
        pi1 = sum(
            (Fraction(x) for x, y in zip(pop.exact_probs(), pop.labels.tolist(), strict=True) if y == 1),
            Fraction(0),
        )
        point = {
            k: ar.asarray(
                np.full(np.shape(v), 1 if k.startswith("ln_") and k.endswith("weight") else 0, dtype=object)
            )
            for k, v in start.items()
        }
        point["b"] = ar.log(ar.asarray([pi1 / (1 - pi1)]))
        H = hessian(model, ar, point, data, CrossEntropy("lm"))
        n = H.shape[0]
        mid = np.array([[float(H[i, j].mid()) for j in range(n)] for i in range(n)])
        w, V = np.linalg.eigh((mid + mid.T) / 2)
        if saddle_expected:
            v = [arb(fmpq(*Fraction(float(x)).as_integer_ratio())) for x in V[:, 0]]
            quad = sum((v[i] * H[i, j] * v[j] for i in range(n) for j in range(n)), arb(0))
            decided = quad < 0
            verdict = Verdict.HOLDS if decided else Verdict.FAILS if quad > 0 else Verdict.INCONCLUSIVE
            line = f"vᵀHv = {ball_text(quad)} (v the unit float eigenvector of the least eigenvalue): " + (
                "a negative eigenvalue, certified: a saddle" if decided else "not decided negative"
            )
        else:
            delta = arb(fmpq(NORM_DELTA.numerator, NORM_DELTA.denominator))
            pivots: list[Any] = []
            L = [[arb(0)] * n for _ in range(n)]
            verdict = Verdict.HOLDS
            for k in range(n):
                d = H[k, k] + delta - sum((L[k][j] ** 2 * pivots[j] for j in range(k)), arb(0))
                pivots.append(d)
                if not d > 0:
                    verdict = Verdict.FAILS if d < 0 else Verdict.INCONCLUSIVE
                    break
                for i in range(k + 1, n):
                    L[i][k] = (H[i, k] - sum((L[i][j] * L[k][j] * pivots[j] for j in range(k)), arb(0))) / d
            line = (
                f"H + 2^-30 I positive definite, certified (arb Cholesky, {n} pivots > 0): every eigenvalue > −2^-30"
                if verdict is Verdict.HOLDS
                else f"H + 2^-30 I not certified positive definite (pivot {len(pivots)} = {pivots[-1]})"
            )
    return (
        verdict,
        f"{line}; float eigenvalues of the midpoint: least {w[0]:.3e}, largest {w[-1]:.3e}",
        w.tolist(),
    )


def _norm_rows(
    quick: bool, progress: Progress
) -> tuple[list[Verdict], list[str], list[dict[str, Any]], dict]:
    """The layer-norm models' configurations: verdicts, evidence lines, configurations, figure entries."""
    from rwtoolkit.tasks import binary_markov_task

    verdicts: list[Verdict] = []
    evidence: list[str] = []
    configurations: list[dict[str, Any]] = []
    figure: dict[str, Any] = {}
    for name, tied in NORM_MODELS:
        model = paper_model(f"makkuva_markov.py:{name}")
        for p, q, N in NORM_QUICK + (() if quick else NORM_FULL):
            progress(f"{name} (layer norms) binary_markov p={p} q={q} N={N}: the Hessian at θ_π in arb balls")
            saddle_expected = _paper_expects_saddle(tied, p, q)
            verdict, line, eigenvalues = norm_curvature(model, binary_markov_task(p, q, N), saddle_expected)
            verdicts.append(verdict)
            evidence.append(
                f"{name} (layer norms) binary_markov p={p} q={q} (p+q={Fraction(p) + Fraction(q)}) N={N}, "
                f"arb balls at {NORM_BITS} bits: {line}; the paper: {'a saddle' if saddle_expected else 'a local minimum'}"
            )
            configurations.append(_configuration(name, p, q, N, bits=NORM_BITS))
            figure[f"{name} p={p} q={q} N={N}"] = {
                "eigenvalues": eigenvalues,
                "inertia": ["in balls"],
                "gap": [],
                "distance": [],
            }
    return verdicts, evidence, configurations, figure


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
            saddle_expected = _paper_expects_saddle(tied, p, q)
            verdicts.append(Verdict.HOLDS if stationary and (minus > 0) == saddle_expected else Verdict.FAILS)
            gd = float_gd(model, task, point, GD_STEPS[0] if quick else GD_STEPS[1])
            cert = ball_gd(model, task, point)
            fate = _fate_text(cert)
            what = (
                "a saddle (negative curvature, decided exactly)"
                if minus
                else f"no negative curvature (second order only: the {zero} flat directions leave a minimum undecided)"
            )
            evidence.append(
                f"{name} binary_markov p={p} q={q} (p+q={Fraction(p) + Fraction(q)}) N={N}: θ_π (b = "
                f"{point['b'][0]}), L(θ_π) = {sp.nsimplify(ev.loss)}; ∇L {'= 0 exactly' if stationary else '≠ 0'}; "
                f"Hessian inertia (+{plus}, 0×{zero}, −{minus}) exactly: {what}; the paper: "
                f"{'a saddle' if saddle_expected else 'a local minimum'}; {fate}; float64 evidence beyond: GD η={GD_ETA} from "
                f"θ_π + 2^-6·u, after {len(gd['gap']) - 1} steps L − L(θ_π) = {gd['gap'][-1]:.3e}, "
                f"‖θ − θ_π‖ = {gd['distance'][-1]:.3e} (from {gd['distance'][0]:.3e}) "
                f"[{time.perf_counter() - started:.1f} s]"
            )
            configurations.append(_configuration(name, p, q, N, fate=cert["fate"]))
            figure[f"{name} p={p} q={q} N={N}"] = {
                "eigenvalues": np.linalg.eigvalsh(np.array(H.evalf(), dtype=float)).tolist(),
                "inertia": [plus, zero, minus],
                "gap": gd["gap"],
                "distance": gd["distance"],
            }
    more = _norm_rows(quick, progress)
    verdicts += more[0]
    evidence += more[1]
    configurations += more[2]
    figure.update(more[3])
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figure)


def figure(claim: ZooClaim, progress: Progress) -> Figure:
    """The exact Hessian eigenvalues at θ_π per (model, source) (markers), and the float64 GD's L(t) − L(θ_π)
    from θ_π + δ (lines), per model and source."""
    data = claim.figure or claim.run(True, progress).figure
    fig = Figure(figsize=(11, 6.5), layout="constrained")
    ax_eig, ax_gd = fig.subplots(1, 2)
    for i, (label, entry) in enumerate(data.items()):
        ev = np.asarray(entry["eigenvalues"])
        ax_eig.plot(np.full(ev.shape, i), ev, "o", markersize=4, label=f"{label} {tuple(entry['inertia'])}")
        if entry["gap"]:  # the layer-norm models have no float run: their eigenvalues only
            ax_gd.plot(np.abs(entry["gap"]) + 1e-18, label=label)
    ax_eig.axhline(0, color="grey", linewidth=0.5)
    ax_eig.set_xticks(range(len(data)), [str(i) for i in range(len(data))])
    ax_eig.set_xlabel("configuration (legend: exact inertia +, 0, −, or decided in balls)")
    ax_eig.set_ylabel("Hessian eigenvalue at θ_π (shown as float)")
    ax_eig.legend(fontsize=6, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    ax_gd.set_yscale("log")
    ax_gd.set_xlabel("GD step t (float64, η = 1)")
    ax_gd.set_ylabel("|L(t) − L(θ_π)| (float64 evidence)")
    ax_gd.legend(fontsize=6)
    fig.suptitle(
        "Makkuva et al.: θ_π on the paper's model, tied vs untied (exact without layer norm, balls with it)"
    )
    return fig


CLAIM = ZooClaim(
    id="makkuva_unigram_point_paper",
    source="Makkuva et al., Attention with Markov (2024): for p + q > 1 the point θ_π predicting the stationary law "
    "π is a bad local minimum with weight tying and a saddle without it (theorem numbers not verified in the text)",
    statement="θ_π (every parameter 0, b = log(π₁/π₀)) is a stationary point of the paper's loss on its model; its "
    "Hessian has a negative eigenvalue exactly when the model is untied or p + q < 1",
    model="examples/papers/makkuva_markov.py: tied_no_norm and untied_no_norm (the paper's equations, exact), tied "
    "and untied (with the code's layer norms, certified in balls)",
    task="binary_markov (p, q), started in π; p + q > 1 and p + q < 1 (p = q without layer norm, where b = 0 is "
    "rational; p ≠ q too with it)",
    criterion="exact SymPy gradient and Hessian of CrossEntropy('lm') through the traced model at θ_π, the inertia "
    "by Descartes' rule on the exact characteristic polynomial; no negative eigenvalue is the second-order "
    "condition only, not a proof of a minimum; the ReLU kink at θ_π is harmless: W_2 ReLU(W_1 y) is O(|δ|³) there "
    "(y = 0 at θ_π, ReLU positively homogeneous); with layer norms, in arb balls at 128 bits: a saddle by a "
    "certified vᵀHv < 0, and where the paper says minimum, H + 2⁻³⁰ I certified positive definite (every eigenvalue "
    "> −2⁻³⁰; a null direction cannot be decided in balls); the fate of GD from θ_π + δ (no-norm models): certified "
    "in arb balls for 200 steps (leaves: L − L(θ_π) < −10⁻⁶; stays: |L − L(θ_π)| < 10⁻⁶), then float64 evidence; "
    "reported, not in the verdict",
    run=_run,
)
