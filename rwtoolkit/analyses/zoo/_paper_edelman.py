"""Edelman et al. (2024) on the paper's own model: the two-layer attention-only transformer trained on in-context
Markov chains passes through stages, nearest the uniform, then the in-context unigram, then the bigram predictor.

The model is ``examples/papers/edelman_induction.py:two_layer`` (relative positions, the code's layer norms; floats
and balls only, the exact arithmetic refuses the norm's square root), trained with the cross-entropy at every
position (``CrossEntropy("lm")``) from its own start (N(0, 0.02²) under seed 0) on ``icl_markov_task(2, N, α)``
(sequence length L = N − 1, α = 1 the task's Dirichlet prior) by the authors' optimizer: AdamW with their betas
(0.9, 0.95), on the exact population (full batch). Two choices differ from their code, both stated in the row: the
rate η = 1/100 (theirs 5·10⁻⁴: at that rate the stages come after ~190 steps, beyond what balls certify in
minutes, since Adam's ball run loses 11 to 20 bits a step) and no weight decay (theirs 0.1 on the linear maps
only; the toolkit's weight decay is one λ for every parameter, and 0.1 on the layer norms' gains and the
embeddings would be another model). The run is certified (arb balls) at every step; a float64 run of the same
model, objective and optimizer goes further beside it.

At each checkpoint t the model's next-token distribution q_i at every position i is compared with the three
predictors built from the context x_0..x_i (exact Fractions): uniform 1/S, in-context unigram (n_s + α)/(i + 1 + Sα),
bigram (n_{x_i s} + α)/(n_{x_i} + Sα). KL(p ‖ q_i) is weighted by the sequences' exact probabilities and averaged
over the positions. The stage at t is the predictor whose KL ball lies below both others' (else undecided at t).
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo._claims import Finding, Progress, ZooClaim, ball_text, paper_model, stage_order
from rwtoolkit.io import Verdict
from rwtoolkit.models import Optimizer

MODEL = "edelman_induction.py:two_layer"
#: The alphabet, the Dirichlet prior and the optimizer: the authors' AdamW betas (0.9, 0.95), ε = 1e-8 (torch's),
#: no weight decay (see the module docstring).
S, ALPHA = 2, Fraction(1)
OPTIMIZER = Optimizer("adamw", betas=("0.9", "0.95"), weight_decay=0)
#: The authors' learning rate, and the larger one that brings the stages within a minute of balls.
AUTHORS_ETA, ETA = Fraction(1, 2000), Fraction(1, 100)
#: The rule as the labels print it (the rate apart).
RULE = "AdamW (β = 0.9, 0.95, no weight decay)"
PREDICTORS = ("uniform", "unigram", "bigram")
#: The plateau criterion: at least W steps over which the loss falls by less than DELTA per 100 steps.
W, DELTA = 200, 5e-4
#: (N, η, certified steps, float64 steps, bits a step) of the quick and the full run; every step is certified
#: (checkpoint spacing 1: the nearest predictor can change between neighbouring steps). The ball run's precision is
#: 256 bits plus the bits a step, measured with a margin: at η = 1/100 and L = 6 Adam's run loses 11 bits a step
#: at first and 20 after the transitions (403 bits left of 1400 at t = 60); at the authors' rate 6 to 7 bits a
#: step at first and 17 by t = 180 (180 bits left of 2256 at t = 180, none at t = 190).
QUICK = ((5, ETA, 60, 600, 24),)
FULL = ((5, ETA, 60, 1000, 24), (7, ETA, 60, 1000, 24), (7, AUTHORS_ETA, 200, 1000, 16))


def position_predictors(
    tokens: list[int], label: int, alpha: Fraction = ALPHA
) -> dict[str, list[list[Fraction]]]:
    """The three predictors of x_{i+1} from the context x_0..x_i at every position i of one sequence (its tokens
    followed by its label): exact Fractions, one row of S per position.

    >>> p = position_predictors([0, 0, 1], 1, Fraction(1))
    >>> p["unigram"][2], p["bigram"][1]
    ([Fraction(3, 5), Fraction(2, 5)], [Fraction(2, 3), Fraction(1, 3)])
    """
    del label  # the label is predicted at the last position, never read by a predictor
    out: dict[str, list[list[Fraction]]] = {name: [] for name in PREDICTORS}
    for i in range(len(tokens)):
        ctx = tokens[: i + 1]
        after = [sum(1 for u, v in zip(ctx[:-1], ctx[1:]) if u == ctx[-1] and v == s) for s in range(S)]
        out["uniform"].append([Fraction(1, S)] * S)
        out["unigram"].append([(ctx.count(s) + alpha) / (i + 1 + S * alpha) for s in range(S)])
        out["bigram"].append([(after[s] + alpha) / (sum(after) + S * alpha) for s in range(S)])
    return out


def kl_to_predictors(
    token_logits: np.ndarray, predictors: list[dict[str, list[list[Fraction]]]], weights: list[Any], log: Any
) -> dict[str, Any]:
    """Σ_n w_n (1/L) Σ_i KL(p_i ‖ softmax(logits_{n,i})) for each predictor p, in the logits' number type
    (``log`` the type's logarithm; balls or floats); the predictors' p log p terms exact as the type allows."""
    n, L, _ = token_logits.shape
    out = {}
    for name in PREDICTORS:
        total = weights[0] * 0
        for k in range(n):
            for i in range(L):
                row = [token_logits[k, i, s] for s in range(S)]
                top = max(row, key=lambda z: float(z.mid()) if hasattr(z, "mid") else float(z))
                shifted = [z - top for z in row]
                lse = log(sum((z.exp() if hasattr(z, "exp") else np.exp(z) for z in shifted), weights[0] * 0))
                for s in range(S):
                    p = predictors[k][name][i][s]
                    if p:
                        pf = _number(p, weights[0])
                        total += weights[k] * pf * (log(pf) - (shifted[s] - lse)) / L
        out[name] = total
    return out


def _number(q: Fraction, like: Any) -> Any:
    """``q`` in the number type of ``like`` (an arb ball exactly, or a float)."""
    if isinstance(like, float):
        return q.numerator / q.denominator
    from flint import arb, fmpq

    return arb(fmpq(q.numerator, q.denominator))


def nearest(kl: dict[str, Any]) -> str:
    """The predictor whose KL ball lies below both others' ("" when no ball is below the other two)."""
    for name in PREDICTORS:
        if all(kl[name] < kl[o] for o in PREDICTORS if o != name):
            return name
    return ""


def plateaus(t: list[int], loss: list[Any], width: int = W, delta: float = DELTA) -> list[tuple[int, int]]:
    """Maximal intervals [a, b] of at least ``width`` steps over which the loss falls by less than ``delta`` per
    100 steps between every two consecutive checkpoints (balls: the comparison decided; undecided ends a plateau).

    >>> plateaus([0, 100, 200, 300, 400], [1.0, 0.9, 0.8999, 0.8998, 0.5], width=200, delta=1e-3)
    [(100, 300)]
    """
    out, start = [], None
    for k in range(len(t) - 1):
        bound = delta * (t[k + 1] - t[k]) / 100
        flat = bool(loss[k] - loss[k + 1] < bound)
        if flat and start is None:
            start = t[k]
        if not flat and start is not None:
            if t[k] - start >= width:
                out.append((start, t[k]))
            start = None
    if start is not None and t[-1] - start >= width:
        out.append((start, t[-1]))
    return out


def _stages(ts: list[int], kls: list[dict[str, Any]]) -> tuple[list[str], dict[str, int], list[int], str]:
    """The order of the decided stages (a stage again after another counts again), the first step of each, the
    steps left undecided, and the order as text with the step each stage starts."""
    order, starts, first, undecided = stage_order((t, nearest(kl)) for t, kl in zip(ts, kls, strict=True))
    pairs = [f"{s} (t={t})" for s, t in zip(order, starts, strict=True)]
    if len(pairs) > 12:  # step-to-step flips: the first ten changes, then the count and the last
        pairs = [*pairs[:10], f"… {len(pairs)} changes in all, the last {pairs[-1]}"]
    text = " → ".join(pairs) or "none decided"
    return order, first, undecided, text


def stage_verdict(order: list[str], undecided: list[int]) -> Verdict:
    """Holds when the certified stages are exactly uniform → unigram → bigram; inconclusive when a checkpoint is
    undecided or the certified order is a proper beginning of it (the rest not reached in balls); else fails.

    >>> stage_verdict(["uniform", "bigram"], []).name, stage_verdict(["uniform"], []).name
    ('FAILS', 'INCONCLUSIVE')
    """
    if undecided:
        return Verdict.INCONCLUSIVE
    if order == list(PREDICTORS):
        return Verdict.HOLDS
    if order == list(PREDICTORS[: len(order)]):
        return Verdict.INCONCLUSIVE
    return Verdict.FAILS


def _setup(task: Any) -> tuple[Any, list[dict[str, list[list[Fraction]]]], list[Fraction]]:
    pop = task.population()
    preds = [position_predictors(x, y) for x, y in zip(pop.tokens.tolist(), pop.labels.tolist(), strict=True)]
    return pop, preds, [Fraction(q) for q in pop.exact_probs()]


def float_run(task: Any, steps: int, eta: Fraction = ETA) -> list[Any]:
    """Float64 run of the same model, objective and optimizer from its own start: every step's evaluation."""
    from rwtoolkit.models import FLOAT64, CrossEntropy, batch, gradient_steps, rational_positions

    model = paper_model(MODEL)
    pop = task.population()
    P = FLOAT64.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(FLOAT64, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)
    params = dict(model.own_start(FLOAT64, data.inputs.sizes, "own"))
    return list(
        gradient_steps(model, FLOAT64, params, data, CrossEntropy("lm"), float(eta), steps, OPTIMIZER)
    )


def certified_run(task: Any, steps: int, eta: Fraction = ETA, bits: int = 24) -> Any:
    """The certified run (arb balls) of the model on ``task`` at 256 + ``bits``·steps bits, every step kept;
    raises ValueError with the ball engine's refusal."""
    from rwtoolkit.engines import select
    from rwtoolkit.engines.balls import ball_model_job

    model = paper_model(MODEL)
    job = ball_model_job(
        task,
        model,
        steps,
        init="own",
        eta=eta,
        objective="lm",
        optimizer=OPTIMIZER,
        prec=256 + bits * steps,
    )
    return select(model, "balls", "own").load()(task, model, steps, keep=lambda t: True, **job.arguments)


def _float_kl(logits: np.ndarray, preds: list, weights: list[Fraction]) -> dict[str, float]:
    return kl_to_predictors(
        np.asarray(logits, dtype=float), preds, [float(w) for w in weights], lambda x: float(np.log(x))
    )


def _configuration(
    N: int, eta: Fraction, steps: int, fsteps: int, bits: int, progress: Progress
) -> tuple[Verdict, str, dict]:
    from flint import arb, fmpq

    from rwtoolkit.engines.balls import precision
    from rwtoolkit.tasks import icl_markov_task

    task = icl_markov_task(S, N, ALPHA)
    pop, preds, weights = _setup(task)
    label = (
        f"icl_markov S={S} N={N} (L={N - 1}) α={ALPHA}, two_layer from its own start, CrossEntropy lm, {RULE} η = {eta}"
        + (" (the authors' rate)" if eta == AUTHORS_ETA else "")
    )
    progress(f"{label}: float64 run, {fsteps} steps")
    floats = float_run(task, fsteps, eta)
    f_t = list(range(fsteps + 1))  # every step: the nearest predictor flips between neighbouring steps
    f_kl = [_float_kl(floats[t].token_logits, preds, weights) for t in f_t]
    f_order, f_first, _, f_text = _stages(f_t, f_kl)
    f_plateaus = plateaus(list(range(fsteps + 1)), [float(e.loss) for e in floats])
    progress(f"{label}: certified run, t = 0..{steps} in balls")
    started = time.perf_counter()
    try:
        traj = certified_run(task, steps, eta, bits)
    except ValueError as err:
        line = f"{label}: not certified (the ball engine's refusal: {err}); float64 evidence: stages {f_text}"
        return Verdict.INCONCLUSIVE, line, {"config": {"N": N, "steps": 0}, "figure": None}
    seconds = time.perf_counter() - started
    states = {r.step: r.state for r in traj.records}
    ts = sorted(states)
    with precision(traj.prec):
        bw = [arb(fmpq(w.numerator, w.denominator)) for w in weights]
        b_kl = [kl_to_predictors(states[t].token_logits, preds, bw, lambda x: x.log()) for t in ts]
        order, first, undecided, text = _stages(ts, b_kl)
        b_plateaus = plateaus(ts, [states[t].loss for t in ts])
    needed = [s for s in PREDICTORS if s not in order]
    verdict = stage_verdict(order, undecided)
    shown = sorted({ts[0], *first.values(), ts[-1]})
    kl_text = "; ".join(
        f"t={t}: " + ", ".join(ball_text(b_kl[ts.index(t)][p]) for p in PREDICTORS) for t in shown
    )
    line = (
        f"{label}, balls ({traj.prec} bits, {seconds:.1f} s) t = 0..{steps}, every step: stages in order "
        f"{text}"
        + f"; KL to uniform, unigram, bigram (ball midpoints, decided) {kl_text}"
        + (f"; undecided at t = {undecided}" if undecided else "")
        + f"; plateaus (≥ {W} steps, loss falling < {DELTA:g} per 100 steps) in balls: {b_plateaus or 'none'}"
        + f"; float64 evidence (t = 0..{fsteps}, KL at every step): stages {f_text}, "
        + f"plateaus {f_plateaus or 'none'}"
        + (
            "; beyond the certified steps: "
            + ", ".join(
                f"{s} first at float step {f_first[s]}" if s in f_first else f"{s} never" for s in needed
            )
            if needed and verdict is Verdict.INCONCLUSIVE
            else ""
        )
    )
    figure = {
        "N": N,
        "eta": str(eta),
        "t": ts,
        "kl_balls": {p: [float(k[p].mid()) for k in b_kl] for p in PREDICTORS},
        "t_float": f_t,
        "kl_float": {p: [k[p] for k in f_kl] for p in PREDICTORS},
        "plateaus": f_plateaus,
        "first": first,
        "first_float": f_first,
    }
    config = {"task": "icl_markov", "S": S, "N": N, "alpha": str(ALPHA), "eta": str(eta), "steps": steps}
    config["optimizer"] = OPTIMIZER.describe(exact=True)
    return verdict, line, {"config": config, "figure": figure}


def _run(quick: bool, progress: Progress) -> Finding:
    verdicts, evidence, configurations, figures = [], [], [], {}
    for N, eta, steps, fsteps, bits in QUICK if quick else FULL:
        verdict, line, data = _configuration(N, eta, steps, fsteps, bits, progress)
        verdicts.append(verdict)
        evidence.append(line)
        configurations.append(data["config"])
        if data["figure"] is not None:
            figures[f"N={N} η={eta}"] = data["figure"]
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figures)


