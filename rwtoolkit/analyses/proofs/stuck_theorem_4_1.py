"""Theorem 4.1's stuck cases by symmetry: circle walks with p ∈ {0, 1} and N = rK + 1 stay at chance for every t.

The task's symmetry group (rotations, and the shift of key positions that a deterministic walk cannot tell
from a rotation) fixes a subspace that one exact GD step maps into itself for every η, every loss and every
μ, and on which every input gets the same scores: by induction, GD from zero is at chance for every t.
Both the paper's model and the separate key-query model (docs/guide/models.md).
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._stuck import stuck_certificate
from rwtoolkit.tasks import CircleWalk

ID = "stuck-4.1"
STATEMENT = "p∈{0,1}, N=rK+1: the task's symmetry proves GD from zero at chance for every t (any η, loss, μ)"


def certify(quick: bool = False) -> Certificate:
    grid = [(3, 1), (4, 1)] if quick else [(3, 1), (4, 1), (5, 1), (3, 2)]
    cases = [
        (f"K={K} N={r * K + 1} p={p} {model}", CircleWalk(K, r * K + 1, p), model, "symmetry")
        for K, r in grid
        for p in (0, 1)
        for model in ("one_layer", "key_query")
    ]
    return stuck_certificate(ID, STATEMENT, cases)
