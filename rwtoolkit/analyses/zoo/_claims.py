"""The field's published claims, each checked exactly at small sizes: one ``ZooClaim`` per row of ``rw zoo claims``.

A claim (``rwtoolkit.io.Claim``) names its paper (its source) and statement, the model and task it is checked
on, and the criterion that decides its verdict, one of the one vocabulary (``rwtoolkit.io.Verdict``):

* ``proved``: a proof for every t (and every η, loss and μ where the criterion says so), here the exact
  induction step of ``rwtoolkit.engines.exact.induction_step``: one GD step maps a subspace containing θ(0) into itself;
* ``refuted``: an exact counterexample, with the argument that covers every value the claim quantifies over;
* ``holds at the sizes checked`` / ``does not hold at the sizes checked``: exact or certified (ball)
  evidence at the listed configurations and steps, not a proof for other sizes or later times;
* ``inconclusive``: the exact computation did not decide (never a pass).

``quick`` runs the smallest configuration of each claim (CI); the full run adds larger ones.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.io import DECISION_WORDS, STUCK_WORDS, Claim, Verdict


@dataclass
class Finding:
    """What running a claim found: the verdict, one line per configuration checked, the configurations,
    and what the claim's figure draws from this run (``rwtoolkit.analyses.zoo._figures``), by configuration."""

    verdict: Verdict
    evidence: list[str]
    configurations: list[dict[str, Any]]
    figure: dict[str, Any] = field(default_factory=dict)


def paper_model(spec: str) -> Any:
    """The traced model ``FILE.py:ATTR`` of the repository's ``examples/papers/`` (the papers' own models, issue 42):
    the path is taken from the checkout this package runs from, so ``rw zoo claims`` works from any folder; one
    line where the examples are not there (an installed wheel ships no examples).

    >>> paper_model("nichani_causal.py:simplified").name
    'nichani_causal.simplified'
    """
    from pathlib import Path

    from rwtoolkit.models import get_model

    folder = Path(__file__).resolve().parents[3] / "examples" / "papers"
    file = spec.split(":", 1)[0]
    if not (folder / file).is_file():
        raise ValueError(
            f"the papers' models are examples/papers/{file} of the repository, not found at {folder}: run "
            "rw zoo claims from a clone of the repository (an installed wheel has no examples)"
        )
    return get_model(f"{folder}/{spec}")


#: Told what a claim is doing (one line per configuration as it starts); ``rw zoo claims`` prints it on stderr.
Progress = Callable[[str], None]


def _quiet(message: str) -> None:
    """The progress of a claim checked without anyone watching."""


@dataclass(kw_only=True)
class ZooClaim(Claim):
    """One claim of the field: where it is stated (``source``: the paper), what is checked on which model and
    task, how it is decided, and (once checked) its verdict, evidence and figure data.

    ``run(quick, progress)`` does the claim's set-up (imports, exact or certified runs) and decides its verdict,
    calling ``progress`` with each configuration as it starts; ``check`` returns the checked claim.
    """

    command: str = field(init=False, default="")
    model: str
    task: str
    #: True when the row checks a paper's claim on this toolkit's simplified model (a proxy), not on the
    #: paper's own model and objective; the report labels the row so.
    proxy: bool = False
    #: Why the verdict follows from the model class alone (no stationary point in the class, a predictor
    #: correlated with f by construction), when it does; "" when the verdict is a finding about the claim.
    vacuous: str = ""
    run: Callable[[bool, Progress], Finding] = field(repr=False, compare=False)
    #: What the claim's figure draws from its run, by configuration (empty until checked).
    figure: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.command = f"rw zoo claims --claim {self.id} --out out/zoo"

    def check(self, quick: bool = False, progress: Progress | None = None) -> ZooClaim:
        """The claim checked: ``seconds`` is the wall time from before its set-up to its verdict."""
        start = time.perf_counter()
        found = self.run(quick, progress or _quiet)
        return dataclasses.replace(
            self,
            verdict=found.verdict,
            evidence=found.evidence,
            configurations=found.configurations,
            figure=found.figure,
            seconds=time.perf_counter() - start,
        )


