"""Theorem 3.1 (ii), evidence: ‖f/‖f‖ − f_OPT/‖f_OPT‖‖ = O(T^{−1/2}) with f_OPT = Πᵀx_{N−1}.

What the data show (float64 GD on exact populations, log-loss): for p = 1/2 the error falls like
T^{−1/2}; for p ≠ 1/2 it stalls at c(p) = sqrt(2 − 2(p^{3/2} + (1−p)^{3/2})/sqrt(p² + (1−p)²)) > 0
(K = 5, p = 7/10: 0.1745), so the printed statement fails. Reason: once the attention selects the parent,
the log-loss gradient on V_{y,s} is −P(s)π_{s,y}/(V_{y,s} + ε), so (V_{y,s} + ε)² grows like 2ηP(s)π_{s,y}t and
V_{y,s} ≈ √(2ηπ_{s,y}t/K) − ε: the scores align with the entrywise square root √(Πᵀx_{N−1}), not Πᵀx_{N−1}
(argmax unchanged, so the accuracy is still OPT). Corrected statement, certified: the error against
√(f_OPT)/‖√(f_OPT)‖ falls like T^{−1/2} (fitted log-log slope in [−0.6, −0.4]) and the error against f_OPT
tends to c(p) (|err − c(p)| ≤ the error against √f_OPT, the triangle inequality, at T).
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._direction import direction_certificate

ID = "3.1(ii)"
STATEMENT = (
    "corrected: ‖f/‖f‖ − √f_OPT/‖√f_OPT‖‖ = O(T^{−1/2}) (entrywise √); against f_OPT = Πᵀx_{N−1} the error → "
    "c(p) > 0 for p ≠ 1/2 (printed O(T^{−1/2}) holds only at p = 1/2)"
)


def certify(quick: bool = False) -> Certificate:
    """Rates of the f-direction errors on the Theorem 3.1 grid."""
    return direction_certificate(ID, STATEMENT, "f", quick)
