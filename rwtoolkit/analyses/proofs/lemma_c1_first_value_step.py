"""Lemma C.1 (first step from zero init, any loss): S(0) is uniform (1/N each), W(1) = 0 and
V(1) = −η ℓ'(0) E[e_y (X·1/N)ᵀ]; for the log-loss V(1) = (η/(εNK)) Σ_{i=1}^{N−1} (Πᵀ)^{N−i}.

Exact verification over a finite range with p, η, ε symbolic (all values) and ℓ' abstract:
(1) ``_exact_gd`` (full coordinates, Lemma B.1 gradients summed over the population) gives uniform S(0),
    W(1) = 0 and V(1) = −η ℓ'(0) E[e_y (X1/N)ᵀ], the expectation summed independently over the walks;
(2) for the log-loss ℓ'(0) = −1/ε and E[e_y x_iᵀ] = (1/K)(Πᵀ)^{N−i} (Markov property: P(s_i = a, y = b) =
    (1/K)[Π^{N−i}]_{ab}); the closed form is built from powers of ``CircleWalk.transition_matrix``;
(3) ``rwtoolkit.engines.exact.derive`` (reduced coordinates, rotation symmetry) gives the same V(1) for loss="any"
    and loss="log", and w_tok(1) = 0, c(1) = 0.
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import embed, gd_step
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk, symbol

ID = "C.1"
STATEMENT = (
    "S(0) uniform, W(1) = 0, V(1) = −ηℓ'(0)E[e_y(X1/N)ᵀ]; log-loss: V(1) = (η/(εNK)) Σ_{i=1}^{N−1} (Πᵀ)^{N−i}"
)

ETA, EPS = sp.Symbol("eta", positive=True), sp.Symbol("eps", positive=True)
DELL = sp.Function("dell")


def closed_form(K: int, N: int, p: sp.Expr, eta: sp.Expr = ETA, eps: sp.Expr = EPS) -> sp.Matrix:
    """(η/(εNK)) Σ_{i=1}^{N−1} (Πᵀ)^{N−i}: V(1) of Lemma C.1 for the log-loss."""
    PiT = CircleWalk(K, N, p).transition_matrix().T
    return (eta / (eps * N * K) * sum((PiT ** (N - i) for i in range(1, N)), sp.zeros(K, K))).expand()


def mean_token_outer(K: int, N: int, p: sp.Expr) -> sp.Matrix:
    """E[e_y (X·1/N)ᵀ] summed over the exact population."""
    pop = CircleWalk(K, N, p).population()
    out = sp.zeros(K, K)
    for n, prob in enumerate(pop.exact_probs()):
        X, _ = embed(pop, n, sp.Integer(1))
        ey = sp.zeros(K, 1)
        ey[int(pop.labels[n])] = 1
        out += prob * ey * (X * sp.ones(N, 1) / N).T
    return out.expand()


def check(K: int, N: int, use_derive: bool = True) -> list[dict]:
    """All three parts for one (K, N); an empty list means they hold."""
    p = symbol("p")
    bad: list[dict] = []
    pop = CircleWalk(K, N, p).population()
    zero_V, zero_W = sp.zeros(K, K), sp.zeros(K + N, K + N)
    step = gd_step(pop, zero_V, zero_W, lambda z: DELL(z), ETA, ETA, sp.Symbol("sqrt_mu", positive=True))
    expected_any = (-ETA * DELL(0) * mean_token_outer(K, N, p)).expand()
    if any(S[j] != sp.Rational(1, N) for S in step.S for j in range(N)):
        bad.append({"K": K, "N": N, "part": "S(0) not uniform"})
    if step.W != zero_W:
        bad.append({"K": K, "N": N, "part": "W(1) != 0"})
    if (step.V.expand() - expected_any) != sp.zeros(K, K):
        bad.append({"K": K, "N": N, "part": "V(1) != -eta l'(0) E[e_y (X 1/N)^T]"})
    log_v = (expected_any.subs(DELL(0), -1 / EPS)).expand()
    if (log_v - closed_form(K, N, p)).expand() != sp.zeros(K, K):
        bad.append({"K": K, "N": N, "part": "log-loss closed form"})
    if use_derive:
        from rwtoolkit.engines.exact import derive

        for loss, want in (("any", expected_any), ("log", closed_form(K, N, p))):
            st = derive(CircleWalk(K, N, p), steps=1, eta="eta", eps="eps", loss=loss).states[1]
            got = st.V.subs({symbol("eta"): ETA, symbol("eps"): EPS})
            if loss == "any":
                got = got.replace(
                    lambda e: isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ == "dell",
                    lambda e: DELL(*e.args),
                )
            if (got - want).applyfunc(lambda e: sp.simplify(e)) != sp.zeros(K, K):
                bad.append({"K": K, "N": N, "part": f"rwtoolkit.engines.exact.derive V(1), loss={loss}"})
            if any(v != 0 for v in list(st.w_tok) + list(st.c)):
                bad.append({"K": K, "N": N, "part": f"rwtoolkit.engines.exact.derive W(1) != 0, loss={loss}"})
    return bad


def certify(quick: bool = False) -> Certificate:
    """K = 3..4, N = 2..4 quick; K = 3..6, N = 2..6 full (p, η, ε symbolic; ℓ' abstract)."""
    ks, ns = (range(3, 5), range(2, 5)) if quick else (range(3, 7), range(2, 7))
    failures = [f for K in ks for N in ns for f in check(K, N)]
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"K ∈ {list(ks)}, N ∈ {list(ns)}; p, η, ε symbolic (all values); ℓ' abstract for the any-loss form",
        method="exact verification over a finite range",
        verdict=Verdict.REFUTED if failures else Verdict.HOLDS,
        witness=failures[0] if failures else None,
    )
