"""Theorem 4.1's manifold is linearly unstable at the first step, for every η, μ > 0.

Along the exact trajectory from zero init (p ∈ {0, 1}, N = rK+1), the GD map linearised in the reduced
coordinates θ = (V, w_tok, c), J_t = I − η D ∇²L(θ*(t)) (``rwtoolkit.analyses.stability.exact_jacobians``, log-loss,
ε = 1/10), is computed with η and μ as symbols. Two facts are proved for each (K, N, p) in scope:

1. at t = 0 and t = 1, J_t maps the tangent space of Lemma D.3's manifold into itself (the leak
   Bᵀ J_t T, B a rational basis of the normal space, simplifies to the zero matrix), so the normal
   component of a perturbation evolves by the normal block C_t alone;
2. at t = 0 the characteristic polynomial of C_0 factors over Q(η, μ), and one of its roots is
   1 + c with c > 0 for all positive η, μ (SymPy decides the sign with η, μ declared positive): a
   normal eigenvalue above 1, so the manifold repels at the first step whatever the learning rate and
   the embedding scale.
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "4.1 (linearised)"
STATEMENT = (
    "p∈{0,1}, N=rK+1: the linearised GD map keeps Lemma D.3's tangent space at t=0,1, and at t=0 its normal "
    "block has an eigenvalue 1+c, c>0, for every η, μ > 0"
)


def check(K: int, N: int, p: int) -> tuple[dict | None, list[str]]:
    """(witness or None, the roots above 1 of C_0's characteristic polynomial as strings)."""
    from rwtoolkit.analyses.stability import exact_jacobians

    jacs = exact_jacobians(CircleWalk(K, N, p), steps=2, eta="eta", mu="mu")
    for jac in jacs:
        if not jac.leak.is_zero_matrix:
            return {"K": K, "N": N, "p": p, "t": jac.t, "leak": str(jac.leak)}, []
    C0 = jacs[0].C
    names = {s.name for s in C0.free_symbols}
    if names != {"eta", "mu"}:
        return {"K": K, "N": N, "p": p, "free_symbols": sorted(names)}, []
    eta, mu = sp.Symbol("eta", positive=True), sp.Symbol("mu", positive=True)
    positive = {s: {"eta": eta, "mu": mu}[s.name] for s in C0.free_symbols}
    lam = sp.Symbol("lam")
    poly = sp.factor(C0.charpoly(lam).as_expr().xreplace(positive))
    above = []
    for factor, _ in sp.factor_list(poly)[1]:
        for root in sp.solve(factor, lam):
            if sp.simplify(root - 1).is_positive:
                above.append(str(root))
    if not above:
        return {"K": K, "N": N, "p": p, "charpoly": str(poly), "reason": "no root provably above 1"}, []
    return None, above


def certify(quick: bool = False) -> Certificate:
    """(K, N, p) = (3, 4, 0) quick; also (3, 4, 1) and (4, 5, 1) full."""
    cases = [(3, 4, 0)] if quick else [(3, 4, 0), (3, 4, 1), (4, 5, 1)]
    roots: dict[str, list[str]] = {}
    for K, N, p in cases:
        witness, above = check(K, N, p)
        if witness is not None:
            return Certificate(
                id=ID,
                statement=STATEMENT,
                scope=f"(K, N, p) ∈ {cases}",
                method="symbolic proof",
                verdict=Verdict.REFUTED,
                witness=witness,
            )
        roots[f"K={K}, N={N}, p={p}"] = above
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"(K, N, p) ∈ {cases}; t ∈ {{0, 1}}; η, μ symbolic (positive); log-loss, ε = 1/10; "
            "reduced coordinates (docs/stability.md: the other directions of W are inert)"
        ),
        method="symbolic proof",
        verdict=Verdict.PROVED,
        witness={"normal eigenvalues above 1 at t = 0": roots},
    )
