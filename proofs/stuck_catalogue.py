"""The catalogue's other stuck tasks: first_of_two and permutation, stuck for every t by an uninformative
average that their symmetry does not explain.

Their symmetry groups fix subspaces whose points can tell inputs apart; what keeps GD at chance is the
smaller subspace the trajectory spans, which one exact step maps into itself for every η, loss and μ.
"""

from __future__ import annotations

from proofs._certificate import Certificate
from proofs._stuck import stuck_certificate
from rwtasks import first_of_two_task, permutation_task

ID = "stuck-catalogue"
STATEMENT = "first_of_two, permutation: GD from zero is at chance for every t (any η, loss, μ), by the trajectory's span"


def certify(quick: bool = False) -> Certificate:
    tasks = [("first_of_two L=3", first_of_two_task(3)), ("permutation 3", permutation_task(3, 1))]
    cases = [(f"{name} {m}", task, m) for name, task in tasks for m in ("one_layer", "key_query")]
    return stuck_certificate(ID, STATEMENT, cases, explained_by="average")
