"""The paper's model's fast paths equal its one definition (rwtoolkit.models.OneLayer, full V and W) on the same inputs.

Each engine below keeps a hand-tuned form of the paper's model: the reduced torch model of ``rwtoolkit.engines.numeric.train``
(``FastModel``: V, w_tok, q), the batched engine (``train_batched``), and the certified ball engine of
``rwtoolkit.engines.balls`` (symmetry-preserving reduced coordinates). Each is run on a task's whole population and
compared, step by step, with ``rwtoolkit.models.descend`` of the full-parameter model: the float engines in float64
at ``RTOL`` relative (measured ≤ 6.1e-16 over these runs), the ball engine by enclosure (every generic
float64 value lies in the certified ball widened by the same ``RTOL``).
The positions are ``rational_positions(N, 2)``: entries 0 and ±1, so P and PᵀP = 2I are exact in float64
and every engine sees the same P. The exact engine's equality is tests/test_models.py.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from rwtoolkit.engines.balls import WalkSet, run_trajectory
from rwtoolkit.engines.numeric import (
    ModelConfig,
    TensorLoss,
    TorchArithmetic,
    TrainConfig,
    train,
    train_batched,
)
from rwtoolkit.models import batch, descend, get_model, rational_positions
from rwtoolkit.tasks import CircleWalk, first_of_two_task

RTOL = 1e-13  # measured max relative difference 6.1e-16 over the float runs below: margin ~160
MU = 2
STEPS = 6


def _generic(task, steps=STEPS):
    """The full-parameter trajectory in float64 torch: V(t) and w(t) = W(t) x̃_N."""
    pop = task.population()
    P = np.asarray(rational_positions(pop.N, MU), dtype=float)
    ar = TorchArithmetic(torch.float64)
    data = batch(ar, pop.tokens, pop.labels, [float(w) for w in pop.exact_probs()], pop.K, ar.asarray(P))
    model = get_model("one_layer")
    states = descend(model, ar, model.zeros(ar, data.inputs.sizes), data, TensorLoss("log", 0.1), 1.0, steps)
    xN = data.inputs.xN
    return P, [(s.params["V"].numpy(), (s.params["W"] @ xN).numpy(), s) for s in states]


def _close(got, expected, what):
    scale = max(1.0, float(np.abs(expected).max()))
    err = float(np.abs(np.asarray(got, dtype=float) - expected).max())
    assert err <= RTOL * scale, f"{what}: {err:.3g} > {RTOL * scale:.3g}"


@pytest.mark.parametrize(
    "task", [CircleWalk(4, 5, "3/10"), CircleWalk(3, 4, "1"), first_of_two_task(3, "1/3")], ids=str
)
def test_reduced_torch_model_equals_the_full_model(task):
    P, generic = _generic(task)
    model = ModelConfig(K=task.population().K, N=task.population().N, M=P.shape[0], pos=P, mu=MU)
    result = train(
        task, model, TrainConfig(steps=STEPS, population=True, record_params=True, eps=0.1), progress=False
    )
    for t, (V, w, _) in enumerate(generic):
        _close(result.params[t]["V"], V, f"V({t})")
        _close(result.params[t]["w"], w, f"W x̃_N ({t})")


def test_batched_engine_equals_the_full_model():
    tasks = [CircleWalk(4, 5, p) for p in ("3/10", "1/2", "7/10")]
    P = np.asarray(rational_positions(5, MU), dtype=float)
    model = ModelConfig(K=4, N=5, M=P.shape[0], pos=P, mu=MU)
    cfg = TrainConfig(steps=STEPS, population=True, eps=0.1)
    results = train_batched([(task, model, cfg) for task in tasks])
    for task, result in zip(tasks, results, strict=True):
        _, generic = _generic(task)
        _close(result.final["V"], generic[-1][0], f"V({STEPS}) of {task}")


@pytest.mark.parametrize("task", [CircleWalk(4, 5, "3/10"), first_of_two_task(3, "1/3")], ids=str)
def test_certified_engine_encloses_the_full_model(task):
    from flint import arb, fmpq

    from rwtoolkit.engines import select

    pop = task.population()
    _, generic = _generic(task, steps=4)
    walks = WalkSet.build(pop.tokens, pop.labels, [Fraction(str(w)) for w in pop.exact_probs()], pop.K)
    model = get_model("one_layer")
    reduced_engine = select("one_layer", "balls", "zero")
    assert reduced_engine.load() is run_trajectory
    # one signature: the reduced engine and the generic ball engine on the same walks, μ, η, ε and precision
    runs = [
        engine.load()(task, model, 4, 1, "1/10", MU, prec=128, walks=(walks, walks))
        for engine in (reduced_engine, select("one_layer", "balls", "zero", specialise=False))
    ]
    traj, full = runs
    assert traj.stopped is None and full.stopped is None
    assert [r.step for r in traj.records] == [r.step for r in full.records] == list(range(5))
    K = pop.K
    P_exact = np.vectorize(lambda q: fmpq(q.numerator, q.denominator), otypes=[object])(
        rational_positions(pop.N, MU)
    )
    P = np.asarray(rational_positions(pop.N, MU), dtype=float)
    for record, balls, (V, w, _) in zip(traj.records, full.records, generic, strict=True):
        c = (P.T @ w[K:]) / MU
        view = record.reduced
        pairs = [
            *zip((x for row in view.V for x in row), V.flatten(), strict=True),
            *zip(view.w_tok, w[:K], strict=True),
            *zip(view.c, c, strict=True),
        ]
        for ball, value in pairs:  # the float64 full model lies in the reduced balls (widened by RTOL)
            slack = float(ball.rad()) + RTOL * max(1.0, abs(value))
            assert abs(float(ball.mid()) - value) <= slack, (record.step, ball, value)
        # the full model in balls: its V and W x̃_N = [w_tok; P c] overlap the reduced engine's balls
        w_full = balls.state.params["W"] @ np.array([0] * K + [arb(q) for q in P_exact[:, -1]], dtype=object)
        w_reduced = [*view.w_tok, *(P_exact @ np.array(view.c, dtype=object))]
        V_reduced = [x for row in view.V for x in row]
        assert all(a.overlaps(b) for a, b in zip(V_reduced, balls.state.params["V"].ravel(), strict=True))
        assert all(a.overlaps(b) for a, b in zip(w_reduced, w_full, strict=True)), record.step
        # the same read-outs: training loss, mean attention and predictions
        assert record.train_loss.overlaps(balls.train_loss), record.step
        assert all(
            a.overlaps(b)
            for a, b in zip(
                record.evaluation.attention_profile, balls.evaluation.attention_profile, strict=True
            )
        ), record.step
        assert record.evaluation.predictions == balls.evaluation.predictions, record.step