# ------------------------------------------------------------------------------------------------
# invariant subspaces (proved for every t by the exact induction step)
# ------------------------------------------------------------------------------------------------
def _tasks(quick: bool) -> list[tuple[str, Any]]:
    from rwtoolkit.tasks import CircleWalk, binary_markov_task, icl_markov_task

    tasks: list[tuple[str, Any]] = [
        ("circle K=3 N=4 p=3/10", CircleWalk(3, 4, "3/10")),
        ("binary_markov p=7/10 q=3/5 N=3", binary_markov_task("7/10", "3/5", 3)),
    ]
    if not quick:
        tasks += [
            ("circle K=4 N=5 p=1/2", CircleWalk(4, 5, "1/2")),
            ("icl_markov S=2 N=4 alpha=1", icl_markov_task(2, 4, 1)),
        ]
    return tasks


def _flat_size(shapes: dict[str, tuple[int, ...]]) -> int:
    return sum(int(np.prod(s)) for s in shapes.values())


def _unit_vectors(shapes: dict[str, tuple[int, ...]], names: tuple[str, ...]) -> list[list[int]]:
    """The coordinate vectors of the parameters ``names`` (flat, in the order of ``shapes``)."""
    total, offset, rows = _flat_size(shapes), 0, []
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        if name in names:
            rows += [[int(i == offset + k) for i in range(total)] for k in range(size)]
        offset += size
    return rows


def invariance_steps(
    tasks: Iterable[tuple[str, Any]],
    models: Iterable[dict[str, Any]],
    subspace_of: Callable[[Any, Any], Any],
    progress: Progress = _quiet,
) -> Iterator[tuple[str, Any, Any]]:
    """(task name, model, induction) of the exact induction step on ``subspace_of(model, task)`` for every task
    and model (``rwtoolkit.models.get_model(**hyper)``), tasks outer; ``progress`` hears each configuration."""
    from rwtoolkit.engines.exact import induction_step
    from rwtoolkit.models import get_model

    for name, task in tasks:
        for hyper in models:
            model = get_model(**hyper)
            progress(_configuration(name, model))
            yield name, model, induction_step(task, model, subspace_of(model, task))


def _configuration(name: str, model: Any) -> str:
    """One configuration of an invariance claim: the task's name, the model and its settings."""
    label = " ".join(f"{k}={v}" for k, v in model.describe().items() if k != "name")
    return f"{name}, {model.name}{' ' + label if label else ''}"


def identical_heads_subspace(model: Any, task: Any) -> Any:
    """The subspace where every head of ``model`` is the same (``rwtoolkit.engines.exact.identical_heads``),
    refused for a model with one head: the claim ``identical_heads`` here and the certificate ``heads`` of
    ``rw proofs`` both decide it."""
    from rwtoolkit.engines.exact import identical_heads

    subspace = identical_heads(model, task)
    if subspace is None:
        raise ValueError(f"{model.describe()} has one head")
    return subspace


def _invariance(
    models: list[dict[str, Any]], subspace_of: Callable, what: str, quick: bool, progress: Progress
) -> Finding:
    """Run the exact induction step for every (task, model) and collect the verdict."""
    evidence, configurations, verdicts = [], [], []
    for name, model, result in invariance_steps(_tasks(quick), models, subspace_of, progress):
        configuration = _configuration(name, model)
        verdicts.append(DECISION_WORDS.verdict(result.outcome))
        evidence.append(f"{configuration}: {what}: {result.line()}")
        configurations.append({"task": name, "model": model.describe(), "outcome": result.outcome})
    return Finding(Verdict.combine(verdicts), evidence, configurations)


def _key_query_stuck(quick: bool, progress: Progress) -> Finding:
    from rwtoolkit.engines.exact import Subspace
    from rwtoolkit.models import Sizes

    def v_only(model, task):  # key_query, or multi_head with separate key and query per head
        shapes = model.shapes(Sizes(K=task.K, M=task.N, N=task.N))
        return Subspace.from_vectors(shapes, _unit_vectors(shapes, ("V",)), source="W_K = W_Q = 0")

    ds = [{"name": "key_query", "d": 1}] + (
        [{"name": "multi_head", "H": 2, "d": 1}]
        if quick
        else [{"name": "key_query", "d": 2}, {"name": "multi_head", "H": 2, "d": 1}]
    )
    return _invariance(ds, v_only, "{W_K = W_Q = 0}", quick, progress)


def _identical_heads(quick: bool, progress: Progress) -> Finding:
    hs = [{"name": "multi_head", "H": 2}] + (
        [] if quick else [{"name": "multi_head", "H": 3}, {"name": "multi_head", "H": 2, "d": 1}]
    )
    return _invariance(hs, identical_heads_subspace, "identical heads", quick, progress)


