"""Lemma E.1: the cyclic shift Π0 ([Π0]_{i+1,i} = 1) satisfies Π0^K = I, Π0 Π0ᵀ = I, Σ_{k=1}^K Π0^k = 1_{K×K}.

Proof for every K ≥ 3 (checked by SymPy with symbolic integers i, k, K): Π0 e_i = e_{<i+1>}, so by
induction Π0^k e_i = e_{<i+k>}. (1) <i+K> = <i> (SymPy: Mod(i + K, K) − Mod(i, K) = 0), so Π0^K = I.
(2) Π0 is the permutation matrix of the bijection i ↦ <i+1>, hence orthogonal. (3) In the circulant
algebra Q[x]/(x^K − 1) with Π0 ↦ x, Σ_{k=1}^K x^k − Σ_{k=0}^{K−1} x^k = x^K − 1 ≡ 0 (SymPy, symbolic K),
and Σ_{k=0}^{K−1} Π0^k = 1_{K×K} because Π0^0, …, Π0^{K−1} have disjoint supports (<i+k> differ).
The matrix identities, and Π = pΠ0ᵀ + (1−p)Π0 against ``CircleWalk.transition_matrix`` with symbolic p,
are also verified exactly for K = 3..K_max.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk, symbol

ID = "E.1"
STATEMENT = "Π0^K = I, Π0Π0ᵀ = I, Σ_{k=1}^K Π0^k = 1_{K×K} (and Π = pΠ0ᵀ + (1−p)Π0)"


def shift(K: int) -> np.ndarray:
    """Π0 with [Π0]_{i+1,i} = 1 (0-based: entry (<i+1>, i)) as an exact integer array."""
    out = np.zeros((K, K), dtype=np.int64)
    out[(np.arange(K) + 1) % K, np.arange(K)] = 1
    return out


def _symbolic_steps() -> dict[str, bool]:
    i, k, K = sp.symbols("i k K", integer=True, positive=True)
    x = sp.Symbol("x")
    telescoped = sp.simplify((sp.Sum(x**k, (k, 1, K)) - sp.Sum(x**k, (k, 0, K - 1))).doit() - (x**K - 1))
    return {
        "Mod(i+K, K) == Mod(i, K) for symbolic integers": sp.Mod(i + K, K) - sp.Mod(i, K) == 0,
        "sum_{k=1}^K x^k - sum_{k=0}^{K-1} x^k == x^K - 1 for symbolic K": telescoped == 0,
    }


def certify(quick: bool = False) -> Certificate:
    """Run the symbolic steps and the exact matrix checks for K = 3..K_max (12 quick, 40 full)."""
    k_max = 12 if quick else 60
    steps = _symbolic_steps()
    failures = []
    p = symbol("p")
    for K in range(3, k_max + 1):
        S = shift(K)  # integer matrices: the products below are exact
        powers = [np.linalg.matrix_power(S, k) for k in range(1, K + 1)]
        Sm = sp.Matrix(S.tolist())
        checks = {
            "Pi0^K = I": np.array_equal(powers[-1], np.eye(K, dtype=np.int64)),
            "Pi0 Pi0^T = I": np.array_equal(S @ S.T, np.eye(K, dtype=np.int64)),
            "sum_k Pi0^k = ones": np.array_equal(sum(powers), np.ones((K, K), dtype=np.int64)),
            "Pi = p Pi0^T + (1-p) Pi0": (
                CircleWalk(K, 3, p).transition_matrix() - (p * Sm.T + (1 - p) * Sm)
            ).expand()
            == sp.zeros(K, K),
        }
        failures += [{"K": K, "identity": name} for name, ok in checks.items() if not ok]
    ok = all(steps.values()) and not failures
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"all K ≥ 3 (symbolic integer K, argument in the docstring); matrices checked exactly for K = 3..{k_max}, p symbolic",
        method="symbolic proof",
        verdict=Verdict.PROVED if ok else Verdict.REFUTED,
        witness=failures[0] if failures else None,
        details={"symbolic_steps": steps, "matrix_range": [3, k_max]},
    )
