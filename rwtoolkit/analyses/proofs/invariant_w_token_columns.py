"""The W11 = W21 = 0 invariant (docs/theory.md#reduction): the first K columns of W never change under GD, so from
zero init W11(t) = W21(t) = 0 for every t, any loss, any step sizes and any task.

Symbolic proof: the logits X̃ᵀWx̃_N involve W only through Wx̃_N, and x̃_N = [0; p_N] has zero token part,
so ∂ℓ/∂W_{ij} = 0 for j ≤ K identically. Checked by SymPy differentiation of ℓ(e_yᵀf) (ℓ undefined) with
every entry of V, W, X (generic tokens, last column 0), P symbolic at the declared sizes; for general
sizes the same one-line argument applies. Then by induction GD subtracts η·0 from those columns.
Exact trajectory checks: the full-coordinate exact population GD (``_exact_gd``, log-loss, η = 1,
ε = 1/10, μ = 1) keeps W's first K columns exactly 0 from zero init, and exactly unchanged from a
rational init with nonzero W11, W21, for T steps.
"""

from __future__ import annotations

import itertools

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import gd_step
from rwtoolkit.analyses.proofs.lemma_b1_gradients import symbol_matrix
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "W11=W21=0"
STATEMENT = "∂ℓ/∂W[:, :K] ≡ 0 (x̃_N has no token part), so the first K columns of W never move: W11(t)=W21(t)=0 from zero init"


def symbolic_zero_columns(K: int, M: int, N: int) -> list[tuple[int, int]]:
    """Entries (i, j), j < K, where SymPy's ∂ℓ(e_0ᵀf)/∂W_ij is not identically 0."""
    V, W = symbol_matrix("V", K, K), symbol_matrix("W", K + M, K + M)
    X = symbol_matrix("x", K, N).copy()
    X[:, N - 1] = sp.zeros(K, 1)
    Xt = X.col_join(symbol_matrix("P", M, N))
    logits = Xt.T * W * Xt[:, N - 1]
    E = [sp.exp(a) for a in logits]
    f = V * X * sp.Matrix(E) / sp.Add(*E)
    loss = sp.Function("ell")(f[0])
    return [(i, j) for i, j in itertools.product(range(K + M), range(K)) if sp.diff(loss, W[i, j]) != 0]


def trajectory_columns(K: int, N: int, p: str, steps: int, init_w: bool) -> list[dict]:
    """Run exact GD; return the steps where W's first K columns differ from their initial value."""
    pop = CircleWalk(K, N, p).population()
    V = sp.zeros(K, K)
    W = sp.zeros(K + N, K + N)
    if init_w:  # a rational init with nonzero first K columns (and a nonzero rest)
        W = sp.Matrix(K + N, K + N, lambda i, j: sp.Rational((3 * i + 5 * j) % 7 - 3, 10))
    first = W[:, :K]
    bad = []
    eps = sp.Rational(1, 10)
    for t in range(1, steps + 1):
        step = gd_step(pop, V, W, lambda z: -1 / (z + eps), 1, 1, sp.Integer(1))
        V, W = step.V, step.W
        if W[:, :K] != first:
            bad.append({"K": K, "N": N, "p": p, "t": t, "init": "rational" if init_w else "zero"})
    return bad


def certify(quick: bool = False) -> Certificate:
    """Symbolic sizes (2,2,3) [+ (3,2,3), (2,3,4) full]; exact trajectories for T = 2 steps."""
    sizes = [(2, 2, 3)] if quick else [(2, 2, 3), (3, 2, 3), (2, 3, 4)]
    steps = 2  # the exact exp-expressions grow quickly: T = 3 from a rational init takes minutes
    failures: list[dict] = []
    for K, M, N in sizes:
        failures += [
            {"K": K, "M": M, "N": N, "nonzero derivative at W": e} for e in symbolic_zero_columns(K, M, N)
        ]
    for init_w in (False, True):
        failures += trajectory_columns(3, 3, "1/3", steps, init_w)
    if not quick:
        failures += trajectory_columns(4, 4, "1/3", steps, False)
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"symbolic: (K, M, N) ∈ {sizes}, all entries symbolic, ℓ undefined (argument for all sizes in the "
            f"docstring); exact trajectories: K = N = 3, p = 1/3, T = {steps}, zero and rational init"
            + ("" if quick else f"; K = N = 4, zero init, T = {steps}")
        ),
        method="symbolic proof",
        verdict=Verdict.REFUTED if failures else Verdict.PROVED,
        witness=failures[0] if failures else None,
    )
