"""Numeric read-outs against the exact trajectory of ``rwtoolkit.engines.exact.derive``: tolerance, first divergence.

The expected values come through the oracle format: the trajectory is written by
``rwtoolkit.engines.exact.write_oracle`` (certified doubles) and read back by the numpy-only reader, then compared
by ``rwtoolkit.runtime.first_difference``, the same code a frozen fixture (``rw check --emit``) runs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import sympy as sp

from rwtoolkit.analyses.check._config import CheckConfig, config_json
from rwtoolkit.analyses.check._protocol import Factory, Readouts, finite_or_text, run
from rwtoolkit.analyses.check.strategies import exact_loss
from rwtoolkit.engines.exact import Trajectory, decimal_value, derive, write_oracle
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL
from rwtoolkit.runtime import (
    Difference,
    check_positions,
    expected_readouts,
    first_difference,
    scaled_error,
)

#: Digits of the exact f when near-ties of the accuracy are looked for (far beyond float64's 16).
DIGITS = 40
#: Roundings per step that the tolerance allows for, per unit of logit size (see ``tolerance``).
MARGIN = 256

__all__ = [
    "MARGIN",
    "Divergence",
    "Mismatch",
    "Tolerance",
    "assert_matches_exact",
    "compare",
    "exact_trajectory",
    "expected_steps",
    "near_tie_steps",
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
    return Tolerance(rtol, reason)


_EXACT: dict[tuple, Trajectory] = {}


def exact_trajectory(config: CheckConfig, steps: int, memo: bool = True) -> Trajectory:
    """``rwtoolkit.engines.exact.derive`` for the config (memoised: hypothesis replays configs while shrinking; ``memo``
    False for a caller that reads each trajectory once and should not keep it, ``rw check --emit``)."""
    key = (task_key(config), steps, config.eta, config.eps, config.mu, config.loss)
    if key in _EXACT:
        return _EXACT[key]
    traj = derive(
        config.task, steps, eta=config.eta, eps=config.eps, mu=config.mu, loss=exact_loss(config.loss)
    )
    if memo:
        if len(_EXACT) > 256:
            _EXACT.clear()
        _EXACT[key] = traj
    return traj


def task_key(config: CheckConfig) -> tuple:
    task = config.task
    if hasattr(task, "p"):
        return ("circle", task.K, task.N, task.p)
    return ("finite", task.K, task.tokens.tobytes(), task.labels.tobytes(), task.prob_values)


def trajectory_key(config: CheckConfig, steps: int) -> tuple:
    """What an exact trajectory of ``config`` depends on: the memo key of the expected values."""
    return (
        *task_key(config),
        steps,
        config.eta,
        config.eps,
        config.mu,
        config.loss,
        config.dtype,
        config.model,
        config.head_dim,
        config.heads,
    )


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


def near_tie_steps(traj: Trajectory, dtype: str) -> frozenset[int]:
    """Steps whose accuracy is not compared: some exact gap max f - f_k is positive but within twice the
    dtype's tie tolerance (the float tie rule may then differ from the exact one).

    Read on the engine's groups (``StepState.evaluated.f``, one row per group of inputs with one f up to a
    rotation of its entries, which moves no gap), not once per input of the population."""
    near = near_tie(dtype)
    return frozenset(s.t for s in traj.states if near(s.evaluated.f))


def near_tie(dtype: str) -> Callable[[list], bool]:
    """Whether exact rows f (lists of SymPy values) have a gap max f - f_k positive but within twice the
    dtype's tie tolerance (``near_tie_steps`` per step; ``rwtoolkit.analyses.check._models`` on any model's f)."""
    rtol = DEFAULT_TIE_RTOL[dtype]
    memo: dict[sp.Expr, sp.Float] = {}

    def value(expr: sp.Expr) -> sp.Float:
        if expr not in memo:
            v = decimal_value(expr, DIGITS)
            if v is None:
                raise ValueError(f"the exact value {expr} is not a number (symbols or an abstract loss)")
            memo[expr] = v
        return memo[expr]

    def near(fs: list) -> bool:
        for f in fs:
            values = [value(v) for v in f]
            top, scale = max(values), max(abs(v) for v in values)
            for v in values:
                gap = top - v
                if 0 < gap <= 2 * rtol * scale and gap > sp.Float("1e-30", DIGITS) * max(scale, 1):
                    return True
        return False

    return near


_EXPECTED: dict[tuple, tuple[list[dict[str, np.ndarray]], frozenset[int]]] = {}


def expected_steps(config: CheckConfig, steps: int) -> tuple[list[dict[str, np.ndarray]], frozenset[int]]:
    """The exact read-outs at t = 0..steps as float64 arrays in the kit's layout (W_xN = [w_tok; P c]),
    through the oracle format, and the steps whose accuracy is not compared (``near_tie_steps``)."""
    key = (*trajectory_key(config, steps), config.P.tobytes())
    if key not in _EXPECTED:
        if len(_EXPECTED) > 256:
            _EXPECTED.clear()
        traj = exact_trajectory(config, steps)
        with tempfile.TemporaryDirectory(prefix="rwcheck-") as folder:
            header = write_oracle(traj, Path(folder) / "oracle.json", per_input=True)
            expected = expected_readouts(header, config.P)
        _EXPECTED[key] = (expected, near_tie_steps(traj, config.dtype))
    return _EXPECTED[key]


def compare(readouts: Readouts, config: CheckConfig, steps: int, rtol: float | None = None) -> list[str]:
    """Raise ``Mismatch`` at the first (step, quantity) outside the tolerance; else return notes.

    Quantities are compared in the order V, W x̃_N, S, f, loss, accuracy at t = 0, 1, …; the
    accuracy is compared exactly (it is a sum of exact probabilities), except at a step where some
    exact gap max f - f_k is positive but below twice the tie tolerance (noted, not compared).
    """
    config = own_positions(readouts, config)
    limit = tolerance(config, steps).rtol if rtol is None else rtol
    expected, skip = expected_steps(config, steps)
    diff = first_difference(readouts, expected, limit, skip)
    if diff is not None:
        raise Mismatch(Divergence.of(diff, config))
    if not readouts.provided("accuracy"):
        return []
    return [f"accuracy at t={t} not compared: an exact near-tie in f" for t in sorted(skip)]


def own_positions(readouts: Readouts, config: CheckConfig) -> CheckConfig:
    """The config to compare against: ``config``, or, when the implementation reports its own P, the same
    with that P and its μ (``check_positions``; a failed assumption raises ``Mismatch`` at quantity "P").

    The paper's model depends on P only through μ, so the exact trajectory at the implementation's μ,
    with W x̃_N read through its P, is what a correct implementation with its own valid P follows.
    """
    if readouts.P is None:
        return config
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
    """Run ``factory``'s implementation on ``config`` for t = 0..steps and compare it with ``rwtoolkit.engines.exact.derive``.

    Compares V(t), W(t)x̃_N, S(t), f(t), the loss and the population accuracy with the exact trajectory
    (those the implementation provides; see ``Readouts.provided``) and raises ``Mismatch`` at the
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
    readouts = run(factory, config, steps)
    compare(readouts, config, steps, rtol)
    return readouts