CLAIM = ZooClaim(
    id="edelman_stages_paper",
    source="Edelman, Edelman, Goel, Malach, Tsilivis, The Evolution of Statistical Induction Heads: In-Context "
    "Learning Markov Chains (NeurIPS 2024), Figure 1 (right) (the number from the caption as quoted in a review "
    "of the paper, not verified in the paper's own text): the distance (KL) of the transformer's output "
    "distribution to the uniform, unigram and bigram strategies over training; the model passes through three "
    "stages, uniform, then in-context unigram, then in-context bigram",
    statement="trained on in-context Markov chains, the two-layer attention-only transformer's predictions are "
    "nearest (in KL) first the uniform, then the in-context unigram, then the bigram predictor",
    model="examples/papers/edelman_induction.py:two_layer (relative positions, layer norms), from its own start "
    "(N(0, 0.02²), seed 0), CrossEntropy lm (every position), the authors' optimizer AdamW (betas 0.9, 0.95) "
    "on the full population, without weight decay (theirs: 0.1 on the linear maps), at η = 1/100 and at the "
    "authors' η = 5e-4",
    task="icl_markov S=2, α=1; quick: sequence length 4 at η = 1/100; full: lengths 4 and 6 at η = 1/100, "
    "length 6 at the authors' η = 5e-4",
    criterion="at every certified step, KL(p ‖ model) at every position, weighted by the sequences' exact "
    "probabilities and averaged over positions, for the exact per-position predictors p (uniform, unigram, "
    "bigram); the stage is the predictor whose KL ball is below both others' (else undecided: inconclusive); "
    "holds when the certified stages come in the order uniform → unigram → bigram, inconclusive when a stage "
    "the order needs appears only in the float64 run. The uniform stage is vacuous: it holds at t = 0 by the "
    "N(0, 0.02²) start (near-uniform outputs). Plateaus, reported not decided: maximal intervals of ≥ 200 "
    "steps over which the loss falls by < 5e-4 per 100 steps",
    run=_run,
)