def _linear_zero_fixed(quick: bool, progress: Progress) -> Finding:
    from rwtoolkit.engines.exact import Subspace
    from rwtoolkit.models import Sizes

    def origin(model, task):
        return Subspace.from_vectors(model.shapes(Sizes(K=task.K, M=task.N, N=task.N)), [], source="{0}")

    return _invariance([{"name": "linear_attention"}], origin, "{0}", quick, progress)


def _learned_positions_stuck(quick: bool, progress: Progress) -> Finding:
    """``rwtoolkit.engines.exact.stuck_proof`` on the stuck circle walks with the positions trained."""
    from rwtoolkit.engines.exact import stuck_proof
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import CircleWalk

    cases = [(3, 4, 1)] + ([] if quick else [(3, 4, 0), (4, 5, 1)])
    evidence, configurations, verdicts = [], [], []
    for K, N, p in cases:
        progress(f"CircleWalk({K}, {N}, {p}), learned_positions")
        proof = stuck_proof(CircleWalk(K, N, p), get_model("learned_positions"))
        verdicts.append(STUCK_WORDS.verdict(proof["verdict"]))
        evidence.append(f"CircleWalk({K}, {N}, {p}), learned_positions: {proof['verdict']}: {proof['why']}")
        configurations.append({"task": "circle", "K": K, "N": N, "p": str(p), "verdict": proof["verdict"]})
    return Finding(Verdict.combine(verdicts), evidence, configurations)


# ------------------------------------------------------------------------------------------------
# Makkuva et al.: the unigram point on the binary (p, q) source
# ------------------------------------------------------------------------------------------------
def _unigram_point(quick: bool, progress: Progress) -> Finding:
    """V = c π 1ᵀ, W = 0 (f = c π (N-1)/N for every input) on binary (p, q) sources with p + q > 1.

    With W = 0 the attention is uniform, X S = x̄ (token counts / N), and for the log-loss
    ℓ(z) = −log(z + ε) the V-gradient's row k is −(Σ_{n: y_n = k} π_n x̄_n) / (c π_k (N−1)/N + ε): a
    non-positive vector, zero only if E_k = Σ_{y_n = k} π_n x̄_n is. E_k ≠ 0 (exactly) for a label of
    positive probability, so no c ≥ 0 makes the point stationary. The gradient the engine computes at
    c = 1 is compared with that formula exactly.
    """
    import sympy as sp

    from rwtoolkit.engines.exact import EXACT, make_loss
    from rwtoolkit.models import batch, evaluate, get_model, rational_positions
    from rwtoolkit.tasks import binary_markov_task

    cases = [("7/10", "3/5", 3), ("4/5", "9/10", 4)] + (
        [] if quick else [("3/5", "3/5", 5), ("9/10", "1/2", 6)]
    )
    eps = sp.Rational(1, 10)
    model = get_model("one_layer")
    evidence, configurations, refuted = [], [], []
    figure: dict[str, Any] = {}
    for p, q, N in cases:
        progress(f"binary_markov p={p} q={q} N={N}, one_layer")
        task = binary_markov_task(p, q, N)
        pop = task.population()
        pi = [Fraction(q) / (Fraction(p) + Fraction(q)), Fraction(p) / (Fraction(p) + Fraction(q))]
        E = [[Fraction(0), Fraction(0)] for _ in range(2)]
        for tokens, y, prob in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
            for tok in tokens:
                E[y][tok] += Fraction(str(prob)) / N
        P = EXACT.asarray(rational_positions(N, 1))
        data = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), 2, P)
        V = EXACT.asarray(np.array([[pi[k]] * 2 for k in range(2)], dtype=object))
        W = EXACT.zeros((2 + int(P.shape[0]),) * 2)
        grad = evaluate(model, EXACT, {"V": V, "W": W}, data, make_loss("log", eps).elementwise()).gradient
        if grad is None:  # pragma: no cover - evaluate(gradient=True) always returns one
            raise ValueError("no gradient")
        gV = [[Fraction(int(x.p), int(x.q)) for x in row] for row in grad["V"].tolist()]
        formula = [
            [-E[k][j] / (pi[k] * Fraction(N - 1, N) + Fraction(1, 10)) for j in range(2)] for k in range(2)
        ]
        matches = gV == formula
        nonzero = all(any(e != 0 for e in E[k]) for k in range(2))
        refuted.append(matches and nonzero)
        evidence.append(
            f"binary_markov p={p} q={q} (p+q={Fraction(p) + Fraction(q)}) N={N}: E = "
            f"{[[str(e) for e in row] for row in E]} (both rows non-zero); ∂L/∂V at c=1, ε=1/10 = "
            f"{[[str(g) for g in row] for row in gV]} {'equals' if matches else 'DIFFERS FROM'} the formula"
        )
        configurations.append({"task": "binary_markov", "p": p, "q": q, "N": N, "eps": "1/10", "loss": "log"})
        figure[f"p={p} q={q} N={N}"] = {"E": E, "pi": pi, "N": N, "eps": Fraction(1, 10)}
    verdict = Verdict.REFUTED if all(refuted) else Verdict.INCONCLUSIVE
    return Finding(verdict, evidence, configurations, figure=figure)


