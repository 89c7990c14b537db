"""The vanishing set of the token-average signal C (docs/theory.md#signal) for circle walks.

Statement: for K ≥ 3, N ≥ 2, the set of p ∈ [0, 1] with C(p) = 0 is
  {0, 1} if K | N−1,   plus {1/2} if K = 4 and N is odd,   and empty otherwise.
(So K = 4, p = 1/2, N odd is a second failure case besides p ∈ {0, 1}, N = rK+1; Theorem 3.1 asks K > 4.)

Proof (all K, N, p): for circle walks E[e_y] = E[x̄] = 1/K·1 and E[e_y x_iᵀ] = (1/K)(Πᵀ)^{N−i}, so
C = (1/(K(N−1))) Σ_{r=1}^{N−1} (Πᵀ)^r − (1/K²) 1 1ᵀ. C is circulant, hence diagonalised by the Fourier basis;
its eigenvalue on mode 0 is 0 and on mode k ≠ 0 it is (1/(K(N−1))) Σ_{r=1}^{N−1} λ̄_k^r with
λ_k = p ω^k + (1−p) ω^{−k}. So C = 0 iff S_k := Σ_{r=1}^{N−1} λ_k^r = 0 for every k = 1..K−1.
* 0 < p < 1: |λ_k|² = p² + (1−p)² + 2p(1−p)cos(4πk/K) and 1 − |λ_k|² = 2p(1−p)(1 − cos(4πk/K)), so for
  k = 1 (K ≥ 3: 4π/K ∉ 2πZ) 0 ≤ |λ_1| < 1; if λ_1 ≠ 0 then S_1 = λ_1(1 − λ_1^{N−1})/(1 − λ_1) ≠ 0. And
  |λ|² − (2p−1)² = 2p(1−p)(1 + cos(4πk/K)), so λ_1 = 0 iff p = 1/2 and cos(4π/K) = −1, i.e. K = 4. For K = 4,
  p = 1/2: λ_1 = λ_3 = 0, λ_2 = −1, S_2 = Σ_{r=1}^{N−1} (−1)^r = 0 iff N is odd.
* p ∈ {0, 1}: λ_k = ω^{±k} ≠ 1, so S_k = 0 iff ω^{±k(N−1)} = 1 for all k, i.e. K | N−1.
The algebraic identities above are checked by SymPy for symbolic p and θ; the set itself is computed
exactly (gcd of the entries of C over Z[p], exact real roots in [0, 1]) for every K, N in the range by an
independent code path, and cross-checked against ``rwtoolkit.engines.exact.vanishing_set`` on a sub-range.
"""

from __future__ import annotations

from math import comb

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._walks import basis_to_poly, bernstein_row
from rwtoolkit.io import Verdict

ID = "signal"
STATEMENT = "{p ∈ [0,1] : C(p) = 0} = {0,1} if K | N−1, ∪ {1/2} if K = 4 and N odd, else ∅"


def predicted(K: int, N: int) -> set[sp.Rational]:
    """The vanishing set the statement predicts for (K, N)."""
    out: set[sp.Rational] = set()
    if (N - 1) % K == 0:
        out |= {sp.Integer(0), sp.Integer(1)}
    if K == 4 and N % 2 == 1:
        out.add(sp.Rational(1, 2))
    return out


def computed(K: int, N: int) -> set[sp.Expr] | str:
    """The exact vanishing set in [0, 1] from K(N−1)·C's row (offset e): K·Σ_r[Π^r]_{0e} − (N−1)."""
    n = N - 1
    rows = bernstein_row(K, 1, n)
    gcd = None
    for row in rows:
        poly = basis_to_poly([K * x - (N - 1) * comb(n, j) for j, x in enumerate(row)])
        if not poly.is_zero:
            gcd = poly if gcd is None else gcd.gcd(poly)
    if gcd is None:
        return "all p"
    gcd = gcd.sqf_part()
    return {r for r in gcd.real_roots() if 0 <= r <= 1} if gcd.degree() > 0 else set()


def _symbolic_steps() -> dict[str, bool]:
    p, th = sp.symbols("p theta", real=True)
    lam = p * sp.exp(sp.I * th) + (1 - p) * sp.exp(-sp.I * th)
    mod2 = sp.simplify(sp.expand_complex(lam * sp.conjugate(lam)).rewrite(sp.cos))
    target = p**2 + (1 - p) ** 2 + 2 * p * (1 - p) * sp.cos(2 * th)
    return {
        "|lambda|^2 = p^2 + (1-p)^2 + 2p(1-p)cos(2 theta)": sp.simplify(sp.expand_trig(mod2 - target)) == 0,
        "1 - |lambda|^2 = 2p(1-p)(1 - cos 2theta)": sp.expand(
            1 - target - 2 * p * (1 - p) * (1 - sp.cos(2 * th))
        )
        == 0,
        "|lambda|^2 - (2p-1)^2 = 2p(1-p)(1 + cos 2theta)": sp.expand(
            target - (2 * p - 1) ** 2 - 2 * p * (1 - p) * (1 + sp.cos(2 * th))
        )
        == 0,
        "K = 4, p = 1/2: lambda_1 = 0": sp.simplify(lam.subs({p: sp.Rational(1, 2), th: 2 * sp.pi / 4})) == 0,
        "mode K/2 (even K): lambda = -1 for all p": sp.simplify(lam.subs(th, sp.pi)) == -1,
    }


def certify(quick: bool = False) -> Certificate:
    """The predicted set against the exact computation for K = 3..12, N = 2..40 (quick: N ≤ 20)."""
    k_max, n_max = (12, 20) if quick else (12, 40)
    cross_k, cross_n = (5, 9) if quick else (8, 16)
    steps = _symbolic_steps()
    failures = []
    nonempty = {}
    for K in range(3, k_max + 1):
        for N in range(2, n_max + 1):
            got, want = computed(K, N), predicted(K, N)
            if got != want:
                failures.append({"K": K, "N": N, "computed": str(got), "predicted": sorted(map(str, want))})
            elif want:
                nonempty[f"K={K},N={N}"] = sorted(map(str, want))
    from rwtoolkit.engines.exact import (
        vanishing_set,  # the toolkit's implementation, cross-checked on a sub-range
    )

    for K in range(3, cross_k + 1):
        for N in range(2, cross_n + 1):
            vs = vanishing_set((K, N))
            if vs.all_p or set(vs.points) != predicted(K, N):
                failures.append({"K": K, "N": N, "rwtoolkit.engines.exact.vanishing_set": str(vs)})
    ok = all(steps.values()) and not failures
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"all K ≥ 3, N ≥ 2, p ∈ [0,1] (eigenvalue proof, identities checked for symbolic p, θ); exact sets "
            f"computed for K = 3..{k_max}, N = 2..{n_max}; rwtoolkit.engines.exact.vanishing_set cross-checked for K ≤ {cross_k}, N ≤ {cross_n}"
        ),
        method="symbolic proof",
        verdict=Verdict.PROVED if ok else Verdict.REFUTED,
        witness=failures[0]
        if failures
        else {"K=4, N=3, p=1/2": "C = 0 (Π + Π² = 1 1ᵀ/2): uninformative average with 0<p<1"},
        details={"symbolic_steps": steps, "nonempty_sets": nonempty},
    )
