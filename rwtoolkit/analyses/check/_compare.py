"""Numeric read-outs against the exact trajectory: tolerance, first divergence, for every model.

One path for every model of record: the exact engine is the one ``rwtoolkit.engines.select(model, "exact",
start)`` gives (the reduced engine ``rwtoolkit.engines.exact.derive`` for the paper's model from zero, the
generic ``derive_model`` for any other model or start), called with the one signature of the exact engines;
``ExpectedSteps`` reads the trajectory it returns through the one interface of an exact trajectory
(``rwtoolkit.engines.exact.ExactTrajectory``) and turns each compared read-out into float64, the nearest
double of the exact value, when a comparison first reads it; ``compare`` finds the first divergence with
``rwtoolkit.runtime.first_difference``, the code a frozen fixture (``rw check --emit``) runs on its oracle's
doubles. What is compared is what the implementation's protocol reports (``quantities``): the paper's V and
W x̃_N (from the reduced coordinates w_tok, c of the trajectory, read through the implementation's P), another
model's parameters by their names, then S, f, the loss and the accuracy of every model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, overload

import numpy as np
import sympy as sp
from flint import arb

from rwtoolkit.analyses.check._config import (
    START_SIGMA,
    CheckConfig,
    config_json,
    model_of,
    optimizer_of,
    schedule_of,
    stages_of,
)
from rwtoolkit.analyses.check._protocol import (
    Factory,
    ImplementationError,
    Readouts,
    finite_or_text,
    quantities,
    run_config,
)
from rwtoolkit.analyses.check.strategies import exact_loss
from rwtoolkit.engines import Engine, select
from rwtoolkit.engines.exact import EXACT, ExactTrajectory, decimal_value
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL
from rwtoolkit.models import DEFAULT_MODEL, rational_positions
from rwtoolkit.models.one_layer import reduced_coordinates
from rwtoolkit.runtime import (
    Difference,
    check_positions,
    first_difference,
    scaled_error,
)

#: Digits of the exact f when near-ties of the accuracy are looked for (far beyond float64's 16).
DIGITS = 40
#: Roundings per step that the tolerance allows for, per unit of logit size (see ``tolerance``).
MARGIN = 256

__all__ = [
    "MARGIN",
    "REFERENCE_NOTE",
    "Divergence",
    "ExpectedSteps",
    "Mismatch",
    "Tolerance",
    "assert_matches_exact",
    "compare",
    "exact_engine",
    "describe_reference",
    "exact_trajectory",
    "expected_steps",
    "near_tie_steps",
    "reference_engine",
    "scaled_error",
    "tolerance",
]


@dataclass(frozen=True)
class Tolerance:
    """A relative tolerance: |got - expected| ≤ rtol · max(1, max |expected|), with why it suffices."""

    rtol: float
    reason: str


def unit_roundoff(dtype: str) -> float:
    """u = half the machine epsilon of ``dtype`` ("float64" or "float32"): 2⁻⁵³ or 2⁻²⁴.

    >>> unit_roundoff("float64") == 2.0**-53, unit_roundoff("float32") == 2.0**-24
    (True, True)
    """
    return float(np.finfo(dtype).eps) / 2


def tolerance(config: CheckConfig, steps: int) -> Tolerance:
    """The float tolerance for ``config`` at steps 0..``steps``, derived from the dtype and the config.

    u = unit roundoff of the dtype. A step is a few hundred roundings on quantities whose size the
    max(1, ·) scale absorbs, and exp() of a logit l carries a relative error of about u·|l|, where
    |l| ≤ 1 + μ²·η·steps bounds the logits' growth. rtol = MARGIN · u · (1 + μ²ηT).

    >>> from rwtoolkit.analyses.check import build_config
    >>> from rwtoolkit.tasks import CircleWalk
    >>> tol = tolerance(build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10"), 2)
    >>> f"{tol.rtol:.2e}"
    '8.53e-14'
    """
    unit = unit_roundoff(config.dtype)
    scale = 1 + float(config.mu) ** 2 * float(config.eta) * steps
    rtol = MARGIN * unit * scale
    reason = (
        f"{config.dtype} unit roundoff u = {unit:.2g}; rtol = {MARGIN}·u·(1 + μ²ηT) = {MARGIN}·u·{scale:.4g}: "
        f"a step is a few hundred roundings and exp of a logit l adds u·|l| with |l| ≤ 1 + μ²ηT; "
        f"each bug of interest moves a compared value by 1e-3 or more"
    )
    rule = config.optimizer
    if rule is not None and rule["name"] in ADAM_RULES:
        # Adam divides by √v̂ + ε ≥ ε: a rounding δ of a gradient entry moves its update by up to ηδ/ε
        amplify = 1 + float(config.eta) * steps / float(rule["eps"])
        rtol *= amplify
        reason += (
            f"; {rule['name']}: times (1 + ηT/ε) = {amplify:.3g}, since the update divides by √v̂ + ε ≥ ε, so a "
            "rounding δ of a gradient entry moves it by up to ηδ/ε"
        )
    return Tolerance(rtol, reason)


#: The update rules that divide by √v̂ + ε (``rwtoolkit.models.Optimizer``), whose tolerance ``tolerance`` widens.
ADAM_RULES = ("adam", "adamw")


_EXACT: dict[tuple, ExactTrajectory] = {}


def exact_engine(config: CheckConfig) -> Engine:
    """The exact engine of ``config``'s reference: ``rwtoolkit.engines.select(model, "exact", start)``, the
    reduced engine for the paper's model from zero, the generic engine for any other model or start.

    >>> from rwtoolkit.analyses.check import build_config, for_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> config = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    >>> exact_engine(config).name, exact_engine(for_model(config, "key_query")).name
    ('reduced exact engine', 'generic exact engine')
    """
    return select(config.model, "exact", config.init)


#: How ``compare`` notes the reference it compared with (``describe_reference``), for the report.
REFERENCE_NOTE = "reference: "

#: The most seconds the exact reference of one configuration may be estimated at: beyond, a model with
#: next-token logits is compared with its certified ball trajectory instead (``reference_engine``). From a
#: sequence model's own float64 start the exact engine nests exponentials from step 1 (estimated at hours).
EXACT_REFERENCE_SECONDS = 60.0

_REFERENCE: dict[tuple, Engine] = {}


def reference_engine(config: CheckConfig, steps: int) -> Engine:
    """The engine of ``config``'s reference trajectory at t = 0..``steps``: ``exact_engine(config)``, or, for a
    model with next-token logits whose exact estimate (``rwtoolkit.engines.Engine.load_estimate``, as
    ``reference_cost`` calls it) exceeds ``EXACT_REFERENCE_SECONDS`` or refuses the run, the generic ball
    engine ``select(model, "balls", start)``: a certified enclosure of the same trajectory, at the precision
    its automatic choice reaches (every ball narrower than 2⁻⁶⁴ relative, ``BallTrajectory.tight``).

    >>> from rwtoolkit.analyses.check import build_config, for_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> config = for_model(build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10"), "key_query")
    >>> reference_engine(config, 2).name
    'generic exact engine'
    """
    exact = exact_engine(config)
    if config.objective is None:
        return exact
    key = (*_reference_key(config), steps)
    if key not in _REFERENCE:
        try:
            seconds = exact.load_estimate()(
                config.task,
                model_of(config),
                steps,
                json=False,
                per_input=True,
                readouts=True,
                init=config.init,
                optimizer=optimizer_of(config),
                schedule=schedule_of(config),
                stages=stages_of(config, steps),
            ).estimate.seconds
        except ValueError:  # the exact engine refuses the run (too many steps from this start)
            seconds = float("inf")
        fits = seconds <= EXACT_REFERENCE_SECONDS
        _REFERENCE[key] = exact if fits else select(config.model, "balls", config.init)
    return _REFERENCE[key]


def describe_reference(engine: Engine) -> str:
    """How a report names a reference: 'the exact trajectory' or 'the certified ball trajectory (...)'."""
    if engine.arithmetic == "balls":
        return (
            "the certified ball trajectory (rwtoolkit.engines.balls: the exact engine refuses the run or its "
            f"estimate is above {EXACT_REFERENCE_SECONDS:.0f} s; every ball narrower than 2^-64 relative, compared "
            "at its midpoint)"
        )
    return "the exact trajectory"


def exact_trajectory(
    config: CheckConfig, steps: int, memo: bool = True, engine: Engine | None = None
) -> ExactTrajectory:
    """The exact trajectory of ``config`` at t = 0..``steps``: ``engine`` (default ``exact_engine(config)``)
    run with the exact engines' one signature on the config's task, model, η, ε, μ, loss and start (the
    model's zero or its fixed dyadic start, ``exact_start``).

    Memoised (hypothesis replays configs while shrinking); ``memo`` False for a caller that reads each
    trajectory once and should not keep it (``rw check --emit``).
    """
    engine = exact_engine(config) if engine is None else engine
    key = (*_reference_key(config), steps, engine.name)
    if key in _EXACT:
        return _EXACT[key]
    if engine.arithmetic == "balls":  # a certified reference (``reference_engine``)
        traj = engine.load()(
            config.task,
            model_of(config),
            steps,
            eta=config.eta,
            init=config.init,
            objective=config.objective,
            optimizer=optimizer_of(config),
            schedule=schedule_of(config),
            stages=stages_of(config, steps),
        )
        if memo:
            _EXACT[key] = traj
        return traj
    traj = engine.load()(
        config.task,
        model=model_of(config),
        steps=steps,
        eta=config.eta,
        eps=config.eps,
        mu=config.mu,
        loss=exact_loss(config.loss),
        init=config.init,
        sigma=START_SIGMA,
        seed=0,
        # a sequence model (the generic engine): its objective and update rule
        **(
            {}
            if config.objective is None
            else {
                "objective": config.objective,
                "optimizer": optimizer_of(config),
                "schedule": schedule_of(config),
                "stages": stages_of(config, steps),
            }
        ),
    )
    if memo:
        if len(_EXACT) > 256:
            _EXACT.clear()
        _EXACT[key] = traj
    return traj


def _reference_key(config: CheckConfig) -> tuple:
    """What the exact trajectory of ``config`` depends on besides the steps: neither the dtype nor P."""
    return (
        *task_key(config),
        config.eta,
        config.eps,
        config.mu,
        config.loss,
        config.model,
        config.head_dim,
        config.heads,
        config.init,
        config.objective,
        None if config.optimizer is None else tuple(sorted((k, str(v)) for k, v in config.optimizer.items())),
        config.schedule,
        config.stages,
    )


def task_key(config: CheckConfig) -> tuple:
    task = config.task
    if hasattr(task, "p"):
        return ("circle", task.K, task.N, task.p)
    return ("finite", task.K, task.tokens.tobytes(), task.labels.tobytes(), task.prob_values)


def trajectory_key(config: CheckConfig, steps: int) -> tuple:
    """What the expected values of ``config`` at t = 0..``steps`` depend on besides P: its exact trajectory
    (``_reference_key``), the steps and the dtype (whose tie tolerance decides the near-ties)."""
    return (*_reference_key(config), steps, config.dtype)


@dataclass(frozen=True)
class Divergence(Difference):
    """The first step and quantity where an implementation leaves the exact trajectory, on a config.

    A ``rwtoolkit.runtime.Difference`` (``limit`` is the tolerance, also as ``rtol``) with the
    configuration it was found on, in words and as JSON.
    """

    config: str = ""
    config_json: dict = field(default_factory=dict, compare=False)

    @property
    def rtol(self) -> float:
        return self.limit

    @classmethod
    def of(cls, diff: Difference, config: CheckConfig, note: str = "") -> Divergence:
        """The divergence of a ``rwtoolkit.runtime.Difference`` on ``config``."""
        return cls(
            diff.step,
            diff.quantity,
            diff.index,
            diff.expected,
            diff.got,
            diff.error,
            diff.limit,
            diff.text,
            config.describe() + note,
            config_json(config),
        )

    def to_json(self) -> dict:
        return {
            "step": self.step,
            "quantity": self.quantity,
            "index": list(self.index),
            "expected": finite_or_text(self.expected),
            "got": finite_or_text(self.got),
            "error": finite_or_text(self.error),
            "rtol": self.rtol,
            "config": self.config_json,
            "config_text": self.config,
            **({"assumption": self.text} if self.text else {}),
        }


class Mismatch(AssertionError):
    """An implementation diverged from the exact trajectory; ``divergence`` says where."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(f"{divergence.describe()} on {divergence.config}")
        self.divergence = divergence


def near_tie_steps(traj: ExactTrajectory, dtype: str) -> frozenset[int]:
    """Steps whose accuracy is not compared: some exact gap max f - f_k is positive but within twice the
    dtype's tie tolerance (the float tie rule may then differ from the exact one); ``near_tie`` on
    ``f_rows``."""
    near = near_tie(dtype)
    return frozenset(t for t in range(len(traj.states)) if near(f_rows(traj, t)))


def f_rows(traj: ExactTrajectory, t: int) -> Sequence[Sequence[Any]]:
    """Rows of exact f at step t whose gaps are those of every input's f: the reduced engine's groups where
    the trajectory has its reduced view (one row per group of inputs with one f up to a rotation of its
    entries, which moves no gap), else every input's row."""
    reduced = traj.reduced
    if reduced is not None:
        return reduced.states[t].evaluated.f
    return per_input(traj, t, "f")


def per_input(traj: ExactTrajectory, t: int, name: str) -> Any:
    """The per-input read-out ``name`` ("S" (n, N) or "f" (n, K)) at step t, one row per input of
    ``task.population()``, exact: the reduced view's rows (nested exponentials as named atoms) or the generic
    engine's arrays."""
    reduced = traj.reduced
    if reduced is not None:
        return [list(row) for row in reduced.value(t, name)]
    if traj.arithmetic == "balls":  # a certified reference: the generic ball engine's records
        return traj.value(t, name)
    return getattr(traj.states[t], name)


def near_tie(dtype: str) -> Callable[[Sequence[Sequence[Any]]], bool]:
    """Whether exact rows f (lists of SymPy values) have a gap max f - f_k positive but within twice the
    dtype's tie tolerance (``near_tie_steps`` and ``ExpectedSteps.accuracy_compared`` on ``f_rows``)."""
    rtol = DEFAULT_TIE_RTOL[dtype]
    memo: dict[sp.Expr, sp.Float] = {}

    def value(expr: sp.Expr) -> sp.Float:
        if expr not in memo:
            v = decimal_value(expr, DIGITS)
            if v is None:
                raise ValueError(f"the exact value {expr} is not a number (symbols or an abstract loss)")
            memo[expr] = v
        return memo[expr]

    def near(fs: Sequence[Sequence[Any]]) -> bool:
        for f in fs:
            values = [value(v) for v in f]
            top, scale = max(values), max(abs(v) for v in values)
            for v in values:
                gap = top - v
                if 0 < gap <= 2 * rtol * scale and gap > sp.Float("1e-30", DIGITS) * max(scale, 1):
                    return True
        return False

    return near


class ExpectedSteps(Sequence[Mapping[str, np.ndarray]]):
    """The exact read-outs of one config at t = 0..T, each converted to float64 when first read.

    The trajectory (``exact_trajectory``, whichever exact engine ``select`` gives) is computed once; a read-out
    (a parameter by its name, W x̃_N, S, f, the loss) becomes a float64 array, the nearest double of every
    exact entry, only when a comparison reads it, and the accuracy's exact argmax decisions are made only for a
    step whose accuracy is compared (``accuracy_compared``): a comparison that stops at a first divergence, or
    an implementation that reports no S or no accuracy, never pays for the rest. ``expected[t][q]`` is step
    t's read-out q; ``quantities`` what each step holds, in the order compared (``quantities(config)``).

    W x̃_N (the paper's protocol) is [w_tok; P c] with the reduced coordinates (w_tok, c) of the trajectory's
    reduced view, or of its parameters V, W (Lemma B.1, ``rwtoolkit.models.one_layer.reduced_coordinates``), and
    the config's P as float64: the exact trajectory depends on P only through μ.
    """

    def __init__(self, config: CheckConfig, steps: int, engine: Engine | None = None) -> None:
        self.engine = reference_engine(config, steps) if engine is None else engine
        self.trajectory = exact_trajectory(config, steps, engine=self.engine)
        self._config = config
        self._near = near_tie(config.dtype)
        self.quantities = quantities(config)
        self._floats_of: dict[int, tuple[object, float]] = {}
        self._rows = [_Row(self, t) for t in range(len(self.trajectory.times))]
        self._compared: dict[int, bool] = {}

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, t: int) -> Mapping[str, np.ndarray]: ...
    @overload
    def __getitem__(self, t: slice) -> Sequence[Mapping[str, np.ndarray]]: ...
    def __getitem__(self, t: int | slice) -> Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]]:
        return self._rows[t]

    def accuracy_compared(self, t: int) -> bool:
        """Whether step t's accuracy is compared: no exact near-tie in f (``near_tie``) and every argmax decided.

        Decided on first call; the exact accuracy is computed only when no near-tie rules it out."""
        if t not in self._compared:
            compared = not self._near(f_rows(self.trajectory, t))
            if compared:
                value = self.trajectory.value(t, "accuracy")
                compared = value is not None and sp.sympify(value).is_Rational
                if compared:
                    self._rows[t].converted["accuracy"] = self.floats(value)
            self._compared[t] = compared
        return self._compared[t]

    def not_compared(self) -> list[int]:
        """The steps found so far whose accuracy is not compared."""
        return sorted(t for t, compared in self._compared.items() if not compared)

    def convert(self, t: int, q: str) -> np.ndarray:
        """Step t's read-out q (a parameter name, W_xN, S, f, loss or accuracy) as float64."""
        if q == "accuracy":
            if not self.accuracy_compared(t):
                return np.array(np.nan)
            return self._rows[t].converted["accuracy"]
        if q == "W_xN":
            w_tok, c = self._reduced(t)
            return np.concatenate([self.floats(w_tok), self._config.P @ self.floats(c)])
        if q in ("S", "f", "token_logits"):
            return self.floats(per_input(self.trajectory, t, q))
        if q in self.trajectory.parameter_names or q == "loss":
            return self.floats(self.trajectory.value(t, q))
        raise KeyError(q)

    def _reduced(self, t: int) -> tuple[Any, Any]:
        """(w_tok, c) at step t: the reduced view's, or Lemma B.1's of the paper model's V, W at the exact P."""
        traj = self.trajectory
        if traj.reduced is not None:
            return traj.reduced.value(t, "w_tok"), traj.reduced.value(t, "c")
        P = np.asarray(rational_positions(self._config.N, self._config.mu), dtype=object)
        V, W = (np.asarray(traj.value(t, name), dtype=object) for name in ("V", "W"))
        _, w_tok, c = reduced_coordinates(V, W, P, sp.Rational(self._config.mu))
        return w_tok, c

    def floats(self, values: Any) -> np.ndarray:
        """``values`` (an exact scalar, or nested lists / arrays / a Matrix of them) as float64: the nearest
        double of each entry. An entry met before (the same object: the per-input rows of one group share
        theirs) is converted once."""
        exact = np.asarray(values.tolist() if isinstance(values, sp.MatrixBase) else values, dtype=object)
        out = np.empty(exact.shape, dtype=np.float64)
        memo = self._floats_of
        for index, value in np.ndenumerate(exact):
            hit = memo.get(id(value))
            if hit is None or hit[0] is not value:
                hit = memo[id(value)] = (value, _nearest_double(value))
            out[index] = hit[1]
        return out


