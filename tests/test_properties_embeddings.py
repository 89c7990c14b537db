"""Property: from zero init the trajectory depends on the positional embeddings only through μ (docs/theory.md#reduction).

For a random task (circle walk or finite task), μ ∈ (0, 10], η, ε, loss, and two independently drawn
embeddings with ‖p_i‖² = μ (sine with M > N, onehot with M = N, random orthogonal with N ≤ M ≤ 64),
the faithful reference path (``fast=False``: the full W ∈ R^{(K+M)×(K+M)} and explicit X̃ = [X; P]
built from the float P) gives the same V(t), loss(t), mean attention(t) for t ≤ STEPS and the same
attention S and output f on every input at t = STEPS, for both embeddings and for the fast path
with the ideal Gram matrix μI (which sees nothing of P but μ).

Tolerance RTOL = 1e-12 relative to max(1, largest entry). The float P differ from exactly
orthogonal equal-norm columns by ~1e-16·√M relative (max |PᵀP − μI| ≲ 1e-14·μ at M ≤ 64), and that
rounding is all that can separate the runs; over STEPS = 3 steps it stays ~1e-14 even on the unstable
symmetric trajectory of p ∈ {0, 1} (growth ~10-20x per step, README "Gram choice"). Measured worst
case over the ci examples: 5e-16. A dependence on P beyond μ (e.g. a W-update along p_{N-1} instead
of p_N) moves the logits by O(μ·η) instead.
"""

from __future__ import annotations

import numpy as np
import torch
from conftest import assert_rel, numeric_run, scaled
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check.strategies import (
    LOSSES,
    circle_configs,
    embeddings,
    epsilons,
    etas,
    finite_tasks,
    mus,
)

RTOL = 1e-12
STEPS = 3


def _summary(run, tokens: torch.Tensor) -> dict[str, np.ndarray]:
    f, S, _ = run.net.evaluate(tokens)
    return {
        "V(t)": np.array([run.snapshots[t]["V"] for t in range(STEPS + 1)]),
        "loss(t)": np.array([h["train_loss"] for h in run.history]),
        "mean attention(t)": np.array([h["attention_profile"] for h in run.history]),
        "S per input": S.numpy(),
        "f per input": f.numpy(),
    }


@settings(max_examples=scaled(30))
@given(
    task_spec=st.one_of(circle_configs(N=(2, 7)), finite_tasks(inputs=(1, 6))),
    mu=mus(),
    eta=etas(),
    eps=epsilons(),
    loss=st.sampled_from(LOSSES),
    data=st.data(),
)
def test_trajectory_depends_on_embeddings_only_through_mu(task_spec, mu, eta, eps, loss, data) -> None:
    task = task_spec.task()
    K, N = task.K, task.N
    first = data.draw(embeddings(N, mu), label="first embedding")
    second = data.draw(embeddings(N, mu), label="second embedding")
    event(f"embeddings: {first.kind} vs {second.kind}")
    tokens = torch.as_tensor(task.population().tokens)
    snaps = tuple(range(STEPS + 1))
    ideal = _summary(numeric_run(task, first.model(K, N), STEPS, eta, eps, loss, snapshots=snaps), tokens)
    for emb in (first, second):
        run = numeric_run(task, emb.model(K, N), STEPS, eta, eps, loss, snapshots=snaps, fast=False)
        for key, value in _summary(run, tokens).items():
            assert_rel(value, ideal[key], RTOL, f"{key} with {emb} (reference path) vs the ideal Gram μI")
