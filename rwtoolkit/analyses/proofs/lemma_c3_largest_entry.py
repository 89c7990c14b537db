"""Lemma C.3: for 1/2 ≤ p < 1 the largest entry of V(1) sits where Πᵀ has p, i.e. at [V(1)]_{2,1}.

Certified form (log-loss, η, ε > 0): [V(1)]_{2,1} = max_{ij} [V(1)]_{ij} for every p ∈ [1/2, 1] — not
uniquely: the circulant diagonal i − j ≡ 1 carries the same value, at p = 1/2 the diagonal i − j ≡ −1
ties with it (Π is symmetric) and other offsets may tie too (K = 4, N = 3: offsets 0, ±1 all give 1/2),
and for (K, N) = (3, 3) the diagonals i − j ≡ ±1 tie for every p. Apart from these ties the maximum is
strict on (1/2, 1) in the whole range.
Method: by Lemma C.1, V(1) = (η/(εNK)) Σ_{r=1}^{N−1} (Πᵀ)^r, so [V(1)]_{ij} ∝ G(e) := Σ_r [Π^r]_{0,e} with
e = i − j mod K. For every offset e ≠ 1 the polynomial G(1) − G(e) is shown ≥ 0 on [1/2, 1] by exact
real-root isolation (p symbolic: all p), and its zeros in (1/2, 1) are listed (ties).
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._walks import basis_to_poly, bernstein_row, nonnegative_on
from rwtoolkit.io import Verdict

ID = "C.3"
STATEMENT = (
    "log-loss, p ∈ [1/2,1): max V(1) = [V(1)]_{2,1}; strict off the diagonal i−j≡1 for p ∈ (1/2,1) except "
    "(K,N)=(3,3) (ties with i−j≡−1 for all p); at p=1/2 ties (i−j≡−1 always, others e.g. K=4,N=3)"
)


def offset_sums(K: int, N: int) -> list[sp.Poly]:
    """G(e) = Σ_{r=1}^{N−1} [Π^r]_{0,e}, e = 0..K−1, as polynomials in p."""
    return [basis_to_poly(row) for row in bernstein_row(K, 1, N - 1)]


def certify(quick: bool = False) -> Certificate:
    """K = 3..6, N = 2..10 quick; K = 3..12, N = 2..24 full."""
    k_max, n_max = (6, 10) if quick else (12, 24)
    half, one = sp.Rational(1, 2), sp.Integer(1)
    failures, ties = [], []
    for K in range(3, k_max + 1):
        for N in range(2, n_max + 1):
            G = offset_sums(K, N)
            for e in range(K):
                if e == 1:
                    continue
                d = G[1] - G[e]
                ok, where = nonnegative_on(d, half, one)
                if not ok:
                    failures.append(
                        {"K": K, "N": N, "offset i-j": e, "p": str(where), "G(1) - G(e)": str(d.eval(where))}
                    )
                    continue
                if d.is_zero:
                    ties.append({"K": K, "N": N, "offset": e, "tie": "all p"})
                    continue
                sqf = d.sqf_part()
                inside = sqf.count_roots(half, one) - (sqf.eval(half) == 0) - (sqf.eval(one) == 0)
                if inside:
                    ties.append({"K": K, "N": N, "offset": e, "tie inside (1/2,1)": inside})
                elif d.eval(half) == 0 and e != K - 1:
                    ties.append({"K": K, "N": N, "offset": e, "tie at p=1/2": True})
    unexpected = [
        t
        for t in ties
        if not (t.get("tie") == "all p" and (t["K"], t["N"]) == (3, 3)) and "tie at p=1/2" not in t
    ]
    failures += [{"unexpected tie": t} for t in unexpected]
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"p symbolic on [1/2, 1]; K = 3..{k_max}, N = 2..{n_max}; all offsets",
        method="exact verification over a finite range",
        verdict=Verdict.REFUTED if failures else Verdict.HOLDS,
        witness=failures[0]
        if failures
        else {
            "ties for all p": [t for t in ties if t.get("tie") == "all p"],
            "extra ties at p=1/2 (besides i-j≡-1)": sum("tie at p=1/2" in t for t in ties),
            "example": "K=4, N=3, p=1/2: G(0) = G(±1) = 1/2",
        },
    )