def _nearest_double(value: Any) -> float:
    """The double nearest an exact value, or a certified ball's midpoint (``reference_engine``: its balls are
    narrower than 2⁻⁶⁴ relative, so the midpoint's double is as near every point of it as float64 can be)."""
    if isinstance(value, arb):
        return float(value.mid())
    return float(EXACT.to_float(np.array(value, dtype=object)))


class _Row(Mapping[str, np.ndarray]):
    """Step t of ``ExpectedSteps``: read-outs converted on first access."""

    def __init__(self, steps: ExpectedSteps, t: int) -> None:
        self._steps, self._t = steps, t
        self.converted: dict[str, np.ndarray] = {}

    def __getitem__(self, q: str) -> np.ndarray:
        if q not in self.converted:
            self.converted[q] = self._steps.convert(self._t, q)
        return self.converted[q]

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps.quantities)

    def __len__(self) -> int:
        return len(self._steps.quantities)


_EXPECTED: dict[tuple, ExpectedSteps] = {}


def expected_steps(config: CheckConfig, steps: int) -> ExpectedSteps:
    """The exact read-outs of ``config`` at t = 0..steps (``ExpectedSteps``), each converted to float64 when
    first read, with ``accuracy_compared(t)`` (False at an exact near-tie in f, or an undecided argmax).

    Memoised: hypothesis replays configurations while shrinking.
    """
    key = (*trajectory_key(config, steps), config.P.tobytes())
    if key not in _EXPECTED:
        if len(_EXPECTED) > 256:
            _EXPECTED.clear()
        _EXPECTED[key] = ExpectedSteps(config, steps)
    return _EXPECTED[key]


