"""Lemma E.4: Γ(N) = Σ_{i=0}^{N−2} Π^i has its largest entries on the diagonal.

Certified form: for every p ∈ (0, 1) (p symbolic), [Γ(N)]_{ii} > [Γ(N)]_{ij} for all i ≠ j (strict), and
for p ∈ {0, 1} the diagonal is ≥ every entry with ties (e.g. K = 3, N = 3, p = 1: Γ = I + Π has 1 on the
diagonal and on the clockwise neighbour). Method: Γ is circulant, so only row 0 matters; each
difference d_e(p) = [Γ]_{00} − [Γ]_{0e} is written exactly in the basis p^j (1−p)^{N−2−j}. All coefficients
≥ 0 and one > 0 prove d_e > 0 on (0, 1) and d_e ≥ 0 on [0, 1] (the basis functions are > 0 inside).
Where that sufficient test is inconclusive, exact real-root isolation (Sturm) decides.
For every K, N, p the non-strict form also follows from the strong Markov property: the visits to j
from i within a horizon are those from j within a shorter horizon, so [Γ]_{ij} ≤ [Γ]_{jj} = [Γ]_{ii}.
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import METHODS, Certificate
from rwtoolkit.analyses.proofs._walks import P, bernstein_row, nonnegative_on, sum_of_powers_row

ID = "E.4"
STATEMENT = "Γ(N) = Σ_{i=0}^{N−2} Π^i: [Γ]_ii > [Γ]_ij (i≠j) for every p ∈ (0,1); ≥ with ties at p ∈ {0,1}"


def _basis_poly(coeffs: list[int]) -> sp.Poly:
    n = len(coeffs) - 1
    return sp.Poly(sp.Add(*[c * P**j * (1 - P) ** (n - j) for j, c in enumerate(coeffs)]), P)


def certify(quick: bool = False) -> Certificate:
    """Check every (K, N) in the range with p symbolic."""
    k_max, n_max = (8, 16) if quick else (12, 40)
    failures: list[dict] = []
    by_roots = 0
    endpoint_ties = []
    # the integer basis coefficients against the closed form Σ_R [Π^R]_{0e} (independent sum)
    for K in range(3, 6):
        for N in range(3, 9):
            rows, direct = bernstein_row(K, 0, N - 2), sum_of_powers_row(K, 0, N - 2)
            failures += [
                {"basis coefficients differ": {"K": K, "N": N, "offset": e}}
                for e in range(K)
                if _basis_poly(rows[e]) != direct[e]
            ]
    for K in range(3, k_max + 1):
        for N in range(3, n_max + 1):
            row = bernstein_row(K, 0, N - 2)
            for e in range(1, K):
                diff = [a - b for a, b in zip(row[0], row[e])]
                if min(diff) >= 0 and max(diff) > 0:
                    if diff[0] == 0 or diff[-1] == 0:
                        endpoint_ties.append((K, N, e))
                    continue
                by_roots += 1  # the sufficient test is inconclusive: decide exactly
                poly = _basis_poly(diff)
                ok, where = nonnegative_on(poly, sp.Integer(0), sp.Integer(1))
                if not ok:
                    failures.append({"K": K, "N": N, "offset": e, "p": str(where)})
                    continue
                zeros = (
                    [r for r in poly.sqf_part().real_roots() if 0 < r < 1] if not poly.is_zero else ["all p"]
                )
                if zeros:
                    failures.append({"K": K, "N": N, "offset": e, "tie inside (0,1) at p": str(zeros[0])})
    method = "symbolic proof" if not by_roots else "exact verification over a finite range"
    holds, refuted = METHODS[method]
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"p symbolic: all p ∈ [0,1]; K = 3..{k_max}, N = 3..{n_max} (N = 2: Γ = I); all i ≠ j",
        method=method,
        verdict=refuted if failures else holds,
        witness=failures[0] if failures else None,
        details={
            "decided_by_root_isolation": by_roots,
            "pairs_with_a_tie_at_p=0_or_1": len(endpoint_ties),
            "example_tie": {"K": 3, "N": 3, "p": 1, "Gamma row 0": "(1, 1, 0)"},
        },
    )
