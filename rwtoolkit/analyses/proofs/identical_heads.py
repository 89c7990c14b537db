"""Identical heads stay identical: in the H-head model (rwtoolkit.models.multi_head), the set where every head is
the same is invariant under gradient descent, for every η, every loss and every μ.

A permutation of the heads maps the population loss to itself, so the gradient at a point with identical
heads has identical heads too. The exact induction step (``rwtoolkit.engines.exact.induction_step`` on
``rwtoolkit.engines.exact.identical_heads``) proves it for each case; from the zero initialisation (all heads zero) the
heads are then identical for every t, and the H-head model is the one-head model with its V summed.

The claim is the zoo's ``identical_heads`` (``rwtoolkit.analyses.zoo``), decided by the same code at this
certificate's cases (tasks with a symmetric first_of_two, heads H = 2 and 3).
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.zoo import identical_heads_subspace, invariance_steps
from rwtoolkit.io import DECISION_WORDS, Verdict
from rwtoolkit.tasks import CircleWalk, Task, first_of_two_task

ID = "heads"
STATEMENT = "multi-head model: identical heads stay identical under GD, for every η, loss and μ (so for every t from zero)"


def certify(quick: bool = False) -> Certificate:
    """The zoo's claim ``identical_heads`` (``rw zoo claims --claim identical_heads``) at this certificate's cases."""
    tasks: list[tuple[str, Task]] = [
        ("circle K=3 N=4 p=3/10", CircleWalk(3, 4, "3/10")),
        ("first_of_two L=3", first_of_two_task(3)),
    ]
    if not quick:
        tasks.append(("circle K=4 N=5 p=1/2", CircleWalk(4, 5, "1/2")))
    heads = [{"name": "multi_head", "H": H} for H in ((2,) if quick else (2, 3))]
    details, failures, verdicts = {}, [], []
    for name, model, result in invariance_steps(tasks, heads, identical_heads_subspace):
        case = f"{name}, H={model.H}"
        details[case] = result.line()
        verdicts.append(DECISION_WORDS.verdict(result.outcome))
        if verdicts[-1] is not Verdict.PROVED:
            failures.append({"case": case, "outcome": result.outcome, "reason": result.reason})
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"{len(details)} cases: " + ", ".join(details) + "; every η, every loss, every μ > 0",
        method="symbolic proof",
        verdict=Verdict.combine(verdicts),
        witness=failures[0] if failures else None,
        details=details,
    )