def compare(readouts: Readouts, config: CheckConfig, steps: int, rtol: float | None = None) -> list[str]:
    """Raise ``Mismatch`` at the first (step, quantity) outside the tolerance; else return notes.

    Quantities are compared in the order t = 0, 1, … and, at each step, ``quantities(config)``: V and W x̃_N
    (the paper's model) or the model's parameters by name, then S, f, the loss and the accuracy. The accuracy
    is compared exactly (it is a sum of exact probabilities), except at a step where some exact gap
    max f - f_k is positive but below twice the tie tolerance, or an exact argmax is undecided (noted, not
    compared). Only what is compared is computed: the read-outs the implementation provides, up to the first
    divergence; the accuracy of a step (its exact argmax decisions) only when every other quantity of that
    step matched.
    """
    config = own_positions(readouts, config)
    limit = tolerance(config, steps).rtol if rtol is None else rtol
    expected = expected_steps(config, steps)
    others = tuple(q for q in expected.quantities if q != "accuracy")
    diff = first_difference(readouts, expected, limit, frozenset(), others)
    notes = [REFERENCE_NOTE + describe_reference(expected.engine)] if config.objective is not None else []
    stopped = getattr(expected.trajectory, "stopped", None)
    if stopped is not None and diff is None:  # a certified reference that could not decide a later step
        notes.append(
            f"t >= {len(expected)} not compared on {config.describe()}: the certified reference is {stopped}"
        )
    if readouts.provided("accuracy"):
        # the accuracy is the last quantity of a step: compared at the steps before the first divergence
        reached = expected[: len(expected) if diff is None else diff.step]
        skip = frozenset(t for t in range(len(reached)) if not expected.accuracy_compared(t))
        diff = first_difference(readouts, reached, limit, skip, ("accuracy",)) or diff
    if diff is not None:
        raise Mismatch(Divergence.of(diff, config))
    if not readouts.provided("accuracy"):
        return notes
    return notes + [
        f"accuracy at t={t} not compared: an exact near-tie in f" for t in expected.not_compared()
    ]


