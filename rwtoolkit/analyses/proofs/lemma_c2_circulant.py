"""Lemma C.2: V(1) is circulant: [V(1)]_{i1,j1} = [V(1)]_{i2,j2} whenever i1 − j1 ≡ i2 − j2 (mod K).

This is the corrected form of docs/theory.md#statements (the paper says "Toeplitz" and its printed indices have a typo; the
printed indices are not reproduced there, so they are not checked here). "Toeplitz" alone is
weaker: V(1) is also constant along the wrapped diagonals, e.g. [V]_{1,K} = [V]_{2,1}.
Proof for all K, N, p, η, ε and any loss: V(1) = −η ℓ'(0) E[e_y(X1/N)ᵀ] = −η ℓ'(0)/(NK) Σ_{r=1}^{N−1} (Πᵀ)^r
(Lemma C.1 and the Markov property), a polynomial in the circulant Πᵀ, hence circulant. Verified
exactly on V(1) from the exact population step (p, η symbolic, ℓ' abstract) for the declared range.
``rwtoolkit.engines.exact.is_circulant`` on ``rwtoolkit.engines.exact.derive``'s V(1) is cross-checked on the same range.
The transposed reading [V]_{i1,j1} = [V]_{i2,j2} when i1 + j1 ≡ i2 + j2 (Hankel) is false: witness recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import gd_step
from rwtoolkit.analyses.proofs.lemma_c1_first_value_step import DELL, ETA
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk, symbol

ID = "C.2"
STATEMENT = "V(1) is circulant: [V]_{i1,j1} = [V]_{i2,j2} whenever i1 − j1 ≡ i2 − j2 (mod K) (corrected form; any loss)"


def first_value_step(K: int, N: int, p: sp.Expr) -> sp.Matrix:
    """V(1) from zero init for an abstract loss (ℓ' = dell), exact population step."""
    pop = CircleWalk(K, N, p).population()
    step = gd_step(pop, sp.zeros(K, K), sp.zeros(K + N, K + N), lambda z: DELL(z), ETA, ETA, sp.Integer(1))
    return step.V.expand()


def violations(
    V: sp.Matrix, rule: Callable[[int, int, int, int, int], bool]
) -> list[tuple[int, int, int, int]]:
    """Index pairs ((i1, j1), (i2, j2)) related by ``rule`` where the entries differ."""
    K = V.shape[0]
    idx = [(i, j) for i in range(K) for j in range(K)]
    return [
        (a, b, c, d)
        for (a, b) in idx
        for (c, d) in idx
        if rule(a, b, c, d, K) and sp.expand(V[a, b] - V[c, d]) != 0
    ]


def circulant_rule(i1: int, j1: int, i2: int, j2: int, K: int) -> bool:
    return (i1 - j1 - (i2 - j2)) % K == 0


def hankel_rule(i1: int, j1: int, i2: int, j2: int, K: int) -> bool:
    return (i1 + j1 - (i2 + j2)) % K == 0


def certify(quick: bool = False) -> Certificate:
    """K = 3..4, N = 2..4 quick; K = 3..6, N = 2..6 full; p symbolic."""
    ks, ns = (range(3, 5), range(2, 5)) if quick else (range(3, 7), range(2, 7))
    p = symbol("p")
    failures = []
    for K in ks:
        for N in ns:
            bad = violations(first_value_step(K, N, p), circulant_rule)
            if bad:
                failures.append({"K": K, "N": N, "1-based pair": [x + 1 for x in bad[0]]})
    from rwtoolkit.engines.exact import (  # the toolkit's own V(1) and predicate, cross-checked
        derive,
        is_circulant,
    )

    for K in ks:
        for N in ns:
            check = is_circulant(derive(CircleWalk(K, N, p), steps=1, eta="eta", loss="any").states[1].V)
            if not check:
                failures.append(
                    {"K": K, "N": N, "rwtoolkit.engines.exact.is_circulant(derive V(1))": str(check.witness)}
                )
    V = first_value_step(3, 3, sp.Rational(1, 2))
    i1, j1, i2, j2 = violations(V, hankel_rule)[0]
    hankel = {
        "reading": "i1 + j1 ≡ i2 + j2 (mod K)",
        "K": 3,
        "N": 3,
        "p": "1/2",
        f"[V]_{i1 + 1},{j1 + 1}": str(V[i1, j1]),
        f"[V]_{i2 + 1},{j2 + 1}": str(V[i2, j2]),
    }
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"all K, N, p (argument in the docstring); exact V(1) for K ∈ {list(ks)}, N ∈ {list(ns)}, p, η symbolic, ℓ' abstract",
        method="exact verification over a finite range",
        verdict=Verdict.REFUTED if failures else Verdict.HOLDS,
        witness=failures[0] if failures else {"transposed (Hankel) reading is false": hankel},
    )
