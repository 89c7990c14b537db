"""Lemma E.5: the sine embeddings [p_i]_m = sin(π i m / M), m = 1..M, are pairwise orthogonal with
‖p_i‖² = M/2 for 1 ≤ i, j ≤ M − 1 (so N positions need M > N).

Proof for symbolic M (the trigonometric steps are checked by SymPy with symbolic a, b, t, z, M):
(1) sin a sin b = (cos(a−b) − cos(a+b))/2, so ⟨p_i, p_j⟩ = (C(i−j) − C(i+j))/2 with
    C(k) = Σ_{m=1}^M cos(πkm/M) = Re Σ_{m=1}^M z^m, z = e^{iπk/M}.
(2) For z ≠ 1 (2M ∤ k): Σ_{m=1}^M z^m = (z − z^{M+1})/(1 − z) and z^M = (−1)^k, so C(k) = 0 for even k and
    C(k) = Re(2z/(1 − z)) = −1 for odd k; C(k) = M when 2M | k.
(3) For 1 ≤ i, j ≤ M−1: i−j and i+j have the same parity and 0 < i+j < 2M, |i−j| < M. If i = j:
    (M − 0)/2 = M/2. If i ≠ j: (0 − 0)/2 or (−1 − (−1))/2 = 0.
The Gram matrix is also computed in float64 for every M ≤ M_max and compared with (M/2)·I at absolute
tolerance 1e−9·M (each of the M terms carries rounding error ≲ 1e−15). Counterexample to dropping
M > N: p_M = 0 (sin(πm) = 0), so ‖p_M‖² = 0 ≠ M/2.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict

ID = "E.5"
STATEMENT = "sine embeddings p_i (i ≤ M−1) are pairwise orthogonal with ‖p_i‖² = M/2; fails for i = M"


def sine_embeddings(M: int, N: int) -> np.ndarray:
    """P with [p_i]_m = sin(π i m / M), shape (M, N), i = 1..N, m = 1..M (float64)."""
    m = np.arange(1, M + 1)[:, None]
    i = np.arange(1, N + 1)[None, :]
    return np.sin(np.pi * i * m / M)


def _symbolic_steps() -> dict[str, bool]:
    a, b, t = sp.symbols("a b t", real=True)
    z = sp.Symbol("z")
    m, M = sp.symbols("m M", integer=True, positive=True)
    geometric = sp.summation(z**m, (m, 1, M))  # Piecewise: M if z = 1, else (z − z^{M+1})/(1 − z)
    generic = geometric.args[1][0] if isinstance(geometric, sp.Piecewise) else geometric
    s = sp.Symbol("s")  # s = z^M = (−1)^k
    reduced = ((z - z ** (M + 1)) / (1 - z)).subs(z ** (M + 1), z * s)
    w = sp.exp(sp.I * t)
    return {
        "sin a sin b = (cos(a-b) - cos(a+b))/2": sp.simplify(
            sp.expand_trig(sp.sin(a) * sp.sin(b) - (sp.cos(a - b) - sp.cos(a + b)) / 2)
        )
        == 0,
        "sum_{m=1}^M z^m = (z - z^(M+1))/(1-z) for z != 1": sp.simplify(
            generic - (z - z ** (M + 1)) / (1 - z)
        )
        == 0,
        "z^M = 1 (k even) gives 0": sp.simplify(reduced.subs(s, 1)) == 0,
        "z^M = -1 (k odd) gives 2z/(1-z)": sp.simplify(reduced.subs(s, -1) - 2 * z / (1 - z)) == 0,
        "Re(2z/(1-z)) = -1 on the unit circle": sp.simplify(sp.re(sp.expand_complex(2 * w / (1 - w)))) == -1,
        "p_M = 0: sin(pi M m / M) = 0 for integer m": sp.sin(sp.pi * M * m / M) == 0,
    }


def certify(quick: bool = False) -> Certificate:
    """Symbolic steps, float64 Gram check for M = 2..M_max, and the i = M counterexample."""
    m_max = 64 if quick else 300
    steps = _symbolic_steps()
    failures = []
    worst = 0.0
    for M in range(2, m_max + 1):
        P = sine_embeddings(M, M - 1)
        err = float(np.abs(P.T @ P - (M / 2) * np.eye(M - 1)).max()) if M > 1 else 0.0
        worst = max(worst, err / M)
        if err > 1e-9 * M:
            failures.append({"M": M, "max |Gram - M/2 I|": err})
    ok = all(steps.values()) and not failures
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"all M ≥ 2 and 1 ≤ i, j ≤ M−1 (symbolic M); float64 Gram cross-check for M = 2..{m_max}",
        method="symbolic proof",
        verdict=Verdict.PROVED if ok else Verdict.REFUTED,
        witness=failures[0]
        if failures
        else {"counterexample without M > N": "i = M: p_M = 0 exactly, ||p_M||^2 = 0 != M/2"},
        details={"symbolic_steps": steps, "max |Gram − (M/2)I| / M": worst},
    )