def own_positions(readouts: Readouts, config: CheckConfig) -> CheckConfig:
    """The config to compare against: ``config``, or, when the implementation reports its own P, the same
    with that P and its μ (``check_positions``; a failed assumption raises ``Mismatch`` at quantity "P").

    The paper's model depends on P only through μ, so the exact trajectory at the implementation's μ,
    with W x̃_N read through its P, is what a correct implementation with its own valid P follows. Another
    model sees P itself: its implementation reporting its own P is refused (``ImplementationError``).
    """
    if readouts.P is None:
        return config
    if config.model != DEFAULT_MODEL:
        raise ImplementationError(
            f"the implementation reports its own P; --model {config.model} sees P itself (not only PᵀP = μI), "
            "so it is checked with the config's P only"
        )
    found = check_positions(readouts.P, config.N, config.dtype)
    if found.assumption is not None:
        error = abs(found.got - found.expected)
        diff = Difference(
            0,
            "P",
            (),
            found.expected,
            found.got,
            error,
            found.tolerance,
            f"{found.assumption} fails: {found.text}",
        )
        raise Mismatch(Divergence.of(diff, config))
    mu = Fraction(found.mu).limit_denominator(10**6)
    return replace(config, P=np.asarray(readouts.P, dtype=np.float64), mu=mu, embedding="own")


