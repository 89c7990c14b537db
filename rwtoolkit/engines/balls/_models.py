"""Certified trajectories of any registered model: full-batch GD on the exact population, every value a ball.

The generic engine of ``rwtoolkit.models`` (``descend``: the model's one forward definition, differentiated by
the tape) run in python-flint ``arb`` balls: every entry of θ(t), S, f and the loss is a ball that
contains the exact real value. This is how claims about late times (hundreds of steps, where exact
arithmetic grows without bound) are decided: a comparison is decided when its balls do not overlap,
and undecided otherwise (raise the precision). The positions are ``rwtoolkit.models.rational_positions(N, μ)``
(exact rationals), the start is zero, the loss is ℓ(z) = −log(z + ε), as in ``rwtoolkit.engines.exact.derive_model``,
so the balls enclose that exact trajectory step for step (``tests/test_zoo.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb, ctx, fmpq
from tqdm import tqdm

from rwtoolkit.models import ArithmeticLoss

#: The working precision (bits) of a certified model trajectory: BASE_PREC + BITS_PER_STEP·steps, doubled
#: in the per-step part while a kept ball is not finite or wider than 2^-64 relative (naive interval GD
#: loses about 5 bits a step to the wrapping effect: measured on the two-layer model, N = 4).
BASE_PREC = 256
BITS_PER_STEP = 6
#: The largest precision tried before a run is reported as not certified.
MAX_MODEL_PREC = 2**15
#: Estimated seconds per counted ball multiply-add of one step (``ball_step_ops``): the largest of the
#: two-layer model's 1.9e-8 to 6.2e-8 measured at N = 4..6 on the 2-core development machine.
SECONDS_PER_BALL_OP = 6e-8
#: The longest certified run accepted without ``--steps`` being lowered (an hour at the estimate).
MAX_BALL_SECONDS = 3600.0


def to_ball(x: Any) -> arb:
    """An exact ball {x} of a rational (int, Fraction, fmpq, SymPy Rational, or its string); a ball as it is."""
    if isinstance(x, arb):
        return x
    q = Fraction(str(x)) if not isinstance(x, (int, Fraction)) else Fraction(x)
    return arb(fmpq(q.numerator, q.denominator))


def _sign(x: arb) -> int | None:
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0 if x == 0 else None


def ball_arithmetic() -> Any:
    """The ``rwtoolkit.models`` arithmetic of arb balls (object arrays; exp, log, sqrt and sign on one ball)."""
    from rwtoolkit.models import ObjectArithmetic

    return ObjectArithmetic(
        "arb",
        to_ball,
        exp=lambda v: v.exp(),
        sign=_sign,
        to_float=float,
        sqrt=lambda v: v.sqrt(),
        log=lambda v: v.log(),
    )


class BallLogLoss(ArithmeticLoss):
    """ℓ(z) = −log(z + ε) and ℓ'(z) = −1/(z + ε) on arb arrays: ``rwtoolkit.models.ArithmeticLoss`` in balls."""

    def __init__(self, eps: object) -> None:
        super().__init__("log", to_ball(eps), ball_arithmetic())


def ball_batch(task: Any, mu: object = 1) -> Any:
    """The task's population in balls, embedded with ``rwtoolkit.models.rational_positions(N, μ)`` (the positions
    every certified model trajectory uses): an ``rwtoolkit.models.Batch`` of exact balls."""
    from rwtoolkit.models import batch, rational_positions

    ar = ball_arithmetic()
    pop = task.population()
    P = ar.asarray(rational_positions(pop.N, Fraction(str(mu))))
    return batch(ar, pop.tokens, pop.labels, [to_ball(q) for q in pop.exact_probs()], pop.K, P)


