"""docs/theory.md#reduction: from zero init the trajectory depends on P only through its Gram matrix PᵀP, so every P
with pairwise orthogonal columns of equal squared norm μ gives the same V(t) and attention S(t).

Argument (all sizes): by Lemma B.1 every W-update is u·x̃_Nᵀ with u ∈ span(columns of X̃), so W(t) =
Σ_s u_s x̃_Nᵀ and each logit x̃_jᵀW(t)x̃_N is a polynomial in the inner products x̃_iᵀx̃_j = x_iᵀx_j + p_iᵀp_j;
V's update uses only X, S and V. Exact verification: exact population GD (log-loss, η = 1, ε = 1/10) with P = √μ·I_N and with P = √μ·Q_{:, :N} for a rational orthogonal Q (Cayley transform of a
rational skew-symmetric matrix, M = N + 1) give identical V(0..3) and S(0..2) with μ symbolic (V(t+1)
depends on P only through S(t); the logits at θ(0..2) are compared exactly). The premise
matters: orthogonal columns of unequal norms change V(2) (witness recorded).
"""

from __future__ import annotations

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import gd_step
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "Gram"
STATEMENT = (
    "from zero init V(t), S(t) depend on P only through PᵀP: all P with orthogonal columns of norm² μ agree"
)

SQRT_MU = sp.Symbol("sqrt_mu", positive=True)


def cayley_orthogonal(M: int) -> sp.Matrix:
    """A rational orthogonal M×M matrix (I − A)(I + A)^{−1} with A skew-symmetric and rational."""
    A = sp.Matrix(M, M, lambda i, j: sp.Rational(i - j, 1 + i + j) if i != j else 0)
    A = (A - A.T) / 2
    return (sp.eye(M) - A) * (sp.eye(M) + A).inv()


def trajectory(K: int, N: int, p: str, P: sp.Matrix | None, steps: int) -> list[tuple[sp.Matrix, list]]:
    """[(V(t), logits X̃ᵀW(t)x̃_N per input)] for t = 0..steps."""
    pop = CircleWalk(K, N, p).population()
    M = N if P is None else P.rows
    V, W = sp.zeros(K, K), sp.zeros(K + M, K + M)
    out = []
    eps = sp.Rational(1, 10)
    for _ in range(steps + 1):
        step = gd_step(pop, V, W, lambda z: -1 / (z + eps), 1, 1, SQRT_MU, P)
        out.append((V, step.logits))
        V, W = step.V, step.W
    return out


def differences(a: list[tuple[sp.Matrix, list]], b: list[tuple[sp.Matrix, list]]) -> list[str]:
    """Where two trajectories differ: V(t) entries or logits at θ(t) (rational in √μ: exact test)."""
    bad = []
    for t, ((Va, La), (Vb, Lb)) in enumerate(zip(a, b)):
        if any(sp.cancel(x - y) != 0 for x, y in zip(Va, Vb)):
            bad.append(f"V({t})")
        if any(sp.cancel(x - y) != 0 for la, lb in zip(La, Lb) for x, y in zip(la, lb)):
            bad.append(f"logits({t})")
    return bad


def certify(quick: bool = False) -> Certificate:
    """(K, N, p) = (3, 3, 1/3) quick; also (4, 3, 2/3) full; V(0..3), S(0..2), μ symbolic."""
    cases = [(3, 3, "1/3")] if quick else [(3, 3, "1/3"), (4, 3, "2/3")]
    # P first matters at S(2) (W(1) = 0, so S(0) = S(1) are uniform). V(t+1) is a function of V(t), X and
    # S(t) = softmax(logits(t)); so equal V(0..2) and logits(0..2) give equal V(0..3) and S(0..2). These
    # are rational in √μ (no exponentials yet), so the comparison is exact and fast.
    steps = 2
    failures = []
    for K, N, p in cases:
        Q = cayley_orthogonal(N + 1)
        if Q.T * Q != sp.eye(N + 1):  # rational and exactly orthogonal, or the comparison proves nothing
            raise RuntimeError(f"the Cayley transform of size {N + 1} is not exactly orthogonal")
        reference = trajectory(K, N, p, None, steps)
        rotated = trajectory(K, N, p, SQRT_MU * Q[:, :N], steps)
        if bad := differences(reference, rotated):
            failures.append({"K": K, "N": N, "p": p, "differs at": bad})
    K, N, p = cases[0]
    unequal = sp.diag(*[SQRT_MU * (1 + sp.Rational(i, 2)) for i in range(N)])  # orthogonal, norms differ
    control = differences(trajectory(K, N, p, None, steps), trajectory(K, N, p, unequal, steps))
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"(K, N, p) ∈ {cases}, V(0..{steps + 1}) and S(0..{steps}), μ symbolic, M = N + 1 rational orthogonal Q vs M = N identity "
            "(argument for all sizes and T in the docstring)"
        ),
        method="exact verification over a finite range",
        verdict=Verdict.REFUTED if failures or not control else Verdict.HOLDS,
        witness=failures[0]
        if failures
        else {"orthogonal but unequal norms (1, 3/2, 2)·√μ": f"differs at {control}"},
    )