def figure(claim: ZooClaim, progress: Progress) -> Figure:
    """KL to each predictor over t: the float64 run's lines, certified checkpoints as markers, plateaus shaded,
    the first step of each stage marked."""
    runs = list(claim.figure.values())
    fig = Figure(figsize=(max(7.0, 5.2 * len(runs)), 4.6), layout="constrained")
    for c, data in enumerate(runs):
        ax = fig.add_subplot(1, len(runs), c + 1)
        for k, p in enumerate(PREDICTORS):
            tf = [max(t, 1) for t in data["t_float"]]
            ax.plot(tf, data["kl_float"][p], color=f"C{k}", lw=1.2, label=f"{p} (float64)")
            ax.plot(
                [max(t, 1) for t in data["t"]],
                data["kl_balls"][p],
                "o",
                color=f"C{k}",
                ms=3.5,
                label=f"{p} (certified)",
            )
        for a, b in data["plateaus"]:
            ax.axvspan(max(a, 1), b, color="grey", alpha=0.15, lw=0)
        for p, t in data["first_float"].items():
            ax.axvline(max(t, 1), color=f"C{PREDICTORS.index(p)}", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("step t (t = 0 drawn at 1)")
        ax.set_ylabel("KL(predictor ‖ model), averaged over positions")
        ax.set_title(
            f"L = {data['N'] - 1}, η = {data['eta']}"
            + (" (the authors')" if data["eta"] == str(AUTHORS_ETA) else "")
            + "; shaded: plateaus; dashed: stage starts (float64)",
            fontsize=8,
        )
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle(
        f"Edelman et al.: stages of the two-layer transformer on ICL Markov chains, {RULE}", fontsize=10
    )
    return fig
