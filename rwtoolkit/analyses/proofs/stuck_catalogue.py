"""The catalogue's other stuck tasks: QA Task 2 by its symmetry; first_of_two and permutation by an
uninformative average that their symmetry does not explain.

For the last two the symmetry groups fix subspaces whose points can tell inputs apart; what keeps GD at
chance is the smaller subspace the trajectory spans, which one exact step maps into itself for every η,
loss and μ.
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._stuck import stuck_certificate
from rwtoolkit.tasks import first_of_two_task, permutation_task, qa_task2

ID = "stuck-catalogue"
STATEMENT = (
    "QA Task 2 (by symmetry), first_of_two, permutation (by the trajectory's span): "
    "GD from zero is at chance for every t (any η, loss, μ)"
)


def certify(quick: bool = False) -> Certificate:
    tasks = [
        ("QA Task 2", qa_task2(), "symmetry"),
        ("first_of_two L=3", first_of_two_task(3), "average"),
        ("permutation 3", permutation_task(3, 1), "average"),
    ]
    cases = [
        (f"{name} {m}", task, m, route) for name, task, route in tasks for m in ("one_layer", "key_query")
    ]
    return stuck_certificate(ID, STATEMENT, cases)
