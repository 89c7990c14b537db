"""JSON (format ``rw-certify``, schema ``certify.schema.json``) and Markdown views of a certification.

Every ball is exported as {"mid", "rad"} with float64 numbers chosen so that [mid ± rad] still
contains the exact value (``ball_json``); a ball no float64 pair encloses (not finite at the working
precision) as {"mid": null, "rad": null, "unbounded": true}, so the JSON never holds NaN or inf.
Rationals (accuracy bounds, μ, η, ε) are exact strings. The Markdown prints each ball as an explicit
interval [lower, upper] rounded outward (``interval_text``).
"""

from __future__ import annotations

from functools import reduce

import sympy as sp
from flint import arb

from rwtoolkit.engines.balls._balls import ball_json, interval_text, is_exact_zero, precision
from rwtoolkit.engines.balls._certify import Certification, accuracy_bounds
from rwtoolkit.engines.balls._trajectory import StepRecord
from rwtoolkit.tasks import CircleWalk, FiniteTask

FORMAT, VERSION = "rw-certify", 1


def _spread(rec: StepRecord) -> arb:
    """max_j D_j - min_j D_j over token positions, D_j = Σ_i w_i (S_ij - S_i1): exactly 0 under symmetry."""
    d = rec.evaluation.profile_differences
    return reduce(lambda a, b: a.max(b), d) - reduce(lambda a, b: a.min(b), d)


def _direction_error(V: list[list[arb]], target: list[list[arb]]) -> arb | None:
    """‖V/‖V‖_F - T/‖T‖_F‖_F (Theorem 3.1 (iii) against T); None while V is exactly 0."""
    if all(is_exact_zero(x) for row in V for x in row):
        return None
    nv = sum((x * x for row in V for x in row), arb(0)).sqrt()
    nt = sum((x * x for row in target for x in row), arb(0)).sqrt()
    return sum(((a / nv - b / nt) ** 2 for ra, rb in zip(V, target) for a, b in zip(ra, rb)), arb(0)).sqrt()


def _targets(task: object) -> dict[str, list[list[arb]]]:
    """Πᵀ and its entrywise square root √Πᵀ (the corrected direction of Theorem 3.1 (iii)) as balls."""
    if not isinstance(task, CircleWalk):
        return {}
    Pi = task.transition_matrix()
    K = task.K
    PiT = [[arb(sp.Rational(Pi[j, i]).p) / int(sp.Rational(Pi[j, i]).q) for j in range(K)] for i in range(K)]
    return {"v_direction_error": PiT, "v_sqrt_direction_error": [[x.sqrt() for x in row] for row in PiT]}


def certify_json(cert: Certification, comparison: dict | None = None) -> dict:
    """The whole certification as plain JSON types (validated by ``rwtoolkit.io.load_schema("certify")``).

    Every step has the loss, accuracy and attention read-outs any ball engine gives; V, w_tok, c and the
    direction errors are written where the record has the reduced view (the reduced engine's records).
    """
    traj = cert.trajectory
    task = cert.task
    ws_labels, ws_weights = cert.eval_set.labels, cert.eval_set.weights
    steps = []
    with precision(traj.prec):
        targets = _targets(task)
        for rec in traj.records:
            lo, hi = accuracy_bounds(rec.evaluation.predictions, ws_labels, ws_weights)
            row = {
                "step": rec.step,
                "train_loss": ball_json(rec.train_loss),
                "test_accuracy": {"lower": str(lo), "upper": str(hi), "decided": lo == hi},
                "parent_attention": ball_json(rec.evaluation.attention_profile[-2]),
                "attention_profile": [ball_json(x) for x in rec.evaluation.attention_profile],
                "mean_attention_spread": ball_json(_spread(rec)),
            }
            if rec.reduced is not None:  # the reduced coordinates, where the engine keeps them
                V = rec.reduced.V
                row["V"] = [[ball_json(x) for x in r] for r in V]
                row["w_tok"] = [ball_json(x) for x in rec.reduced.w_tok]
                row["c"] = [ball_json(x) for x in rec.reduced.c]
                for name, target in targets.items():
                    err = _direction_error(V, target)
                    row[name] = None if err is None else ball_json(err)
            steps.append(row)
    return {
        "format": FORMAT,
        "version": VERSION,
        "task": _task(task),
        "config": cert.config,
        "gram": cert.gram.to_json(),
        "precision": {
            "prec": traj.prec,
            "attempts": cert.attempts,
            "tolerance_met": cert.tolerance_met,
            "stopped": traj.stopped,
        },
        "statements": [s.to_json() for s in cert.statements],
        "steps": steps,
        "float_comparison": comparison,
    }


