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
    result = train_batched([(task, model, cfg) for task in tasks])
    for task, final in zip(tasks, result.final, strict=True):
        _, generic = _generic(task)
        _close(final["V"], generic[-1][0], f"V({STEPS}) of {task}")


@pytest.mark.parametrize("task", [CircleWalk(4, 5, "3/10"), first_of_two_task(3, "1/3")], ids=str)
def test_certified_engine_encloses_the_full_model(task):
    pop = task.population()
    _, generic = _generic(task, steps=4)
    walks = WalkSet.build(pop.tokens, pop.labels, [Fraction(str(w)) for w in pop.exact_probs()], pop.K)
    traj = run_trajectory(
        walks, walks, mu=Fraction(MU), eta=Fraction(1), eps=Fraction(1, 10), steps=4, prec=128
    )
    assert traj.stopped is None
    K = pop.K
    for record, (V, w, _) in zip(traj.records, generic, strict=True):
        c = (np.asarray(rational_positions(pop.N, MU), dtype=float).T @ w[K:]) / MU
        pairs = [
            *zip((x for row in record.V for x in row), V.flatten(), strict=True),
            *zip(record.w_tok, w[:K], strict=True),
            *zip(record.c, c, strict=True),
        ]
        for ball, value in pairs:
            slack = float(ball.rad()) + RTOL * max(1.0, abs(value))
            assert abs(float(ball.mid()) - value) <= slack, (record.step, ball, value)
