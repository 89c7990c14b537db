"""Lemma C.7 (evidence): V(t) = β(t)Πᵀ + Ṽ(t) with a small remainder Ṽ.

With β(t) the least-squares coefficient (β = ⟨V, Πᵀ⟩_F/‖Πᵀ‖²_F), the relative remainder is
‖Ṽ‖_F/‖V‖_F = sin θ(V, Πᵀ), computed from the direction error e = ‖V/‖V‖ − Πᵀ/‖Πᵀ‖‖ as
sin θ = e·sqrt(1 − e²/4). Float64 GD on exact populations (the Theorem 3.1 grid): for p = 1/2 it falls
like T^{−1/2}; for p ≠ 1/2 it tends to sin θ(√Πᵀ, Πᵀ) > 0, so the remainder is not
small (0.1739 at p = 0.3/0.7). Corrected statement, certified: V(t) = β(t)√Πᵀ + Ṽ(t) (entrywise square root) with
‖Ṽ‖_F/‖V‖_F = O(T^{−1/2}) (fitted slope in [−0.6, −0.4]).
"""

from __future__ import annotations

import numpy as np

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._theorem31 import plateau, runs, settings, tail_slope
from rwtoolkit.io import Verdict

ID = "C.7"
STATEMENT = (
    "corrected: V(t) = β(t)√Πᵀ + Ṽ(t) with ‖Ṽ‖_F/‖V‖_F = O(T^{−1/2}); with Πᵀ in place of √Πᵀ the relative "
    "remainder → sin θ(√Πᵀ, Πᵀ) > 0 for p ≠ 1/2"
)


def relative_remainder(direction_error: list[float]) -> list[float]:
    """sin θ from the unit-vector distance e = 2 sin(θ/2): sin θ = e·sqrt(1 − e²/4)."""
    e = np.asarray(direction_error, dtype=np.float64)
    return [float(v) for v in e * np.sqrt(1 - e**2 / 4)]


def certify(quick: bool = False) -> Certificate:
    """Relative remainders against Πᵀ (printed) and √Πᵀ (corrected) on the Theorem 3.1 grid."""
    cfg = settings(quick)
    T = cfg["T"]
    printed_fails, bad, table = [], [], {}
    for (K, p), r in runs(quick).items():
        rem_pi, rem_sqrt = relative_remainder(r.v_err_pi), relative_remainder(r.v_err_sqrt)
        limit = relative_remainder([plateau(K, p)[0]])[0]
        slope = tail_slope(r.steps, rem_sqrt, T // 10)
        table[f"K={K},p={p}"] = {
            "remainder vs Pi^T at T": round(rem_pi[-1], 5),
            "limit": round(limit, 5),
            "remainder vs sqrt at T": round(rem_sqrt[-1], 5),
            "slope vs sqrt": round(slope, 3),
        }
        if limit > 0.05 and rem_pi[-1] > limit / 2:
            printed_fails.append(
                {"K": K, "p": p, "T": T, "relative remainder vs Pi^T": rem_pi[-1], "limit": limit}
            )
        if not -0.6 <= slope <= -0.4:
            bad.append({"K": K, "p": p, "slope vs sqrt": slope})
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"numeric: K ∈ {cfg['Ks']}, p ∈ {cfg['ps']}, N = {cfg['N']}, T = {T}, η = 1, ε = 1/10, log-loss, "
            "μ = 500; slopes fitted over T/10 ≤ t ≤ T"
        ),
        method="numeric evidence",
        verdict=Verdict.FAILS if bad else Verdict.HOLDS,
        corrected=bool(printed_fails),
        witness=bad[0] if bad else ({"printed form fails": printed_fails[0]} if printed_fails else None),
        details=table,
    )
