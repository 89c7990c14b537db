"""Theorem 4.1: for p ∈ {0, 1}, N = rK+1, zero init, any loss and any learning rate(s), for every T:
accuracy = 1/K (exact ties broken to the smallest label), S_1(T) = … = S_{N−1}(T), and V(T) ∝ 1_{K×K}.

Symbolic proof for given (K, r, p), by induction on T: zero init is the Lemma D.3 point with α = 0; the
D.3 certificate's step (α1..α4, η_V, η_W, μ symbolic, ℓ' abstract) keeps the manifold. On the
manifold, for all α, every input has S_1 = … = S_{N−1} and f = α1(1 − S_N)·1 (all entries equal), so
every label ties, ŷ = 0, and the accuracy is P(y = 0) = 1/K, computed exactly from the population.
Cross-check: the exact trajectory of ``rwtoolkit.engines.exact.derive`` (log-loss, η = 1, ε = 1/10, μ = 1/2) for T
steps has accuracy exactly 1/K, equal token attention, V ∝ 1 and (``rwtoolkit.engines.exact.is_lemma_d3_form``)
the Lemma D.3 form at every step.
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import embed, gd_step, is_zero
from rwtoolkit.analyses.proofs.lemma_d3_invariant_manifold import (
    DELL,
    ETA_V,
    ETA_W,
    SQRT_MU,
    A,
    check,
    manifold_point,
)
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "4.1"
STATEMENT = (
    "p∈{0,1}, N=rK+1, zero init, any loss/η: for all T, accuracy = 1/K, S_1(T)=…=S_{N−1}(T), V(T) ∝ 1_{K×K}"
)


def on_manifold_consequences(K: int, r: int, p: int) -> list[str]:
    """Equal token attention, f ∝ 1 and accuracy 1/K at the generic manifold point (all α)."""
    N = r * K + 1
    pop = CircleWalk(K, N, p).population()
    V, W = manifold_point(K, N)
    step = gd_step(pop, V, W, lambda z: DELL(z), ETA_V, ETA_W, SQRT_MU)
    bad = []
    correct = sp.Integer(0)
    for n, (S, prob) in enumerate(zip(step.S, pop.exact_probs())):
        X, _ = embed(pop, n, SQRT_MU)
        f = V * X * S
        if not all(is_zero(S[i] - S[0]) for i in range(N - 1)):
            bad.append(f"input {n}: unequal token attention")
        if not all(is_zero(f[k] - f[0]) for k in range(K)):
            bad.append(f"input {n}: f not proportional to 1")
        if int(pop.labels[n]) == 0:  # all K scores tie, the smallest label 0 is predicted
            correct += prob
    if correct != sp.Rational(1, K):
        bad.append(f"accuracy {correct} != 1/K")
    return bad


def derive_cross_check(K: int, r: int, p: int, steps: int) -> list[str]:
    """The exact rwtoolkit.engines.exact trajectory (log-loss, η = 1, ε = 1/10, μ = 1/2) has the three properties."""
    from rwtoolkit.engines.exact import derive, is_lemma_d3_form

    traj = derive(CircleWalk(K, r * K + 1, p), steps=steps, eta=1, eps="1/10", mu="1/2", loss="log")
    bad = []
    for st in traj.states:
        if sp.simplify(st.accuracy - sp.Rational(1, K)) != 0:
            bad.append(f"t={st.t}: accuracy {st.accuracy}")
        if any(not is_zero(st.V[i, j] - st.V[0, 0]) for i in range(K) for j in range(K)):
            bad.append(f"t={st.t}: V not proportional to 1")
        if not is_lemma_d3_form(st):
            bad.append(f"t={st.t}: rwtoolkit.engines.exact.is_lemma_d3_form: {is_lemma_d3_form(st).detail}")
        att = st.mean_attention
        if any(not is_zero(att[i] - att[0]) for i in range(r * K)):
            bad.append(f"t={st.t}: unequal mean token attention")
    return bad


def certify(quick: bool = False) -> Certificate:
    """Induction (D.3 step + base + consequences) and a derive cross-check."""
    cases = [(3, 1), (4, 1)] if quick else [(3, 1), (4, 1), (5, 1), (6, 1), (3, 2), (4, 2)]
    steps = 2 if quick else 4
    derive_cases = [(3, 1)] if quick else [(3, 1), (4, 1)]  # exact exp-expressions grow fast with T
    failures: list[dict] = []
    if any(manifold_point(K, r * K + 1, (0, 0, 0, 0))[1] != sp.zeros(K + r * K + 1) for K, r in cases):
        failures.append({"base case": "zero init is not the alpha = 0 point"})
    for K, r in cases:
        for p in (0, 1):
            if (w := check(K, r, p)) is not None:
                failures.append({"induction step": w})
            if bad := on_manifold_consequences(K, r, p):
                failures.append({"K": K, "r": r, "p": p, "on-manifold": bad})
            if (K, r) in derive_cases and (bad := derive_cross_check(K, r, p, steps)):
                failures.append({"K": K, "r": r, "p": p, "derive": bad})
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"every T (induction), (K, r) ∈ {cases}, p ∈ {{0, 1}}, all η_V, η_W > 0 per step, μ > 0, any loss "
            f"(ℓ' abstract); rwtoolkit.engines.exact.derive cross-check for (K, r) ∈ {derive_cases}, T ≤ {steps} (log-loss, η=1, ε=1/10, μ=1/2)"
        ),
        method="symbolic proof",
        verdict=Verdict.REFUTED if failures else Verdict.PROVED,
        witness=failures[0] if failures else None,
        details={"alphas": [str(a) for a in A]},
    )
