"""Shared by the stuck-for-every-t certificates: one case, both routes, the exact induction step.

Each certificate runs ``rwtoolkit.engines.exact.stuck_proof`` (docs/theory.md#invariant-manifolds) on its tasks and
models: the task's symmetry group and its fixed subspace, the trajectory's span, each decided by one exact
induction step for every η, every loss and every μ, and the scores at every point of the proved subspace.
It is proved when every case is "stuck for all t (proved)" by the route its statement names, refuted when a
case escapes; a case proved by the other route, or stuck for T steps only (evidence, not a proof), leaves it
inconclusive. The first case that is not proved is its witness.
"""

from __future__ import annotations

from collections.abc import Sequence

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.engines.exact import stuck_proof
from rwtoolkit.io import STUCK_WORDS, Verdict
from rwtoolkit.tasks import Task


def stuck_certificate(ident: str, statement: str, cases: Sequence[tuple[str, Task, str, str]]) -> Certificate:
    """``cases``: (name, task, model, route), route "symmetry" or "average": what must explain the proof."""
    details, failures, verdicts = {}, [], []
    for name, task, model, explained_by in cases:
        report = stuck_proof(task, model)
        verdict = STUCK_WORDS.verdict(report["verdict"])
        route = "symmetry" if report["symmetry"]["stuck_for_all_t"] else "average"
        details[name] = {
            "model": model,
            "verdict": report["verdict"],
            "why": report["why"],
            "group_order": report["group"]["order"],
            "route": route,
            "symmetry": report["symmetry"]["line"],
            "trajectory": report["trajectory"].get("line", report["trajectory"]["outcome"]),
            "comparison": report["comparison"],
        }
        # evidence for T steps, or a proof by the other route than the statement's, leaves it unproved
        proved = verdict is Verdict.PROVED and route == explained_by
        verdicts.append(verdict if proved or verdict is Verdict.REFUTED else Verdict.INCONCLUSIVE)
        if not proved:
            failures.append({"case": name, **details[name]})
    return Certificate(
        id=ident,
        statement=statement,
        scope=f"{len(cases)} cases: "
        + ", ".join(case[0] for case in cases)
        + "; every η, every loss, every μ > 0",
        method="symbolic proof",
        verdict=Verdict.combine(verdicts),
        witness=failures[0] if failures else None,
        details=details,
    )
