"""The stability report: verdict, per-step growth, predicted vs measured escape (JSON + PNG)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import cast

from rwstability._escape import DEFAULT_THRESHOLD, UNIT_ROUNDOFF, measure_escape, predict_escape
from rwstability._linear import linearise, unstable_directions, verdict
from rwstability._reduced import Coordinates, check_manifold_task
from rwtasks import CircleWalk

#: Largest reduced dimension K² + K + N and run length the report accepts (one Hessian per step).
MAX_DIM = 300
MAX_STEPS = 2000


def check_report_args(
    task: object, steps: int, sigmas: Sequence[float], seeds: int, threshold: float
) -> CircleWalk:
    """One-line ValueErrors for every bad argument, before any work; returns ``task``, a checked circle walk.

    >>> from rwtasks import CircleWalk
    >>> check_report_args(CircleWalk(3, 4, 1), steps=10, sigmas=[1e-3], seeds=1, threshold=1e-3).N
    4
    """
    check_manifold_task(task)
    circle = cast(CircleWalk, task)  # check_manifold_task refuses every task that is not a CircleWalk
    dim = Coordinates(circle.K, circle.N).dim
    if dim > MAX_DIM:
        raise ValueError(
            f"K^2+K+N = {dim} reduced coordinates is above {MAX_DIM}: each step builds a {dim}x{dim} Hessian; "
            "use a smaller K or N"
        )
    if not 2 <= steps <= MAX_STEPS:
        raise ValueError(f"steps={steps} must be in [2, {MAX_STEPS}]")
    if not sigmas or any(not (0 < s < 1) for s in sigmas):
        raise ValueError(f"sigmas={list(sigmas)} must be a non-empty list of numbers in (0, 1)")
    if not 1 <= seeds <= 20:
        raise ValueError(f"seeds={seeds} must be in [1, 20]")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold={threshold} must be in (0, 1)")
    return circle


def stability_report(
    task: CircleWalk,
    steps: int = 200,
    eta: float = 1.0,
    mu: float = 1.0,
    eps: float = 0.1,
    sigmas: Sequence[float] = (1e-2, 1e-4, 1e-6, 1e-8),
    seeds: int = 2,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict:
    """Linearisation, verdict and escape table for a Theorem 4.1 task (JSON-able; schema ``stability.schema.json``).

    >>> from rwtasks import CircleWalk
    >>> r = stability_report(CircleWalk(3, 4, 1), steps=4, sigmas=[1e-3], seeds=1)
    >>> r["verdict"]["kind"], len(r["steps"]), r["escape"]["gaussian"][0]["predicted"]  # 4 steps: too few to tell
    ('neutral', 4, 1)
    """
    check_report_args(task, steps, sigmas, seeds, threshold)
    lin = linearise(task, steps, eta, mu, eps)
    v = verdict(lin)
    sig_phi = lin.log_sigma_Phi
    per_step = [
        {
            "t": t,
            "sigma_J": lin.sigma_J[t],
            "sigma_C": lin.sigma_C[t],
            "radius_C": lin.radius_C[t],
            "log_sigma_Phi": sig_phi[t],
            "growth": lin.growth[t],
        }
        for t in range(steps)
    ]
    gaussian = []
    for s in sigmas:
        measured = [measure_escape(lin, sigma=s, seed=k, threshold=threshold).step for k in range(seeds)]
        gaussian.append(
            {
                "sigma": s,
                "predicted": predict_escape(lin, sigma=s, threshold=threshold).step,
                "measured": measured,
            }
        )
    rounding = []
    for dtype in ("float32", "float64"):
        predicted = predict_escape(lin, dtype=dtype, threshold=threshold).step
        for gram in ("ideal", "computed"):
            m = measure_escape(lin, dtype=dtype, threshold=threshold, gram=gram)
            rounding.append(
                {
                    "dtype": dtype,
                    "gram": gram,
                    "predicted": predicted,
                    "measured": m.step,
                    "measured_final_rho": m.rho[-1],
                }
            )
    return {
        "task": {"name": "circle", "K": task.K, "N": task.N, "p": str(task.p)},
        "config": {"steps": steps, "eta": eta, "mu": mu, "eps": eps, "seeds": seeds, "threshold": threshold},
        "dimensions": {"reduced": lin.coords.dim, "normal": int(lin.basis.shape[1])},
        "verdict": {"kind": v.kind, "rate": v.rate, "tolerance": v.tolerance, "line": v.line()},
        "unstable_directions": unstable_directions(lin),
        "steps": per_step,
        "escape": {"quantity": "ones_residual", "gaussian": gaussian, "rounding": rounding},
    }


def schema() -> dict:
    """The JSON schema of ``stability_report``'s output."""
    return json.loads(resources.files("rwstability").joinpath("stability.schema.json").read_text())


def plot_report(report: dict, path: str) -> None:
    """Two panels: σ_max(Φ_t) and σ_max(C_t) along t; predicted vs measured escape step against σ.

    Rounding (computed Gram matrix) is drawn at σ = u of its dtype; a missing marker means no escape.
    """
    import matplotlib

    matplotlib.use("Agg")
    import math

    import matplotlib.pyplot as plt

    from rwio import save_figure_atomic

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    ts = [s["t"] + 1 for s in report["steps"]]
    a.semilogy(ts, [math.exp(s["log_sigma_Phi"]) for s in report["steps"]], label=r"$\sigma_{\max}(\Phi_t)$")
    a.semilogy(ts, [s["sigma_C"] for s in report["steps"]], label=r"$\sigma_{\max}(C_{t-1})$")
    a.set_xlabel("step t")
    a.set_title(report["verdict"]["kind"] + f", rate {report['verdict']['rate']:+.3g}/step", fontsize=9)
    a.legend(fontsize=8)
    rows = report["escape"]["gaussian"]
    xs = [r["sigma"] for r in rows]
    b.semilogx(
        xs,
        [r["predicted"] if r["predicted"] is not None else float("nan") for r in rows],
        "o-",
        label="predicted (linear)",
    )
    for k in range(report["config"]["seeds"]):
        ys = [r["measured"][k] if r["measured"][k] is not None else float("nan") for r in rows]
        b.semilogx(xs, ys, "x", color="C1", label="measured (rw train)" if k == 0 else None)
    for i, r in enumerate(x for x in report["escape"]["rounding"] if x["gram"] == "computed"):
        u = UNIT_ROUNDOFF[r["dtype"]]  # rounding drawn at σ = u, the size of one rounding error
        pred = r["predicted"] if r["predicted"] is not None else float("nan")
        meas = r["measured"] if r["measured"] is not None else float("nan")
        b.semilogx([u], [pred], "s", mfc="none", color="C2", label="rounding, predicted" if i == 0 else None)
        b.semilogx([u], [meas], "+", ms=10, color="C3", label="rounding, measured" if i == 0 else None)
    b.set_xlabel(r"init scale $\sigma$ (rounding: unit roundoff $u$, computed Gram)")
    b.set_ylabel(rf"escape step ($\rho > {report['config']['threshold']:g}$)")
    b.legend(fontsize=8)
    t = report["task"]
    fig.suptitle(f"circle walk K={t['K']}, N={t['N']}, p={t['p']}", fontsize=10)
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=150)
    plt.close(fig)
