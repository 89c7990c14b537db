"""Theorem 3.1 (iii), evidence: ‖V/‖V‖_F − Πᵀ/‖Πᵀ‖_F‖_F = O(T^{−1/2}).

What the data show (float64 GD on exact populations, log-loss): for p = 1/2 the error falls like
T^{−1/2}; for p ≠ 1/2 it stalls at c(p) = sqrt(2 − 2(p^{3/2} + (1−p)^{3/2})/sqrt(p² + (1−p)²)) > 0, the
distance between the directions of √Πᵀ (entrywise) and Πᵀ, so the printed statement fails. V(t)
aligns with √Πᵀ (see ``theorem_3_1_f_direction`` for the reason). Corrected statement, certified:
‖V/‖V‖_F − √Πᵀ/‖√Πᵀ‖_F‖_F falls like T^{−1/2} (fitted slope in [−0.6, −0.4]) and the error against Πᵀ
tends to c(p).
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._direction import direction_certificate

ID = "3.1(iii)"
STATEMENT = (
    "corrected: ‖V/‖V‖_F − √Πᵀ/‖√Πᵀ‖_F‖_F = O(T^{−1/2}) (entrywise √); against Πᵀ the error → c(p) > 0 for "
    "p ≠ 1/2 (printed O(T^{−1/2}) holds only at p = 1/2)"
)


def certify(quick: bool = False) -> Certificate:
    """Rates of the V-direction errors on the Theorem 3.1 grid."""
    return direction_certificate(ID, STATEMENT, "v", quick)
