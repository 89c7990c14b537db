"""Numeric read-outs against the exact trajectory of ``rwsymbolic.derive``: tolerance, first divergence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
import torch

from rwcheck._config import CheckConfig
from rwcheck._protocol import LABELS, QUANTITIES, Factory, Readouts, finite_or_text, run
from rwcheck.strategies import symbolic_loss
from rwnumeric import DEFAULT_TIE_RTOL
from rwsymbolic import Trajectory, decimal_value, derive

#: Digits of the exact values when they are turned into floats (far beyond float64's 16).
DIGITS = 40
#: Accuracies are sums of at most a few thousand float probabilities: exact up to this.
ACCURACY_ATOL = 1e-12
#: Roundings per step that the tolerance allows for, per unit of logit size (see ``tolerance``).
MARGIN = 256


@dataclass(frozen=True)
class Tolerance:
    """A relative tolerance: |got - expected| ≤ rtol · max(1, max |expected|), with why it suffices."""

    rtol: float
    reason: str


def tolerance(config: CheckConfig, steps: int) -> Tolerance:
    """The float tolerance for ``config`` at steps 0..``steps``, derived from the dtype and the config.

    u = unit roundoff of the dtype. A step is a few hundred roundings on quantities whose size the
    max(1, ·) scale absorbs, and exp() of a logit l carries a relative error of about u·|l|, where
    |l| ≤ 1 + μ²·η·steps bounds the logits' growth. rtol = MARGIN · u · (1 + μ²ηT).

    >>> from rwtasks import CircleWalk
    >>> tol = tolerance(CheckConfig.build(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10"), 2)
    >>> f"{tol.rtol:.2e}"
    '8.53e-14'
    """
    unit = float(torch.finfo(config.torch_dtype).eps) / 2
    scale = 1 + float(config.mu) ** 2 * float(config.eta) * steps
    rtol = MARGIN * unit * scale
    reason = (
        f"{config.dtype} unit roundoff u = {unit:.2g}; rtol = {MARGIN}·u·(1 + μ²ηT) = {MARGIN}·u·{scale:.4g}: "
        f"a step is a few hundred roundings and exp of a logit l adds u·|l| with |l| ≤ 1 + μ²ηT; "
        f"each bug of interest moves a compared value by 1e-3 or more"
    )
    return Tolerance(rtol, reason)


_EXACT: dict[tuple, Trajectory] = {}


def exact_trajectory(config: CheckConfig, steps: int) -> Trajectory:
    """``rwsymbolic.derive`` for the config (memoised: hypothesis replays configs while shrinking)."""
    key = (_task_key(config), steps, config.eta, config.eps, config.mu, config.loss)
    if key not in _EXACT:
        if len(_EXACT) > 256:
            _EXACT.clear()
        _EXACT[key] = derive(
            config.task, steps, eta=config.eta, eps=config.eps, mu=config.mu, loss=symbolic_loss(config.loss)
        )
    return _EXACT[key]


def _task_key(config: CheckConfig) -> tuple:
    task = config.task
    if hasattr(task, "p"):
        return ("circle", task.K, task.N, task.p)
    return ("finite", task.K, task.tokens.tobytes(), task.labels.tobytes(), task.prob_values)


@dataclass(frozen=True)
class Divergence:
    """The first step and quantity where an implementation leaves the exact trajectory."""

    step: int
    quantity: str
    index: tuple[int, ...]
    expected: float
    got: float
    error: float
    rtol: float
    config: str
    config_json: dict = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
        return (
            f"{LABELS[self.quantity]}{where} at t={self.step}: expected {self.expected:.17g}, got {self.got:.17g} "
            f"(scaled error {self.error:.3g} > rtol {self.rtol:.3g})"
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
        }


class Mismatch(AssertionError):
    """An implementation diverged from the exact trajectory; ``divergence`` says where."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(f"{divergence.describe()} on {divergence.config}")
        self.divergence = divergence


class _Floats:
    """Floats of exact expressions at DIGITS digits, memoised (per-input lists repeat expressions)."""

    def __init__(self) -> None:
        self.memo: dict[sp.Expr, float] = {}

    def __call__(self, expr: object) -> sp.Float:
        expr = sp.sympify(expr)
        if expr not in self.memo:
            value = decimal_value(expr, DIGITS)
            if value is None:
                raise ValueError(f"the exact value {expr} is not a number (symbols or an abstract loss)")
            self.memo[expr] = value
        return self.memo[expr]

    def array(self, rows: Iterable[Iterable[object]]) -> np.ndarray:
        return np.array([[float(self(e)) for e in row] for row in rows], dtype=np.float64)


def expected_values(traj: Trajectory, config: CheckConfig, t: int, floats: _Floats) -> dict[str, np.ndarray]:
    """The exact read-outs at step t as float64 arrays, in the kit's layout (W_xN = [w_tok; P c])."""
    value = traj.states[t].atom_form  # named exponentials: evaluated once each, fast on late steps
    w_tok = np.array([float(floats(v)) for v in value("w_tok")])
    c = np.array([float(floats(v)) for v in value("c")])
    return {
        "V": floats.array(value("V").tolist()),
        "W_xN": np.concatenate([w_tok, config.P @ c]),
        "S": floats.array(value("S")),
        "f": floats.array([list(fi) for fi in value("f")]),
        "loss": np.array(float(floats(value("loss")))),
        "accuracy": np.array(float(floats(value("accuracy")))),
    }


def scaled_error(got: np.ndarray, expected: np.ndarray) -> tuple[float, tuple[int, ...]]:
    """max |got - expected| / max(1, max |expected|) and the index of the worst entry (NaN counts as worst)."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN: counted as the worst error below
        diff = np.abs(got - expected)
    diff = np.where(got == expected, 0.0, np.where(np.isnan(diff), np.inf, diff))  # equal infinities agree
    index = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    return float(diff[index]) / scale, tuple(int(i) for i in index)


def _near_tie(fs: list, floats: _Floats, rtol: float) -> bool:
    """Some exact gap max f - f_k lies in (0, 2·rtol·max|f|]: the float tie rule may then differ from the exact one."""
    for f in fs:
        values = [floats(v) for v in f]
        top, scale = max(values), max(abs(v) for v in values)
        for v in values:
            gap = top - v
            if 0 < gap <= 2 * rtol * scale and gap > sp.Float("1e-30", DIGITS) * max(scale, 1):
                return True
    return False


def compare(readouts: Readouts, config: CheckConfig, steps: int, rtol: float | None = None) -> list[str]:
    """Raise ``Mismatch`` at the first (step, quantity) outside the tolerance; else return notes.

    Quantities are compared in the order V, W x̃_N, S, f, loss, accuracy at t = 0, 1, …; the
    accuracy is compared exactly (it is a sum of exact probabilities), except at a step where some
    exact gap max f - f_k is positive but below twice the tie tolerance (noted, not compared).
    """
    traj = exact_trajectory(config, steps)
    limit_values = tolerance(config, steps).rtol if rtol is None else rtol
    floats = _Floats()
    notes = []
    for t in range(steps + 1):
        expected = expected_values(traj, config, t, floats)
        for q in QUANTITIES:
            values = readouts.values.get(q)
            if values is None:
                continue
            got = values[t]
            if q == "accuracy":
                if _near_tie(traj.states[t].atom_form("f"), floats, DEFAULT_TIE_RTOL[config.dtype]):
                    notes.append(f"accuracy at t={t} not compared: an exact near-tie in f")
                    continue
                error, index = abs(float(got) - float(expected[q])), ()
                error = float("inf") if np.isnan(error) else error
                limit = ACCURACY_ATOL
            else:
                error, index = scaled_error(got, expected[q])
                limit = limit_values
            if not error <= limit:
                raise Mismatch(
                    Divergence(
                        t,
                        q,
                        index,
                        float(expected[q][index]),
                        float(got[index]),
                        error,
                        limit,
                        config.describe(),
                        config.to_json(),
                    )
                )
    return notes


def assert_matches_exact(
    factory: Factory, config: CheckConfig, steps: int, rtol: float | None = None
) -> Readouts:
    """Run ``factory``'s implementation on ``config`` for t = 0..steps and compare it with ``rwsymbolic.derive``.

    Compares V(t), W(t)x̃_N, S(t), f(t), the loss and the population accuracy with the exact trajectory
    (those the implementation provides; see ``Readouts.provided``) and raises ``Mismatch`` at the
    first step and quantity that diverge, with the expected and the obtained value. The tolerance is
    ``rtol`` if given (a tighter bound measured for one implementation), else ``tolerance(config, steps)``;
    returns the read-outs. The accuracy is compared exactly (up to ACCURACY_ATOL for summing floats).

    Examples
    --------
    >>> from rwtasks import CircleWalk
    >>> def frozen(config):  # never trains: fails at V(1)
    ...     while True:
    ...         yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)
    >>> cfg = CheckConfig.build(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    >>> try:
    ...     assert_matches_exact(frozen, cfg, 1)
    ... except Mismatch as err:
    ...     print(err.divergence.quantity, err.divergence.step)
    V 1
    """
    readouts = run(factory, config, steps)
    compare(readouts, config, steps, rtol)
    return readouts
