"""The shared logic of the two direction-error parts of Theorem 3.1 (f and V)."""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._theorem31 import closed_plateau, plateau, runs, settings, tail_slope
from rwtoolkit.io import Verdict


def direction_certificate(ident: str, statement: str, which: str, quick: bool) -> Certificate:
    """``which`` = "f" or "v": rates of the error against Πᵀ (printed) and √Πᵀ (corrected)."""
    cfg = settings(quick)
    T = cfg["T"]
    printed_fails, corrected_bad, table = [], [], {}
    for (K, p), r in runs(quick).items():
        err_pi = getattr(r, f"{which}_err_pi")
        err_sqrt = getattr(r, f"{which}_err_sqrt")
        limit = plateau(K, p)[0 if which == "v" else 1]
        s_pi, s_sqrt = tail_slope(r.steps, err_pi, T // 10), tail_slope(r.steps, err_sqrt, T // 10)
        table[f"K={K},p={p}"] = {
            "err vs Pi^T at T": round(err_pi[-1], 5),
            "slope vs Pi^T": round(s_pi, 3),
            "err vs sqrt at T": round(err_sqrt[-1], 5),
            "slope vs sqrt": round(s_sqrt, 3),
            "predicted limit of err vs Pi^T": round(limit, 5),
        }
        if abs(limit - closed_plateau(float(r.p))) > 1e-12:
            corrected_bad.append({"K": K, "p": p, "plateau formula": "disagrees with the matrices"})
        # the printed rate fails when the error against Πᵀ stays near the positive limit c(p): by the
        # triangle inequality err_pi ≥ c(p) − err_sqrt, which does not tend to 0 while err_sqrt does
        if limit > 0.05 and err_pi[-1] > limit / 2 and err_pi[-1] >= limit - err_sqrt[-1]:
            printed_fails.append(
                {
                    "K": K,
                    "p": p,
                    "T": T,
                    f"{which}-error vs Pi^T at T": err_pi[-1],
                    "fitted slope": s_pi,
                    "limit": limit,
                }
            )
        # corrected: the error against √Πᵀ falls like T^{-1/2}, and the error against Πᵀ tends to the limit
        if not (-0.6 <= s_sqrt <= -0.4) or abs(err_pi[-1] - limit) > err_sqrt[-1] * (1 + 1e-9) + 1e-12:
            corrected_bad.append({"K": K, "p": p, "slope vs sqrt": s_sqrt, "err vs sqrt": err_sqrt[-1]})
    if corrected_bad:
        verdict, witness = (
            Verdict.FAILS,
            {"corrected statement fails": corrected_bad[0], "printed": printed_fails[:1]},
        )
    elif printed_fails:
        verdict, witness = Verdict.HOLDS, {"printed statement fails (error vs Π^T stalls)": printed_fails[0]}
    else:
        verdict, witness = Verdict.HOLDS, None
    return Certificate(
        id=ident,
        statement=statement,
        scope=(
            f"numeric: K ∈ {cfg['Ks']}, p ∈ {cfg['ps']}, N = {cfg['N']}, T = {T}, η = 1, ε = 1/10, log-loss, "
            f"μ = 500; log-log slopes fitted over T/10 ≤ t ≤ T; rate accepted in [−0.6, −0.4]"
        ),
        method="numeric evidence",
        verdict=verdict,
        corrected=bool(printed_fails),
        witness=witness,
        details=table,
    )
