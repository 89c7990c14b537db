"""Theorem 3.1 (i), evidence: for 0 < p < 1, K > 4, after a constant number of GD steps the accuracy
equals OPT = max{p, 1−p}.

Float64 GD on exact populations (``rwtoolkit.engines.numeric.train`` via ``_theorem31.run_gd``: η = 1, ε = 1/10, log-loss,
μ = 500 i.e. the paper's M = 1000), zero init. Accuracy is exact up to float rounding of the probability sums: "= OPT" means
|acc − OPT| ≤ 1e−12. Checked at every step up to 100 and at log-spaced steps up to T; the first step
t* from which it holds at every checked step is reported.
"""

from __future__ import annotations

from fractions import Fraction

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._theorem31 import runs, settings
from rwtoolkit.io import Verdict

ID = "3.1(i)"
STATEMENT = "0<p<1, K>4: after a constant number of steps the accuracy equals OPT = max{p, 1−p}"


def certify(quick: bool = False) -> Certificate:
    """t* for every run of the grid; fails if some run has not reached OPT by T or leaves it."""
    cfg = settings(quick)
    failures, first = [], {}
    for (K, p), r in runs(quick).items():
        opt = float(max(Fraction(p), 1 - Fraction(p)))
        at_opt = [abs(a - opt) <= 1e-12 for a in r.accuracy]
        t_star = next((s for i, s in enumerate(r.steps) if all(at_opt[i:])), None)
        first[f"K={K},p={p}"] = t_star
        if t_star is None:
            failures.append({"K": K, "p": p, "final accuracy": r.accuracy[-1], "OPT": opt})
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"numeric: K ∈ {cfg['Ks']}, p ∈ {cfg['ps']}, N = {cfg['N']}, T = {cfg['T']}, η = 1, ε = 1/10, μ = 500; "
            "every step ≤ 100, log-spaced after"
        ),
        method="numeric evidence",
        verdict=Verdict.FAILS if failures else Verdict.HOLDS,
        witness=failures[0] if failures else None,
        details={"first step from which accuracy = OPT": first},
    )
