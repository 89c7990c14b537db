"""Theorem 4.1 at the paper's scale (Fig 5 data): p = 1, K = 6, N = 97 = 16·6 + 1, sine embeddings with
M = 1000 (μ = 500), the 1000 training walks ``rw train --seed 0`` samples, log-loss with ε = 1/10, η = 1.

Claim: along the exact GD trajectory from zero init, for every step t ≤ T (T = 50, the figure's
horizon; 10 in quick mode), every input has S_1 = … = S_{N−1} and f(X) = (1 − S_N(X))·a(t) with a(t)
independent of X, so every input gets the same prediction and the population accuracy is exactly 1/K.

Method: ``rwtoolkit.engines.balls.certify`` (python-flint balls). The Gram matrix of the sine embeddings is enclosed
entry by entry and checked to contain (M/2)·I (Lemma E.5) before that identity is used. The engine
stores the differences w_tok[k] − w_tok[0], c_j − c_1 and V[y, k] − V[y, 0]; each of their updates is a
sum of products with a difference factor, so an exactly-zero difference stays the ball {0} (radius 0).
"Verified" means these balls are exactly {0} at every step, which is the claim; it is not a float
tolerance. A sampled training set is not rotation invariant (the labels are not balanced), so V(t) is
not ∝ 1 as on the population (the symbolic certificate ``theorem_4_1_failure``); its rows are constant
instead, which is what the failure needs. Contrast (details): a float64 ``rwtoolkit.engines.numeric`` run with the
computed Gram leaves this enclosure within the horizon; ``rw certify`` reports where.
"""

from __future__ import annotations

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "4.1 (Fig 5)"
STATEMENT = (
    "p=1, K=6, N=97, M=1000, 1000 sampled walks (seed 0), η=1, ε=1/10: for every t ≤ T, S_1(t)=…=S_{N−1}(t) "
    "for every input and the prediction is the same for every input (population accuracy 1/K)"
)


def certify(quick: bool = False) -> Certificate:
    """Run the certified engine at the Fig 5 setting and read off the two Theorem 4.1 statements."""
    from rwtoolkit.engines.balls import certify as certify_trajectory

    steps = 10 if quick else 50
    cert = certify_trajectory(
        CircleWalk(6, 97, 1),
        M=1000,
        eta=1,
        eps="1/10",
        steps=steps,
        train_size=1000,
        test_size=1000,
        seed=0,
        record_steps={steps},
    )
    chosen = {s.name: s for s in cert.statements if s.name in ("equal_attention", "chance")}
    verdict = Verdict.combine(s.outcome for s in chosen.values())
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=f"T = {steps} steps; the Fig 5 training set (1000 walks, {cert.config['distinct_train_inputs']} distinct); "
        f"{cert.trajectory.prec}-bit balls",
        method="certified ball arithmetic",
        verdict=verdict,
        witness=None if verdict.passed else {n: s.to_json() for n, s in chosen.items()},
        details={
            "statements": [s.to_json() for s in chosen.values()],
            "gram": cert.gram.to_json(),
            "precision": cert.attempts,
        },
    )
