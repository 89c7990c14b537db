"""K = 4, p = 1/2, N odd: stuck at chance for every t, proved by the task's symmetry.

On the 4-cycle with p = 1/2 each step lands uniformly on one of the two nodes of the other parity, a law
with far more symmetry than the rotations (order 256 at N = 5); its fixed subspace is invariant under
every GD step and predicts the same for every input.
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._stuck import stuck_certificate
from rwtoolkit.tasks import CircleWalk

ID = "stuck-K4"
STATEMENT = (
    "K=4, p=1/2, N odd: the task's symmetry proves GD from zero at chance for every t (any η, loss, μ)"
)


def certify(quick: bool = False) -> Certificate:
    lengths = (3, 5) if quick else (3, 5, 7)
    cases = [
        (f"K=4 N={N} p=1/2 {m}", CircleWalk(4, N, "1/2"), m, "symmetry")
        for N in lengths
        for m in ("one_layer", "key_query")
    ]
    return stuck_certificate(ID, STATEMENT, cases)