#: (p, q, N) of the binary sources the tied / untied unigram point is checked on: p + q > 1 and p + q < 1.
TIED_CASES = [("7/10", "3/5", 3), ("1/5", "3/10", 3)]
TIED_CASES_FULL = [("7/10", "3/5", 4), ("1/5", "3/10", 4), ("9/10", "4/5", 5), ("1/10", "1/5", 5)]


def unigram_point(task: Any, model: Any) -> tuple[dict[str, np.ndarray], Any, list[Any]]:
    """The unigram point of ``tied_embedding`` / ``untied_embedding`` on ``task``: E = 0 (and W, W_V, A = 0),
    b = log ρ with ρ the label's exact marginal, so f = ρ for every input; with P = rational_positions(N, 1).

    Returns (the point, P, ρ).
    """
    import sympy as sp

    from rwtoolkit.models import Sizes, rational_positions

    pop = task.population()
    rho = [sp.Integer(0)] * pop.K
    for y, prob in zip(pop.labels.tolist(), pop.exact_probs(), strict=True):
        rho[y] += sp.nsimplify(prob)
    P = rational_positions(pop.N, 1)
    shapes = model.shapes(Sizes(K=pop.K, M=len(P), N=pop.N))
    point = {name: np.zeros(shape, dtype=object) for name, shape in shapes.items()}
    point["b"] = np.array([sp.log(r) for r in rho], dtype=object)
    return point, P, rho


def _tied_unigram(quick: bool, progress: Progress) -> Finding:
    """The exact gradient and Hessian inertia at the unigram point, tied and untied (the claim's criterion)."""
    from rwtoolkit.engines.exact import exact_hessian, hessian_inertia
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import binary_markov_task

    cases = TIED_CASES + ([] if quick else TIED_CASES_FULL)
    evidence: list[str] = []
    configurations: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    figure: dict[str, Any] = {}
    for name in ("tied_embedding", "untied_embedding"):
        model = get_model(name)
        for p, q, N in cases:
            progress(f"{name} binary_markov p={p} q={q} N={N}: the exact Hessian")
            task = binary_markov_task(p, q, N)
            point, P, rho = unigram_point(task, model)
            gradient, H = exact_hessian(model, task, point, P)
            stationary = all(g == 0 for g in gradient)
            plus, zero, minus = hessian_inertia(H)
            above = Fraction(p) + Fraction(q) > 1
            saddle_expected = not (name == "tied_embedding" and above)
            verdicts.append(Verdict.HOLDS if stationary and (minus > 0) == saddle_expected else Verdict.FAILS)
            what = (
                "a saddle (a direction of negative curvature)"
                if minus
                else f"no negative curvature (the {zero} flat directions leave a minimum undecided at "
                "second order)"
            )
            evidence.append(
                f"{name} binary_markov p={p} q={q} (p+q={Fraction(p) + Fraction(q)}) N={N}: "
                f"∇L {'= 0 exactly' if stationary else '≠ 0'}; Hessian inertia (+{plus}, 0×{zero}, −{minus}): "
                f"{what}; the paper: {'a saddle' if saddle_expected else 'a local minimum'}"
            )
            configurations.append(
                {"model": name, "task": "binary_markov", "p": p, "q": q, "N": N, "eps": "0", "loss": "log"}
            )
            figure[f"{name} p={p} q={q} N={N}"] = {
                "eigenvalues": np.linalg.eigvalsh(np.array(H.evalf(), dtype=float)).tolist(),
                "model": name,
                "p": p,
                "q": q,
                "N": N,
                "rho": [float(r) for r in rho],
            }
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figure)


