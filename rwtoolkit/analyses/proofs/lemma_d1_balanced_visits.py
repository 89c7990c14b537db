"""Lemma D.1 (our reading, stated in docs/theory.md#manifold; the paper's wording is not quoted): for p ∈ {0, 1}
and N = rK+1 every walk visits each node exactly r times among s_1..s_{N−1}, so Σ_{i<N} x_i = r·1 and
x̄ = 1/K·1 for every input; hence the token-average signal C = 0.

Proof for all K, r: the visited nodes are <s_1 ± (i−1)>, i = 1..rK: rK consecutive integers, which meet
every residue mod K exactly r times. Verified exactly on the populations for K = 3..K_max, r = 1..r_max,
and the condition is shown to be needed: for N − 1 not a multiple of K some node is visited
⌈(N−1)/K⌉ times and another ⌊(N−1)/K⌋ times (witness recorded).
"""

from __future__ import annotations

import numpy as np

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "D.1"
STATEMENT = "p∈{0,1}, N=rK+1: every walk visits each node exactly r times among x_1..x_{N−1} (x̄ = 1/K·1)"


def visit_counts(K: int, N: int, p: int) -> np.ndarray:
    """(walks, K) visit counts of each node among the tokens of every walk of positive probability.

    Up to 2^16 enumerated walks the exact population of ``rwtoolkit.tasks`` is used; beyond, the K walks of
    positive probability are built directly as s_i = <s_1 ± (i−1)> (the population enumerates all
    K·2^(N−1) sign patterns before dropping the zero-probability ones).
    """
    walk = CircleWalk(K, N, p)
    if walk.walk_count <= 2**16:
        tokens = walk.population().tokens
    else:
        step = 1 if p == 1 else -1
        tokens = (np.arange(K)[:, None] + step * np.arange(N - 1)[None, :]) % K
    return (tokens[:, :, None] == np.arange(K)[None, None, :]).sum(axis=1)  # (walks, K)


def certify(quick: bool = False) -> Certificate:
    """Exact counts on every population in the range, plus the necessity witness."""
    k_max, r_max = (8, 3) if quick else (16, 6)
    failures = []
    for K in range(3, k_max + 1):
        for r in range(1, r_max + 1):
            for p in (0, 1):
                counts = visit_counts(K, r * K + 1, p)
                if not (counts == r).all():
                    failures.append({"K": K, "r": r, "p": p, "counts": counts[0].tolist()})
    unbalanced = visit_counts(5, 8, 1)[0].tolist()  # N − 1 = 7 = 5 + 2: not a multiple of K
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"all K, r (argument in the docstring); exact populations for K = 3..{k_max}, r = 1..{r_max}, p ∈ {{0,1}}",
        method="exact verification over a finite range",
        verdict=Verdict.REFUTED if failures else Verdict.HOLDS,
        witness=failures[0] if failures else {"N-1 not a multiple of K (K=5, N=8, p=1), counts": unbalanced},
    )
