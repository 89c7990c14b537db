"""Certified trajectories of any registered model: full-batch GD on the exact population, every value a ball.

The generic engine of ``rwtoolkit.models`` (``descend``: the model's one forward definition, differentiated by
the tape) run in python-flint ``arb`` balls: every entry of θ(t), S, f and the loss is a ball that
contains the exact real value. This is how claims about late times (hundreds of steps, where exact
arithmetic grows without bound) are decided: a comparison is decided when its balls do not overlap,
and undecided otherwise (raise the precision). The positions are ``rwtoolkit.models.rational_positions(N, μ)``
(exact rationals), the start is zero (or the model's own, ``init="own"``: a sequence program's float64 start as
the exact rationals it holds), the loss is ℓ(z) = −log(z + ε), or for a model with next-token logits its
cross-entropy objective (``rwtoolkit.models.CrossEntropy``), as in ``rwtoolkit.engines.exact.derive_model``,
so the balls enclose that exact trajectory step for step (``tests/test_zoo.py``, tests/test_sequence_model.py).

A ReLU whose input ball straddles 0 has no certified derivative: the run ends there, inconclusive
(``BallTrajectory.stopped`` says "inconclusive at step t: a ReLU input straddles 0 (entry ...)"), with the
certified steps before it kept; never a pass and never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from flint import arb, ctx, fmpq
from tqdm import tqdm

from rwtoolkit.engines.balls._balls import ball_interval
from rwtoolkit.engines.balls._engine import Undecided
from rwtoolkit.engines.balls._trajectory import (
    BASE_PREC,
    BITS_PER_STEP,
    BallTrajectory,
    Readout,
    StepRecord,
    Walks,
    automatic_precision,
    bits_per_step,
    predict,
    rational,
)
from rwtoolkit.engines.balls._walks import WalkSet
from rwtoolkit.models import ArithmeticLoss

#: Estimated seconds per counted ball multiply-add of one step (``ball_step_ops``): the largest of the
#: two-layer model's 1.9e-8 to 6.2e-8 measured at N = 4..6 on the 2-core development machine.
SECONDS_PER_BALL_OP = 6e-8
#: A sequence program's counted multiply-add (``rwtoolkit.models.forward_operations``) costs this many of those:
#: its tape records many small arrays. Measured 3.3-21 (30 steps at 512 bits on binary_markov N = 3 and
#: icl_markov S = 2, N = 5, from zero and from the program's own start) over tests/test_sequence_model.py's
#: one-layer program and examples/nanogpt_attention.py's one_layer, two_layer and with_mlp (12-22 for the first
#: alone, from its own start); 8 keeps every one within 3x. benchmarks/traced_models.py compares 200-step runs.
SEQUENCE_OP_WEIGHT = 8.0
#: A model with next-token logits that stays at zero (``rwtoolkit.models.stays_at_zero``), from zero: a step
#: costs this fraction of its counted operations' estimate (every ball an exact 0 or a rational). Measured with
#: examples/nanogpt_attention.py's one_layer, 200 steps on icl_markov S = 2, N = 5 and binary_markov (1/3, 3/5)
#: N = 5: 0.015-0.020 s a step (benchmarks/traced_models.py, 2026-12-03, load average 1.7-2.8), 0.021-0.029 s
#: before, against 0.055 s counted; 0.4 keeps each within 3x.
STUCK_FACTOR = 0.4
#: The longest certified run accepted without ``--steps`` being lowered (an hour at the estimate).
MAX_BALL_SECONDS = 3600.0


def to_ball(x: Any) -> arb:
    """An exact ball {x} of a rational (int, Fraction, fmpq, SymPy Rational, or its string); a ball as it is."""
    if isinstance(x, arb):
        return x
    q = rational(x)
    return arb(fmpq(q.numerator, q.denominator))


def _sign(x: arb) -> int | None:
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0 if x == 0 else None


def ball_arithmetic() -> Any:
    """The ``rwtoolkit.models`` arithmetic of arb balls (object arrays; exp, log, sqrt, erf and sign on one ball;
    π at the working precision). A ReLU input whose ball straddles 0 raises ``Undecided`` (the ball engines'
    typed inconclusive outcome), naming the entry and its ball.

    >>> import numpy as np
    >>> ar = ball_arithmetic()
    >>> ar.positive(np.array([arb(2), arb(0), arb(-1)], dtype=object)).tolist()
    [1.00000000000000, 0, 0]
    >>> ar.positive(np.array([[arb(1), arb("0 +/- 1e-30")]], dtype=object))
    Traceback (most recent call last):
    rwtoolkit.engines.balls._engine.Undecided: a ReLU input straddles 0 (entry (0, 1) ∈ [-1.01e-30, 1.01e-30])
    """
    from rwtoolkit.models import ObjectArithmetic

    class BallArithmetic(ObjectArithmetic):
        def positive(self, a: Any) -> Any:
            one, zero = arb(1), arb(0)
            out = np.empty(np.shape(a), dtype=object)
            for index, x in np.ndenumerate(np.asarray(a, dtype=object)):
                s = _sign(x)
                if s is None:
                    raise Undecided(
                        f"a ReLU input straddles 0 (entry {index} ∈ {ball_interval(x)})",
                        settled=_tight(x),
                    )
                out[index] = one if s > 0 else zero
            return out

    return BallArithmetic(
        "arb",
        to_ball,
        exp=lambda v: v.exp(),
        sign=_sign,
        to_float=float,
        # √ of an entry ≥ 0 (the protocol's domain): a ball that straddles 0 (a square g·g near 0, Adam's v)
        # is cut to its part ≥ 0 first; a ball ≥ 0 is unchanged
        sqrt=lambda v: v.nonnegative_part().sqrt(),
        log=lambda v: v.log(),
        erf=lambda v: v.erf(),
        pi=arb.pi,
    )


def _tight(x: arb) -> bool:
    """A ball narrower than 2^-64 relative (absolute below 1): more precision is not what it lacks."""
    return bool(x.is_finite() and float(x.rad()) <= 2.0**-64 * max(1.0, abs(float(x.mid()))))


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
    P = ar.asarray(rational_positions(pop.N, rational(mu)))
    return batch(ar, pop.tokens, pop.labels, [to_ball(q) for q in pop.exact_probs()], pop.K, P)


def ball_step_ops(task: Any, model: Any, mu: object = 1, inputs: int | None = None) -> int:
    """Ball multiply-adds of one step (forward and backward) on ``inputs`` inputs (default the task's
    population), the basis of the time estimate: for a model with next-token logits, three forward passes of
    its program per input, counted by ``rwtoolkit.models.forward_operations`` and weighted by
    ``SEQUENCE_OP_WEIGHT``."""
    from rwtoolkit.models import Sizes, forward_operations, rational_positions

    K, N = task.K, task.N
    n = task.population_size() if inputs is None else inputs
    M = int(rational_positions(N, rational(mu)).shape[0])
    if model.TOKEN_LOGITS:
        return int(SEQUENCE_OP_WEIGHT * 3 * n * forward_operations(model, Sizes(K=K, M=M, N=N)))
    D = K + M
    params = model.parameter_count(Sizes(K=K, M=M, N=N))
    return 3 * n * N * N * D * (1 + params // D)


def ball_estimate(
    task: Any,
    model: Any,
    steps: int,
    mu: object = 1,
    prec: int | None = None,
    inputs: int | None = None,
    init: str = "zero",
) -> float:
    """Estimated seconds of ``ball_model_trajectory`` at ``prec`` bits (default its first automatic precision)
    on ``inputs`` inputs (default the task's population); a ball operation costs about √(prec/256) times
    more at higher precision (measured 3.5× at 3856 bits). A model with next-token logits from zero computes
    mostly with exact balls (its values at zero, 0 and 1/n, are exact; bias-free layers stay at 0), whose cost
    does not grow with the precision: that run's estimate has no precision factor (measured: 200 steps of
    examples/nanogpt_attention.py's one_layer took 0.029 s a step at 1456 bits, 5 steps 0.021 s a step at 286);
    where every parameter stays at 0 (``rwtoolkit.models.stays_at_zero``) every ball is an exact 0 or a rational
    of the objective, and a step costs ``STUCK_FACTOR`` of the count (benchmarks/traced_models.py)."""
    bits = BASE_PREC + BITS_PER_STEP * steps if prec is None else prec
    grows = not (model.TOKEN_LOGITS and init == "zero")
    factor = 1.0
    if not grows:
        from rwtoolkit.models import stays_at_zero

        factor = STUCK_FACTOR if stays_at_zero(model, task.population()) else 1.0
    return (
        SECONDS_PER_BALL_OP
        * ball_step_ops(task, model, mu, inputs)
        * (steps + 1)
        * (max(1.0, (bits / 256) ** 0.5) if grows else factor)
    )


def ball_model_trajectory(
    task: Any,
    model: Any,
    steps: int,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    *,
    prec: int | None = None,
    walks: Walks | None = None,
    keep: Callable[[int], bool] | None = None,
    progress: bool = False,
    init: str = "zero",
    objective: str | None = None,
    optimizer: Any = None,
    schedule: Any = None,
    stages: Any = None,
) -> BallTrajectory:
    """The generic ball engine: GD of any model of record from zero, θ(t) and the read-outs in balls.

    The one signature of the ball engines (``_trajectory.py``): the training and evaluation sets are
    ``walks`` (default the task's population, in its order, both), the positions
    ``rwtoolkit.models.rational_positions(N, μ)``, ``prec`` bits (None: ``automatic_precision``, ValueError if
    no precision up to ``MAX_MODEL_PREC`` keeps every ball tight), recorded at the steps ``keep`` selects
    (default all) and the last. Each record's ``state`` is a ``rwtoolkit.models.Evaluation`` on the training
    set. ``init``: ``"zero"``, or ``"own"``, the model's own start (``Model.initial``) as exact balls;
    ``objective``: the cross-entropy of a model with next-token logits (None: its default, ``"lm"``; refused for
    another model, which trains on −log(z + ε)); ``optimizer``: the update rule (``rwtoolkit.models.Optimizer``,
    momentum, Nesterov, Adam, AdamW; None: plain GD), its hyperparameters exact balls; ``schedule`` (t ↦ the
    factor of every rate, ``rwtoolkit.models.Schedule``) and ``stages`` ((steps, parameter names) in order): as
    ``rwtoolkit.models.gradient_steps`` reads them. Refuses (ValueError, before any work) a run estimated above
    ``MAX_BALL_SECONDS``, another start or objective. A ReLU input the balls cannot sign ends the run
    inconclusive at that step (``BallTrajectory.stopped``, ``stopped_at``; ``outcome`` is inconclusive).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> traj = ball_model_trajectory(CircleWalk(3, 3, "1/2"), get_model("one_layer"), 1)
    >>> float(traj.records[1].state.params["V"][0, 2]) > 0, traj.prec, traj.symmetry
    (True, 262, None)
    """
    from rwtoolkit.models import objective_name

    name = objective_name(model, objective)
    if init not in BALL_INITS:
        raise ValueError(
            f"init={init!r} is not one of {', '.join(BALL_INITS)} (the generic ball engine's starts)"
        )
    n = None if walks is None else walks[0].size + (0 if walks[1] is walks[0] else walks[1].size)
    per_step = bits_per_step(optimizer)
    first = BASE_PREC + per_step * steps if prec is None else prec
    seconds = ball_estimate(task, model, steps, mu, first, n, init)
    if seconds > MAX_BALL_SECONDS:
        raise ValueError(
            f"steps={steps}: the certified run is estimated at {seconds:.0f} s, above {MAX_BALL_SECONDS:.0f} s; "
            "take fewer steps or a smaller task"
        )

    def run(bits: int) -> BallTrajectory:
        return _run(
            task,
            model,
            steps,
            eta,
            eps,
            mu,
            bits,
            walks,
            keep,
            progress,
            init,
            name,
            optimizer,
            schedule,
            stages,
        )

    traj = automatic_precision(run, steps, per_step) if prec is None else run(prec)
    traj.model = model
    return traj


#: The starts of the generic ball engine: zero, and the model's own (``Model.initial``), both exact.
BALL_INITS = ("zero", "own")


def _start(model: Any, ar: Any, sizes: Any, init: str) -> dict[str, Any]:
    """θ(0) in balls: zero, or the model's own start (each value the exact ball of the rational it is)."""
    if init == "zero":
        return dict(model.zeros(ar, sizes))
    return dict(model.own_start(ar, sizes, "zero"))


def _batch(ar: Any, walks: WalkSet, P: Any) -> Any:
    from rwtoolkit.models import batch

    return batch(ar, walks.tokens, walks.labels, [to_ball(w) for w in walks.weights], walks.K, P)


def _readout(state: Any, weights: Any) -> Readout:
    """Predictions, mean attention Σ_i w_i S_ij and Σ_i w_i (S_ij - S_i1) (token positions) of one evaluation."""
    if state.S is None:  # a sequence model: no attention over the N positions
        return Readout([predict(list(row)) for row in state.f], [], [])
    S, n = state.S, state.S.shape[0]
    zero = arb(0)
    profile = [sum((weights[i] * S[i, j] for i in range(n)), zero) for j in range(S.shape[1])]
    diffs = [zero] + [
        sum((weights[i] * (S[i, j] - S[i, 0]) for i in range(n)), zero) for j in range(1, S.shape[1] - 1)
    ]
    return Readout([predict(list(state.f[i])) for i in range(n)], profile, diffs)


def _run(
    task: Any,
    model: Any,
    steps: int,
    eta: object,
    eps: object,
    mu: object,
    prec: int,
    walks: Walks | None,
    keep: Callable[[int], bool] | None,
    progress: bool,
    init: str,
    objective: str | None,
    optimizer: Any = None,
    schedule: Any = None,
    stages: Any = None,
) -> BallTrajectory:
    from rwtoolkit.models import CrossEntropy, Optimizer, evaluate, gradient_steps, rational_positions

    previous = ctx.prec
    ctx.prec = prec
    try:
        ar = ball_arithmetic()
        if walks is None:
            data = evaluation = ball_batch(task, mu)
        else:
            P = ar.asarray(rational_positions(task.N, rational(mu)))
            data = _batch(ar, walks[0], P)
            evaluation = data if walks[1] is walks[0] else _batch(ar, walks[1], P)
        loss = BallLogLoss(eps) if objective is None else CrossEntropy(objective)
        start = _start(model, ar, data.inputs.sizes, init)
        traj = BallTrajectory(prec, rational(mu))
        bar = tqdm(
            total=steps + 1,
            desc=f"balls ({prec} bits)",
            unit="step",
            disable=not (progress and sys.stderr.isatty()),
        )
        done = 0  # steps whose state (and, before the last, gradient) is certified
        try:
            for t, state in enumerate(
                gradient_steps(
                    model,
                    ar,
                    start,
                    data,
                    loss,
                    to_ball(eta),
                    steps,
                    optimizer or Optimizer(),
                    schedule,
                    stages,
                )
            ):
                if keep is None or keep(t) or t == steps:
                    train = _readout(state, data.weights)
                    if evaluation is data:
                        test = train
                    else:
                        test = _readout(
                            evaluate(model, ar, state.params, evaluation, loss, False), evaluation.weights
                        )
                    traj.records.append(StepRecord(t, state.loss, test, train, state=state))
                done = t + 1
                bar.update(1)
        except Undecided as why:  # θ(done) is not certified: its evaluation or its gradient is undecided
            traj.stopped = f"inconclusive at step {done}: {why} at {prec} bits"
            traj.stopped_at, traj.settled = done, why.settled
        finally:
            bar.close()
        return traj
    finally:
        ctx.prec = previous