#: Every claim, in report order.
CLAIMS: dict[str, ZooClaim] = {
    c.id: c
    for c in (
        ZooClaim(
            id="key_query_stuck",
            source="the separate key-query parameterisation of most implementations (docs/guide/models.md)",
            statement="from zero, separate key and query never move: the attention stays uniform for every t",
            model="key_query; multi_head with separate key and query per head (--head-dim)",
            task="circle walks; binary and in-context Markov chains",
            criterion="the exact induction step proves {W_K = W_Q = 0} invariant for every η, loss and μ; θ(0) = 0 lies in it",
            run=_key_query_stuck,
        ),
        ZooClaim(
            id="identical_heads",
            source="multi-head attention (docs/guide/models.md)",
            statement="heads that start identical stay identical for every t (so H heads from zero train as one)",
            model="multi_head",
            task="circle walks; binary and in-context Markov chains",
            criterion="the exact induction step proves the identical-heads subspace invariant for every η, loss and μ",
            run=_identical_heads,
        ),
        ZooClaim(
            id="linear_zero_fixed",
            source="linear attention, the model of the linear-attention analyses of in-context learning",
            statement="from zero, linear attention never moves: zero is a fixed point of GD, f = 0 for every t",
            model="linear_attention",
            task="circle walks; binary and in-context Markov chains",
            criterion="the exact induction step proves {0} invariant for every η, loss and μ",
            run=_linear_zero_fixed,
        ),
        ZooClaim(
            id="learned_positions_stuck",
            source="this paper's Theorem 4.1 (p ∈ {0, 1}, N = rK + 1: stuck at chance), with the positions trained",
            statement="with learned positional embeddings the stuck circle walks stay at chance for every t",
            model="learned_positions",
            task="circle walks with p ∈ {0, 1}, N = rK + 1",
            criterion="rwtoolkit.engines.exact.stuck_proof: the task's symmetry subspace (ΔP's axes permuted with the positions) is "
            "invariant for every η, loss and μ, and every point of it predicts the same for every input",
            run=_learned_positions_stuck,
        ),
        ZooClaim(
            id="makkuva_unigram_point",
            source="Makkuva et al., Attention with Markov (2024): single-layer transformers on the binary (p, q) "
            "source with p + q > 1 have a stationary point predicting the stationary (unigram) law",
            statement="the unigram predictor (V = c π 1ᵀ, W = 0: f = c π (N−1)/N for every input) is a stationary point "
            "of population GD, for some c",
            model="one_layer, this toolkit's simplified model (f = V X S, log-loss on f_y; the paper's own "
            "model is makkuva_unigram_point_paper)",
            task="binary_markov with p + q > 1",
            proxy=True,
            vacuous="the model class has no stationary point at all: X S is a convex combination of one-hot tokens, "
            "so every entry of ∂L/∂V is ≤ 0 and each row sums to −Σ_{y_n = k} π_n / (f_k + ε) < 0 wherever "
            "f_y + ε > 0; every point of the class is refuted, the unigram point with it, and the verdict says "
            "nothing about the paper's model",
            criterion="∂L/∂V at (c π 1ᵀ, 0) has row k = −E_k / (c π_k (N−1)/N + ε), E_k = Σ_{y_n = k} π_n x̄_n ≥ 0: refuted "
            "for every c ≥ 0 when every E_k ≠ 0 exactly and the engine's gradient at c = 1 equals the formula",
            run=_unigram_point,
        ),
        ZooClaim(
            id="makkuva_tied_unigram",
            source="Makkuva et al., Attention with Markov (2024): with weight tying the unigram point is a bad local "
            "minimum for p + q > 1 and a saddle for p + q < 1; without tying it is a saddle",
            statement="at the unigram point (embedding E = 0, bias b = log ρ: f = ρ for every input) the cross-entropy "
            "gradient is 0, and the Hessian has a negative eigenvalue exactly when the model is untied or "
            "p + q < 1",
            model="tied_embedding and untied_embedding, this toolkit's simplified models of the paper's "
            "parameterisation (embedding E x + p, logit read-out Eᵀ z + b or A z + b; attention only, no "
            "feed-forward block or layer norm, the loss at the last position only)",
            proxy=True,
            task="binary_markov with p + q > 1 and p + q < 1",
            criterion="exact gradient and Hessian (dual numbers through the tape, rwtoolkit.engines.exact.exact_hessian) and the "
            "Hessian's inertia (Descartes' rule on the exact characteristic polynomial); no negative eigenvalue "
            "is the second-order condition of a minimum, not a proof of one",
            run=_tied_unigram,
        ),
    )
}


