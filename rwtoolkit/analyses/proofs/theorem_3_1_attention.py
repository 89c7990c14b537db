"""Theorem 3.1 (iv), evidence: the attention on the parent x_{N−1} is ≥ 1 − exp(−Ω(N)) during training.

Two pieces of float64 evidence on exact populations (η = 1, ε = 1/10, log-loss):
(a) the Theorem 3.1 grid (μ = 500, the paper's M = 1000): log10 E[1 − S_{N−1}(T)] (computed in log space);
    required < −6 for every run;
(b) the parent's logit margin m(N) after T_m steps with the paper's scaling M = ⌈N^{3/2}⌉ (μ = M/2):
    every input has the same logit differences, so 1 − S_{N−1} ≤ (N−1)e^{−m}; required: m grows
    linearly in N (fits for even and odd N with slope > 0, R² ≥ 0.8).
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._theorem31 import margin_runs, runs, settings
from rwtoolkit.io import Verdict

ID = "3.1(iv)"
STATEMENT = "parent attention ≥ 1 − exp(−Ω(N)): 1−S_{N−1}(T) tiny at μ = 500; margin ∝ N at M = ⌈N^{3/2}⌉"


def certify(quick: bool = False) -> Certificate:
    """(a) on the grid; (b) margins after T_m = 50 (quick, N ≤ 10) / 100 (full, N ≤ 14) steps."""
    cfg = settings(quick)
    t_m, n_max = (50, 10) if quick else (100, 14)
    failures, finals, fits = [], {}, {}
    for (K, p), r in runs(quick).items():
        finals[f"K={K},p={p}"] = round(r.log10_one_minus_parent[-1], 1)
        if not r.log10_one_minus_parent[-1] < -6:
            failures.append({"K": K, "p": p, "log10(1 - S_parent(T))": r.log10_one_minus_parent[-1]})
    for (K, p), d in margin_runs(quick, t_m, n_max, False).items():
        fits[f"K={K},p={p}"] = {
            "N": d["N"],
            "margin": [round(m, 3) for m in d["margin"]],
            "fits": {k: {kk: round(vv, 4) for kk, vv in v.items()} for k, v in d["fits"].items()},
        }
        for name in ("even N", "odd N"):
            fit = d["fits"][name]
            if not (fit["b"] > 0 and fit["r2"] >= 0.8):
                failures.append({"K": K, "p": p, "margin fit": name, "slope": fit["b"], "R^2": fit["r2"]})
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"numeric: (a) K ∈ {cfg['Ks']}, p ∈ {cfg['ps']}, N = {cfg['N']}, T = {cfg['T']}, μ = 500; "
            f"(b) margin after {t_m} steps, μ = ⌈N^{{3/2}}⌉/2, N = 4..{n_max}"
        ),
        method="numeric evidence",
        verdict=Verdict.FAILS if failures else Verdict.HOLDS,
        witness=failures[0] if failures else None,
        details={"log10(1 - S_parent(T)) at mu=500": finals, f"margin after {t_m} steps vs N": fits},
    )