def _task(task: CircleWalk | FiniteTask) -> dict:
    if isinstance(task, CircleWalk):
        return {"name": "circle", "K": task.K, "N": task.N, "p": str(task.p)}
    return {"name": type(task).__name__, "K": task.K, "N": task.N, "p": None}


def radius_text(attempt: dict) -> str:
    """An attempt's widest relative radius as printed: two significant digits, or "unbounded"."""
    return "unbounded" if attempt.get("unbounded") else f"{attempt['max_relative_radius']:.2g}"


def tolerance_line(data: dict) -> str:
    """One line saying that the tolerance was not met: the widest relative radius at the final precision.

    >>> tolerance_line({"config": {"tol": 1e-20, "max_prec": 16},
    ...                 "precision": {"prec": 16, "attempts": [{"prec": 16, "max_relative_radius": 0.027}]}})
    'tolerance NOT met: widest relative ball radius 0.027 at 16 bits > --tol 1e-20 (doubling the precision again would pass --max-prec 16)'
    """
    cfg, prec = data["config"], data["precision"]
    return (
        f"tolerance NOT met: widest relative ball radius {radius_text(prec['attempts'][-1])} at {prec['prec']} "
        f"bits > --tol {cfg['tol']:g} (doubling the precision again would pass --max-prec {cfg['max_prec']})"
    )


def certify_markdown(data: dict) -> str:
    """A readable report of ``certify_json``'s output: configuration, statements, float comparison, per-step table."""
    t, cfg, prec = data["task"], data["config"], data["precision"]
    attempts = ", ".join(
        f"{a['prec']} bits → widest relative radius {radius_text(a)}" for a in prec["attempts"]
    )
    lines = [
        f"# Certified trajectory: {t['name']} K = {t['K']}, N = {t['N']}, p = {t['p']}",
        "",
        f"Exact model: log-loss -log(z + {cfg['eps']}), η = {cfg['eta']}, {cfg['steps']} full-batch GD steps from zero "
        f"init, {cfg['pos']} embeddings with M = {cfg['M']} (μ = {cfg['mu']}), "
        + (
            "the exact population."
            if cfg["population"]
            else f"{cfg['train_size']} training and {cfg['test_size']} test walks (seed {cfg['seed']}, "
            f"{cfg['distinct_train_inputs']} and {cfg['distinct_eval_inputs']} distinct)."
        ),
        "",
        f"Gram matrix PᵀP enclosed entry by entry: every ball contains μ·I (widest off-diagonal radius "
        f"{data['gram']['max_offdiag_rad']:.2g}). Precision {prec['prec']} bits (attempts: {attempts}; "
        f"tolerance {cfg['tol']:g} {'met' if prec['tolerance_met'] else 'NOT met'}).",
        "",
        "## Statements",
        "",
        "| statement | claim | outcome | evidence |",
        "| --- | --- | --- | --- |",
    ]
    for s in data["statements"]:
        lines.append(f"| {s['name']} | {s['claim']} | **{s['outcome']}** | {s['detail']} |")
    comp = data.get("float_comparison")
    if comp:
        lines += ["", "## Float64 run (rwtoolkit.engines.numeric) against the enclosure", "", comp["summary"]]
    lines += [
        "",
        "## Per step (evaluation set)",
        "",
        "Each enclosure is the interval [lower, upper] that contains the exact value, both ends rounded outward; "
        "(-∞, +∞) where the balls are not finite at this precision.",
        "",
        "| step | train loss | parent attention | mean attention spread | test accuracy |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in data["steps"]:
        acc = s["test_accuracy"]
        a = acc["lower"] if acc["decided"] else f"[{acc['lower']}, {acc['upper']}]"
        lines.append(
            f"| {s['step']} | {interval_text(s['train_loss'])} | {interval_text(s['parent_attention'])} | "
            f"{interval_text(s['mean_attention_spread'])} | {a} |"
        )
    return "\n".join(lines) + "\n"