# ------------------------------------------------------------------------------------------------
# in-context Markov chains, two-layer model: late times in certified balls
# ------------------------------------------------------------------------------------------------
#: (N, steps, checkpoint every) of the two-layer runs; quick runs the first only.
ICL_RUNS = ((4, 150, 5), (5, 300, 10))
ICL_ALPHA, ICL_ETA, ICL_EPS = 1, 1, "1/10"


def icl_predictors(task: Any, alpha: object = ICL_ALPHA) -> dict[str, np.ndarray]:
    """The three predictors of the next token of an in-context Markov chain (S tokens), exact per input:
    uniform 1/S; in-context unigram (n_s + α)/(N − 1 + Sα); bigram (Bayes) (n_{x_{N−1} s} + α)/(n_{x_{N−1}} + Sα),
    n counting the context's tokens and transitions.

    >>> from rwtoolkit.tasks import icl_markov_task
    >>> p = icl_predictors(icl_markov_task(2, 3, 1))
    >>> p["unigram"][0].tolist(), p["bigram"][0].tolist()  # context 0, 0
    ([Fraction(3, 4), Fraction(1, 4)], [Fraction(2, 3), Fraction(1, 3)])
    """
    a = Fraction(str(alpha))
    pop = task.population()
    S = pop.K
    tokens = pop.tokens.tolist()
    out = {name: np.empty((len(tokens), S), dtype=object) for name in ("uniform", "unigram", "bigram")}
    for n, x in enumerate(tokens):
        counts = [x.count(s) for s in range(S)]
        after = [sum(1 for u, v in zip(x[:-1], x[1:]) if u == x[-1] and v == s) for s in range(S)]
        for s in range(S):
            out["uniform"][n, s] = Fraction(1, S)
            out["unigram"][n, s] = (counts[s] + a) / (len(x) + S * a)
            out["bigram"][n, s] = (after[s] + a) / (sum(after) + S * a)
    return out


def ball_text(x: Any, digits: int = 4) -> str:
    """A decided ball's midpoint to ``digits`` places (its radius is far below them)."""
    return f"{float(x.mid()):.{digits}f}"


def r_squared(f: np.ndarray, p: np.ndarray, w: Sequence[Any]) -> Any:
    """The squared weighted correlation of f's and p's entries (n, S), pooled over labels, with weights
    ``w`` (n,): the R² of the best affine fit f ≈ a·p + b. Any one number type (arb balls, floats); None
    when f is the same for every input (zero variance).

    >>> float(r_squared(np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[2.0, 4.0], [6.0, 10.0]]), [0.5, 0.5]))
    1.0
    """
    S = f.shape[1]
    weights = [w[n] for n in range(f.shape[0]) for _ in range(S)]
    fv, pv = list(f.ravel()), list(p.ravel())
    zero = weights[0] * 0
    total = sum(weights, zero)
    fm = sum((a * b for a, b in zip(weights, fv)), zero) / total
    pm = sum((a * b for a, b in zip(weights, pv)), zero) / total
    cov = sum((a * (b - fm) * (c - pm) for a, b, c in zip(weights, fv, pv)), zero)
    vf = sum((a * (b - fm) ** 2 for a, b in zip(weights, fv)), zero)
    vp = sum((a * (c - pm) ** 2 for a, c in zip(weights, pv)), zero)
    if vf == 0:
        return None
    return cov**2 / (vf * vp)


@functools.lru_cache(maxsize=4)
def _icl_run(N: int, steps: int, every: int) -> tuple[Any, dict[int, Any], int]:
    """The two-layer model's certified run (checkpoints every ``every`` steps) and its precision (one run
    serves both claims of a report)."""
    from rwtoolkit.engines import select
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import icl_markov_task

    task = icl_markov_task(2, N, ICL_ALPHA)
    engine = select("two_layer", "balls", "zero").load()
    traj = engine(task, get_model("two_layer"), steps, ICL_ETA, ICL_EPS, keep=lambda t: t % every == 0)
    return task, {r.step: r.state for r in traj.records}, traj.prec