def assert_matches_exact(
    factory: Factory, config: CheckConfig, steps: int, rtol: float | None = None
) -> Readouts:
    """Run ``factory``'s implementation on ``config`` for t = 0..steps and compare it with the exact trajectory.

    Runs it through its model's protocol (``run_config``) and compares (``compare``) V(t), W(t)x̃_N (another
    model: its parameters by name), S(t), f(t), the loss and the population accuracy with the exact trajectory
    of ``exact_engine(config)`` (those the implementation provides; see ``Readouts.provided``) and raises ``Mismatch`` at the
    first step and quantity that diverge, with the expected and the obtained value. The tolerance is
    ``rtol`` if given (a tighter bound measured for one implementation), else ``tolerance(config, steps)``;
    returns the read-outs. The accuracy is compared exactly (up to ACCURACY_ATOL for summing floats).

    Examples
    --------
    >>> import torch
    >>> from rwtoolkit.analyses.check import build_config
    >>> from rwtoolkit.tasks import CircleWalk
    >>> def frozen(config):  # never trains: fails at V(1)
    ...     while True:
    ...         yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)
    >>> cfg = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    >>> try:
    ...     assert_matches_exact(frozen, cfg, 1)
    ... except Mismatch as err:
    ...     print(err.divergence.quantity, err.divergence.step)
    V 1
    """
    readouts = run_config(factory, config, steps)
    compare(readouts, config, steps, rtol)
    return readouts