def ball_step_ops(task: Any, model: Any, mu: object = 1) -> int:
    """Ball multiply-adds of one step (forward and backward), the basis of the time estimate."""
    from rwtoolkit.models import Sizes, rational_positions

    pop = task.population()
    n, K, N = pop.size, pop.K, pop.N
    M = int(rational_positions(N, Fraction(str(mu))).shape[0])
    D = K + M
    params = model.parameter_count(Sizes(K=K, M=M, N=N))
    return 3 * n * N * N * D * (1 + params // D)


def ball_estimate(task: Any, model: Any, steps: int, mu: object = 1) -> float:
    """Estimated seconds of ``ball_model_trajectory`` at its first precision (a ball operation costs about
    √(prec/256) times more at higher precision: measured 3.5× at 3856 bits)."""
    prec = BASE_PREC + BITS_PER_STEP * steps
    return SECONDS_PER_BALL_OP * ball_step_ops(task, model, mu) * (steps + 1) * max(1.0, (prec / 256) ** 0.5)


def _tight(state: Any) -> bool:
    """Every ball of θ and f finite and narrower than 2^-64 relative (or absolute near 0)."""
    values = [*state.f.ravel(), *(x for v in state.params.values() for x in np.asarray(v).ravel())]
    for x in values:
        if not x.is_finite() or x.rad() > 2.0**-64 * max(1.0, abs(float(x.mid()))):
            return False
    return True


def ball_model_trajectory(
    task: Any,
    model: Any,
    steps: int,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    keep: Callable[[int], bool] | None = None,
    progress: bool = False,
) -> tuple[dict[int, Any], int]:
    """θ(t) and the read-outs at t = 0..steps in balls, for the steps ``keep(t)`` selects (default all),
    and the precision that kept every ball tight (module constants); ValueError if none up to
    ``MAX_MODEL_PREC`` did.

    Returns ({t: ``rwtoolkit.models.Evaluation``}, bits). Refuses (ValueError, before any work) a run estimated
    above ``MAX_BALL_SECONDS``.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> states, bits = ball_model_trajectory(CircleWalk(3, 3, "1/2"), get_model("one_layer"), 1)
    >>> float(states[1].params["V"][0, 2]) > 0, bits
    (True, 262)
    """
    seconds = ball_estimate(task, model, steps, mu)
    if seconds > MAX_BALL_SECONDS:
        raise ValueError(
            f"steps={steps}: the certified run is estimated at {seconds:.0f} s, above {MAX_BALL_SECONDS:.0f} s; "
            "take fewer steps or a smaller task"
        )
    extra = BITS_PER_STEP * max(steps, 1)
    while BASE_PREC + extra <= MAX_MODEL_PREC:
        kept = _run(task, model, steps, eta, eps, mu, BASE_PREC + extra, keep, progress)
        if all(_tight(state) for state in kept.values()):
            return kept, BASE_PREC + extra
        extra *= 2
    raise ValueError(
        f"the certified run of {steps} steps lost every bit below {MAX_MODEL_PREC} bits of precision; "
        "take fewer steps"
    )


def _run(
    task: Any,
    model: Any,
    steps: int,
    eta: object,
    eps: object,
    mu: object,
    prec: int,
    keep: Callable[[int], bool] | None,
    progress: bool,
) -> dict[int, Any]:
    from rwtoolkit.models import gradient_steps

    previous = ctx.prec
    ctx.prec = prec
    try:
        ar = ball_arithmetic()
        data = ball_batch(task, mu)
        loss = BallLogLoss(eps)
        start = model.zeros(ar, data.inputs.sizes)
        kept: dict[int, Any] = {}
        bar = tqdm(
            total=steps + 1,
            desc=f"balls ({prec} bits)",
            unit="step",
            disable=not (progress and sys.stderr.isatty()),
        )
        for t, state in enumerate(gradient_steps(model, ar, start, data, loss, to_ball(eta), steps)):
            if keep is None or keep(t) or t == steps:
                kept[t] = state
            bar.update(1)
        bar.close()
        return kept
    finally:
        ctx.prec = previous