def _certified_runs(
    quick: bool, evidence: list[str], verdicts: list[Verdict], progress: Progress
) -> Iterator[tuple]:
    """(N, steps, every, task, states, bits) of each certified run; a run whose balls lost every bit is
    recorded as not certified (an inconclusive configuration) and skipped."""
    for N, steps, every in ICL_RUNS[:1] if quick else ICL_RUNS:
        progress(f"icl_markov S=2 N={N}, two_layer, t = 0..{steps} in balls")
        try:
            task, states, bits = _icl_run(N, steps, every)
        except ValueError as err:
            evidence.append(f"icl_markov S=2 N={N}: not certified: {err}")
            verdicts.append(Verdict.INCONCLUSIVE)
            continue
        yield N, steps, every, task, states, bits


def stage_order(stages: Iterable[tuple[int, str]]) -> tuple[list[str], list[int], dict[str, int], list[int]]:
    """From each checkpoint's (t, stage), "" where undecided: the decided stages in order (a stage again after
    another counts again), the step each of them starts, the first step of each stage, and the undecided steps.
    The Edelman rows' reading of a run, on the proxy and on the paper's model.

    >>> stage_order([(0, "uniform"), (5, ""), (10, "unigram"), (20, "unigram"), (30, "uniform")])
    (['uniform', 'unigram', 'uniform'], [0, 10, 30], {'uniform': 0, 'unigram': 10}, [5])
    """
    order: list[str] = []
    starts: list[int] = []
    first: dict[str, int] = {}
    undecided: list[int] = []
    for t, stage in stages:
        if not stage:
            undecided.append(t)
            continue
        first.setdefault(stage, t)
        if not order or order[-1] != stage:
            order.append(stage)
            starts.append(t)
    return order, starts, first, undecided


def _edelman_stages(quick: bool, progress: Progress) -> Finding:
    """Stage at t: "uniform" while f is the same for every input; else the predictor (unigram or bigram)
    with the larger R² (squared correlation with f), decided when the two balls do not overlap."""
    from flint import arb, fmpq

    evidence: list[str] = []
    configurations: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    figures: dict[str, Any] = {}
    for N, steps, every, task, states, bits in _certified_runs(quick, evidence, verdicts, progress):
        pred = {  # the predictors as exact balls, once per run
            name: np.vectorize(lambda x: arb(fmpq(x.numerator, x.denominator)), otypes=[object])(p)
            for name, p in icl_predictors(task).items()
        }
        weights = [arb(fmpq(int(q.p), int(q.q))) for q in task.population().exact_probs()]
        stages: list[tuple[int, str]] = []
        r2_at: dict[int, tuple[str, str]] = {}
        series: dict[str, list[float]] = {"t": [], "unigram": [], "bigram": []}
        for t, state in sorted(states.items()):
            uni = r_squared(state.f, pred["unigram"], weights)
            if uni is None:
                stage = "uniform"
            else:
                big = r_squared(state.f, pred["bigram"], weights)
                r2_at[t] = (ball_text(uni), ball_text(big))
                series["t"].append(t)
                series["unigram"].append(float(uni.mid()))
                series["bigram"].append(float(big.mid()))
                stage = "unigram" if uni > big else "bigram" if big > uni else ""
            stages.append((t, stage))
        order, _, first, undecided = stage_order(stages)
        held = order == ["uniform", "unigram", "bigram"]
        verdicts.append(Verdict.INCONCLUSIVE if undecided else Verdict.HOLDS if held else Verdict.FAILS)
        shown = [
            t for t in (first.get("unigram"), first.get("bigram"), steps) if t is not None and t in r2_at
        ]
        evidence.append(
            f"icl_markov S=2 N={N} α={ICL_ALPHA}, two_layer from zero, η={ICL_ETA}, ε={ICL_EPS}, t = 0..{steps} "
            f"every {every} in balls ({bits} bits): stages in order {' → '.join(order)}"
            + (f" (first at t = {', '.join(str(first[s]) for s in order)})" if order else "")
            + "; R² (unigram, bigram; ball midpoints) "
            + "; ".join(f"t={t}: {r2_at[t][0]}, {r2_at[t][1]}" for t in shown)
            + (f"; undecided at t = {undecided}" if undecided else "")
        )
        configurations.append({"task": "icl_markov", "S": 2, "N": N, "alpha": str(ICL_ALPHA), "steps": steps})
        figures[f"N={N}"] = {**series, "N": N, "steps": steps, "first": first}
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figures)


