"""``explore(spec)``: the signal, the one-step and the multi-step stuck checks (and training) per point.

A spec gives one task or a family swept over parameter values ("points"). At each point the exact
signal C is computed; if one parameter stays symbolic, C's vanishing set over [0, 1] is found, and the
GD checks run at every rational vanishing point plus one generic value. Each numeric task gets a
verdict:

- ``informative``: C ≠ 0, and after one step the inputs' score vectors are not all multiples of E[e_y];
- ``stuck``: C = 0, every f(X) is a multiple of E[e_y] after one step, and all inputs share one score
  vector at every step checked (ℓ' abstract, so for every loss);
- ``escapes``: C = 0, but some step separates two inputs (the average is uninformative, yet the
  attention finds the information later);
- ``undecided``: anything else, with the reason.

``stuck``, ``escapes`` and ``undecided`` are the one verdict vocabulary (``rwtoolkit.io.Verdict``) for the claim
"GD from zero keeps every input on one score vector at every step checked" (``PointCheck.stuck``: holds at the
steps checked, refuted, inconclusive; ``EXPLORE_WORDS``); ``informative`` is a point where that claim does not
arise. A ``stuck`` point also gets ``rwtoolkit.engines.exact.stuck_proof``'s verdict for every t (``rwtoolkit.io.STUCK_WORDS``).

A ``stuck`` task then gets the stability of its manifold (``rwtoolkit.analyses.stability``, at the training settings of
the spec: η, ε, μ = M/2 of the sine embeddings, up to ``STABILITY_STEPS`` steps): the verdict becomes
``stuck-attracting``, ``stuck-neutral`` or ``stuck-repelling``, with the rate and the predicted escape
at float64 rounding. It stays ``stuck`` when the analysis is off (``stability=False``) or cannot run
(a single input, or more reduced coordinates than ``rwtoolkit.analyses.stability`` accepts), and says why.

Another model (``model=``: any ``rwtoolkit.models.get_model`` target, a model of your own included) keeps what reads
the task alone (the signal, the reference accuracies) and runs ``stuck_proof(task, model)`` at every point, which
decides the claim: stuck (proved, or the scores agree within their balls for the steps checked), escapes (certified),
undecided (the proof was not attempted, with the reason). The one-step and manifold checks and the stability of the
manifold are written for the paper's reduced model: each is listed as not run, in one line saying why
(``ONE_LAYER_CHECKS``; ``MODEL_CHECKS`` are the ones that run); training (``train=True``) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp
from tqdm import tqdm

from rwtoolkit.analyses.explore._signal import SignalSummary, signal_summary
from rwtoolkit.analyses.explore._stuck import Manifold, OneStep, manifold_check, one_step_check
from rwtoolkit.analyses.explore._train import TrainRun, reference_accuracies, train_runs
from rwtoolkit.analyses.stability import StabilitySummary
from rwtoolkit.io import STUCK_WORDS, Verdict, Wording
from rwtoolkit.models import DEFAULT_MODEL, Model, get_model
from rwtoolkit.tasks import CircleWalk, FiniteTask, TaskSpec

#: Tolerance of "above the constant-prediction accuracy" for exact-population accuracies: they are float64
#: sums of at most a few thousand probabilities (error below 1e-12), so 1e-9 leaves a margin of 1000.
POPULATION_ACCURACY_TOL = 1e-9
#: Why a "stuck" verdict and a training run that learns can both be right (REPORT.md, explore.json).
STUCK_CONTRADICTION_NOTE = (
    "the exact trajectory from zero initialisation stays on an invariant manifold (all inputs share one "
    "score vector, so every input gets the same prediction and the accuracy is at most the "
    "constant-prediction accuracy); float rounding (zero init) or a non-zero init puts the numeric run "
    "slightly off the manifold, and when the manifold is not attracting the run leaves it and learns. "
    'A "stuck-repelling" verdict predicts this (training is then not flagged); "stuck" alone means the '
    "stability was not analysed, so it holds for exact GD from zero only"
)
#: Generic parameter values tried, in order, for the "away from the vanishing set" check.
GENERIC_VALUES = tuple(sp.Rational(a, b) for a, b in ((1, 2), (1, 3), (2, 3), (1, 4), (3, 4)))
#: How explore.json and REPORT.md write ``PointCheck.stuck`` (the point's ``exact_verdict``).
EXPLORE_WORDS = Wording(
    "rw explore", {Verdict.HOLDS: "stuck", Verdict.REFUTED: "escapes", Verdict.INCONCLUSIVE: "undecided"}
)
#: Every word of a point's ``verdict`` in explore.json: ``EXPLORE_WORDS``, "stuck" refined by the manifold's
#: stability, and "informative".
VERDICTS = (
    "informative",
    "stuck-attracting",
    "stuck-neutral",
    "stuck-repelling",
    "stuck",
    "escapes",
    "undecided",
)
#: Longest linearisation of a stuck point (steps of the spec's training run, at most this many).
STABILITY_STEPS = 100
#: What ``explore`` runs for a model other than one_layer: what reads the task alone, and stuck_proof.
MODEL_CHECKS = (
    "the token-average signal C (it reads the task alone)",
    "the Bayes and constant-prediction accuracies (they read the task alone)",
    "stuck_proof(task, model) at every point (rwtoolkit.engines.exact.stuck_proof): the verdict",
)
#: The checks written for the paper's reduced model, each with the one line why it does not run for another model.
ONE_LAYER_CHECKS = {
    "one_step": "the one-step check is specific to one_layer: f(X) ∝ E[e_y] after step 1 when C = 0 is a "
    "property of its reduced coordinates (rwtoolkit.engines.exact.derive)",
    "manifold": "the manifold check is specific to one_layer: exact GD with ℓ' abstract "
    '(derive(loss="any")) follows its reduced coordinates only',
    "stability": "the stability of the stuck manifold is specific to one_layer: it linearises at the sine "
    "embeddings of --train (rw stability --model MODEL analyses another model's manifold)",
}


def is_one_layer(model: Model) -> bool:
    """Whether ``model`` is the paper's reduced model, the one every check of ``explore`` is written for.

    >>> is_one_layer(get_model("one_layer")), is_one_layer(get_model("key_query"))
    (True, False)
    """
    return model.name == DEFAULT_MODEL  # the registry refuses the name on any other class


@dataclass
class PointCheck:
    """The exact GD checks (and optional training) at one point of the explored grid (one numeric task)."""

    values: dict[str, sp.Expr]  # the symbol values substituted ({} when the point had no symbol)
    task: CircleWalk | FiniteTask
    signal_is_zero: bool
    one_step: OneStep | None  # None for a model other than one_layer (``ONE_LAYER_CHECKS``)
    manifold: Manifold | None  # the same
    bayes_accuracy: sp.Expr
    constant_accuracy: sp.Expr
    runs: list[TrainRun] | None = None
    train_note: str = ""  # why training was skipped, when it was
    accuracy_tol: float = (
        POPULATION_ACCURACY_TOL  # of the runs' test accuracies (sampled test sets: binomial)
    )
    stability: StabilitySummary | None = None  # the manifold's stability, for a stuck point
    stability_note: str = ""  # why a stuck point has no stability analysis, when it has none
    proof: dict[str, Any] | None = (
        None  # rwtoolkit.engines.exact.stuck_proof of a stuck point (stuck for every t?)
    )
    proof_note: str = ""  # another model: why stuck_proof was not attempted, when it was not

    @property
    def contradicting_runs(self) -> list[tuple[str, int, float]]:
        """(run label, first step, final accuracy) of the training runs that end above the
        constant-prediction accuracy (beyond ``accuracy_tol``) although the verdict is "stuck" and the
        stability analysis does not predict an escape (a "stuck-repelling" manifold is expected to be left)."""
        if self.stuck is not Verdict.HOLDS or self.verdict == "stuck-repelling" or not self.runs:
            return []
        bound = float(self.constant_accuracy) + self.accuracy_tol
        out = []
        for run in self.runs:
            if run.test_accuracy[-1] > bound:
                first = next(t for t, a in enumerate(run.test_accuracy) if a > bound)
                out.append((run.label, first, run.test_accuracy[-1]))
        return out

    @property
    def contradiction(self) -> str:
        """One line when training contradicts a "stuck" verdict (which runs, from when, and why it can
        happen), else ""."""
        runs = self.contradicting_runs
        if not runs:
            return ""
        which = "; ".join(
            f"run {label}: from step {first}, final {final:.4f}" for label, first, final in runs
        )
        return (
            f"training rises above the constant-prediction accuracy {self.constant_accuracy} ({which}); "
            f"why: {STUCK_CONTRADICTION_NOTE}"
        )

    @property
    def verdict(self) -> str:
        """One of ``VERDICTS``: the exact verdict, "stuck" refined by the stability of the manifold."""
        exact = self.exact_verdict
        if exact == "stuck" and self.stability is not None:
            return f"stuck-{self.stability.kind}"
        return exact

    @property
    def stuck(self) -> Verdict | None:
        """The claim "GD from zero keeps every input on one score vector at every step checked (any loss)":
        holds at the steps checked, refuted (a step separates two inputs), inconclusive; None at an informative
        point (C ≠ 0 and the first step's scores are not all ∝ E[e_y]), where the claim does not arise.

        For a model other than one_layer (no one-step or manifold check) ``stuck_proof`` decides: proved or
        evidence for the steps checked hold, escapes refutes, a proof not attempted is inconclusive."""
        if self.one_step is None or self.manifold is None:
            if self.proof is None:
                return Verdict.INCONCLUSIVE
            refuted = STUCK_WORDS.verdict(self.proof["verdict"]) is Verdict.REFUTED
            return Verdict.REFUTED if refuted else Verdict.HOLDS
        if not self.signal_is_zero and not self.one_step.shared:
            return None
        if self.signal_is_zero and self.one_step.shared and self.manifold.invariant is True:
            return Verdict.HOLDS
        if self.signal_is_zero and self.manifold.invariant is False:
            return Verdict.REFUTED
        return Verdict.INCONCLUSIVE

    @property
    def exact_verdict(self) -> str:
        """informative / stuck / escapes / undecided from the exact checks alone (module docstring)."""
        return "informative" if self.stuck is None else EXPLORE_WORDS.word(self.stuck)

    @property
    def reason(self) -> str:
        """One line explaining the verdict."""
        C = "C = 0" if self.signal_is_zero else "C ≠ 0"
        if (
            self.one_step is None or self.manifold is None
        ):  # another model: stuck_proof's verdict, or why none
            proved = (
                f"{self.proof['verdict']}: {self.proof['why']}" if self.proof is not None else self.proof_note
            )
            return f"{C}; {proved}"
        one = (
            "every f(X) ∝ E[e_y] after step 1"
            if self.one_step.shared
            else "f(X) not all ∝ E[e_y] after step 1"
        )
        steps = self.manifold.steps
        if self.manifold.invariant is True:
            many = f"one shared score vector at every step t ≤ {steps} (any loss)"
        elif self.manifold.invariant is False:
            many = f"inputs separated at step {self.manifold.first_break}"
        else:
            many = f"shared score vector not decided at some step t ≤ {steps}"
        trivial = ""
        if self.bayes_accuracy == self.constant_accuracy:
            trivial = "; nothing to learn here (Bayes accuracy = constant-prediction accuracy)"
        flag = f"; CONTRADICTED BY TRAINING: {self.contradiction}" if self.contradiction else ""
        stab = ""
        if self.proof is not None:
            stab = f"; {self.proof['verdict']}: {self.proof['why']}"
        if self.stability is not None:
            stab += f"; stability: {self.stability.line()}"
        elif self.stability_note:
            stab += f"; {self.stability_note}"
        return f"{C}; {one}; {many}{trivial}{stab}{flag}"


@dataclass
class Point:
    """One sweep point: its parameter values, the task there, its signal, and the numeric checks."""

    params: dict[str, Any]
    task: CircleWalk | FiniteTask
    signal: SignalSummary
    checks: list[PointCheck] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # vanishing points not checked, and why


@dataclass
class ExploreResult:
    """Everything ``rw explore`` reports: the spec, its settings, and one ``Point`` per sweep point."""

    spec: TaskSpec
    points: list[Point]
    trained: bool
    model: Model = field(default_factory=lambda: get_model(DEFAULT_MODEL))  # the model the checks ran on

    @property
    def not_run(self) -> dict[str, str]:
        """The checks that did not run, each with the one line why (``ONE_LAYER_CHECKS``; none for one_layer)."""
        return {} if is_one_layer(self.model) else dict(ONE_LAYER_CHECKS)


def _evaluation_values(summary: SignalSummary) -> tuple[list[sp.Expr], list[str]]:
    """Values of the free parameter at which to run the GD checks: rational vanishing points and one
    generic value off the vanishing set; irrational vanishing points are listed as skipped."""
    assert summary.vanishing is not None
    values, skipped = [], []
    for r in summary.vanishing_points():
        if r.is_Rational:
            values.append(r)
        else:
            skipped.append(f"{summary.symbol} = {r} (irrational: exact GD there is not attempted)")
    for g in GENERIC_VALUES:
        if summary.vanishing.all_p or g not in summary.vanishing:
            values.append(g)
            break
    return sorted(set(values)), skipped


def stuck_for_every_t(task: CircleWalk | FiniteTask, steps: int) -> dict[str, Any]:
    """``rwtoolkit.engines.exact.stuck_proof`` of a stuck point (the paper's model): proved for every t, or why it is evidence.

    A task whose symmetry search or induction step cannot run (too large, say) keeps the exact checks'
    verdict, labelled as evidence for ``steps`` steps, with the reason.
    """
    from rwtoolkit.engines.exact import stuck_proof

    try:
        return stuck_proof(task, "one_layer", steps=max(2, min(steps, 6)))
    except ValueError as err:
        return {
            "verdict": STUCK_WORDS.word(Verdict.HOLDS),
            "why": f"no proof attempted: {err}",
            "steps": steps,
        }


def model_stuck_proof(
    task: CircleWalk | FiniteTask, model: Model, steps: int
) -> tuple[dict[str, Any] | None, str]:
    """(``stuck_proof(task, model)``, "") at a point of a model other than one_layer, or (None, why not): there no
    exact check has run before it, so a proof that is not attempted leaves the point undecided, not stuck."""
    from rwtoolkit.engines.exact import stuck_proof

    try:
        return stuck_proof(task, model, steps=max(2, min(steps, 6))), ""
    except ValueError as err:  # above its work bound (the estimate and the alternative are in the message)
        return None, f"stuck_proof not attempted: {err}"


def stuck_stability(
    task: CircleWalk | FiniteTask, settings: dict[str, Any]
) -> tuple[StabilitySummary | None, str]:
    """(summary, "") for a stuck task at the training settings, or (None, why not).

    η, ε and μ = M/2 (the sine embeddings of ``rw explore --train``) from ``settings`` (the spec's
    ``train``), min(steps, ``STABILITY_STEPS``) steps; predicted escapes for the spec's Gaussian σ too.
    """
    from rwtoolkit.analyses.stability import (
        MAX_DIM,
        active_coordinates,
        check_estimate,
        check_stuck_task,
        linearise,
        orbit_sums,
        population_route,
        stability_summary,
    )

    try:
        check_stuck_task(task)
    except ValueError as err:
        return None, f"stability not analysed: {err}"
    if task.population().size == 1:
        return None, "stability not analysed: the population has a single input"
    dim = active_coordinates(task).dim
    if dim > MAX_DIM:
        return (
            None,
            f"stability not analysed: {dim} reduced coordinates (rw stability accepts up to {MAX_DIM})",
        )
    steps = max(2, min(int(settings["steps"]), STABILITY_STEPS))
    mu = float(settings["M"]) / 2
    route = population_route(
        task, "auto"
    )  # orbit sums above rwtoolkit.analyses.stability.ORBITS_ABOVE inputs
    try:
        check_estimate(task, steps, 0, 1, route, summed=1 if route == "orbits" else None, dim=dim)
        sums = None
        if route == "orbits":
            sums = orbit_sums(task, active_coordinates(task))
            check_estimate(task, steps, 0, 1, route, summed=len(sums.orbits), dim=dim)
        lin = linearise(task, steps, float(settings["eta"]), mu, float(settings["eps"]), sums=sums)
    except ValueError as err:  # too large, a trajectory with no equal coordinates, or one that diverges
        return None, f"stability not analysed: {err}"
    return stability_summary(lin, tuple(float(s) for s in settings["sigmas"])), ""


def explore(
    spec: TaskSpec,
    train: bool = False,
    progress: bool = False,
    stability: bool = True,
    model: Model | str = DEFAULT_MODEL,
) -> ExploreResult:
    """Run every check the spec asks for (see the module docstring); ``train`` adds numeric runs,
    ``stability`` the stability of each stuck point's manifold; ``model`` (a ``rwtoolkit.models.get_model`` target)
    another model than one_layer: the checks that read the task, and ``stuck_proof`` (``MODEL_CHECKS``)."""
    model = get_model(model) if isinstance(model, str) else model
    if train and not is_one_layer(model):
        raise ValueError(
            f"train=True is out of place with model {model.target or model.name}: explore's training runs are "
            "specific to one_layer (sine embeddings); train it with rw train --model, or leave out train"
        )
    settings = spec.explore
    points: list[Point] = []
    for params in spec.points():
        task = spec.task(**params)
        points.append(Point(params, task, signal_summary(task)))
    jobs: list[tuple[Point, dict[str, sp.Expr], CircleWalk | FiniteTask]] = []
    for point in points:
        if point.signal.symbol is None:
            jobs.append((point, {}, point.task))
            continue
        values, point.skipped = _evaluation_values(point.signal)
        sym = point.signal.symbol
        jobs += [(point, {str(sym): v}, point.task.substitute({sym: v})) for v in values]
    for point, values, task in tqdm(jobs, desc="rw explore", unit="task", disable=not progress):
        if task.symbols:  # every parameter was substituted above; a leftover symbol is a bug
            raise RuntimeError(f"task still has free parameters {sorted(map(str, task.symbols))}")
        bayes, constant = reference_accuracies(task)
        if not is_one_layer(model):
            check = PointCheck(values, task, signal_summary(task).is_zero, None, None, bayes, constant)
            check.proof, check.proof_note = model_stuck_proof(task, model, int(settings["steps"]))
            if check.stuck is Verdict.HOLDS:
                check.stability_note = f"stability not analysed: {ONE_LAYER_CHECKS['stability']}"
            point.checks.append(check)
            continue
        check = PointCheck(
            values=values,
            task=task,
            signal_is_zero=signal_summary(task).is_zero,
            one_step=one_step_check(task, eta=settings["eta"], mu=settings["mu"]),
            manifold=manifold_check(
                task, int(settings["steps"]), eta=settings["eta"], eps=settings["eps"], mu=settings["mu"]
            ),
            bayes_accuracy=bayes,
            constant_accuracy=constant,
        )
        if check.stuck is Verdict.HOLDS:
            check.proof = stuck_for_every_t(task, int(settings["steps"]))
        if stability and check.stuck is Verdict.HOLDS:
            check.stability, check.stability_note = stuck_stability(task, spec.train)
        if train and task.population().size == 1:
            # One input of probability 1: nothing to learn, and rwtoolkit.engines.numeric's exact-population
            # accuracy cannot take a single probability (tests/test_properties_numeric_vs_symbolic.py).
            check.train_note = "training skipped: the population has a single input (nothing to learn)"
        elif train:
            check.runs = train_runs(task, spec.train)
            if not spec.train["population"]:
                from rwtoolkit.analyses.repro import accuracy_tolerance  # three binomial standard deviations

                check.accuracy_tol = accuracy_tolerance(float(constant), int(spec.train["test_size"]))
        point.checks.append(check)
    return ExploreResult(spec, points, train, model)