def _nichani_parent(quick: bool, progress: Progress) -> Finding:
    """At the last step, for every position i = 2..N, the population-mean layer-1 attention on the parent
    i − 1 exceeds the attention on every other position j ≤ i (decided in balls)."""
    from flint import arb

    from rwtoolkit.engines.balls import ball_arithmetic, ball_batch
    from rwtoolkit.models import Tape
    from rwtoolkit.models.two_layer import TwoLayer

    model = TwoLayer()
    evidence: list[str] = []
    configurations: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    figures: dict[str, Any] = {}
    for N, steps, _, task, states, bits in _certified_runs(quick, evidence, verdicts, progress):
        state = states[steps]
        data = ball_batch(task)  # the population the certified run used
        _, attention = model.layer_one(Tape(ball_arithmetic()), state.params["A1"], data.inputs)
        weights = data.weights
        rows, failures, undecided = [], [], []
        grid = np.zeros((N, N))
        grid[0, 0] = 1.0
        for i in range(1, N):  # 0-based position i has parent i - 1
            mean = [
                sum((weights[n] * attention[i].value[n, 0, j] for n in range(data.size)), arb(0))
                for j in range(i + 1)
            ]
            parent = mean[i - 1]
            others = [mean[j] for j in range(i + 1) if j != i - 1]
            if all(parent > o for o in others):
                status = "parent largest"
            elif any(parent < o for o in others):
                status = "parent not largest"
                failures.append(i + 1)
            else:
                status = "undecided"
                undecided.append(i + 1)
            rows.append(f"i={i + 1}: [{', '.join(ball_text(m, 3) for m in mean)}] {status}")
            grid[i, : i + 1] = [float(m.mid()) for m in mean]
        verdicts.append(Verdict.INCONCLUSIVE if undecided else Verdict.FAILS if failures else Verdict.HOLDS)
        evidence.append(
            f"icl_markov S=2 N={N}, two_layer from zero, η={ICL_ETA}, t={steps} in balls ({bits} bits), mean layer-1 attention "
            f"of position i on j = 1..i: " + "; ".join(rows)
        )
        configurations.append({"task": "icl_markov", "S": 2, "N": N, "alpha": str(ICL_ALPHA), "steps": steps})
        figures[f"N={N}"] = {"attention": grid, "steps": steps, "failures": failures}
    return Finding(Verdict.combine(verdicts), evidence, configurations, figure=figures)


CLAIMS.update(
    {
        c.id: c
        for c in (
            ZooClaim(
                id="edelman_stages",
                source="Edelman et al., The Evolution of Statistical Induction Heads (2024): on in-context Markov "
                "chains, two-layer attention-only models learn in stages: uniform, then in-context unigram, "
                "then bigram",
                statement="from zero, the prediction passes through the stages uniform → unigram → bigram in that order",
                model="two_layer, this toolkit's simplified model (linear read-out f = V X S, log-loss on "
                "f_y at the last position; the paper's own model is edelman_stages_paper)",
                task="icl_markov S=2, α=1",
                proxy=True,
                vacuous="the first two stages follow from the model class and the zero start: f is the same for "
                "every input at t = 0 only (so 'uniform' is t = 0), and at t = 1 both attentions are still "
                "uniform, so f is affine in the context's token counts and the unigram R² is exactly 1 (the "
                "ball at t = 1 is [1.000000000000 ± 2.4e-13] at N = 4); only the bigram overtaking is a finding",
                criterion="stage at t: uniform while f is the same for every input, else the predictor with the larger "
                "R² (squared population correlation with f, the best affine fit), decided in certified balls "
                "at every checkpoint; holds when the stages appear in that order",
                run=_edelman_stages,
            ),
            ZooClaim(
                id="nichani_parent_attention",
                source="Nichani et al., How Transformers Learn Causal Structure with Gradient Descent (2024): the "
                "first layer's attention comes to point from each position to its parent in the causal graph "
                "(for a Markov chain, the previous position)",
                statement="at the last step, every position's mean layer-1 attention is largest on its parent i − 1",
                model="two_layer, this toolkit's simplified model, plain GD on all layers at once (the "
                "paper's own model and staged training is nichani_parent_attention_paper)",
                task="icl_markov S=2, α=1",
                proxy=True,
                criterion="for every position i = 2..N the population-mean attention on i − 1 exceeds that on every other "
                "j ≤ i, decided in certified balls at t = T",
                run=_nichani_parent,
            ),
        )
    }
)
