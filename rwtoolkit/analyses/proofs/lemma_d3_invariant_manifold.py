"""Lemma D.3 (invariant manifold): for p ∈ {0, 1} and N = rK+1, the set
  V = α1·1_{K×K},  W11 = W21 = 0,  W12 = α2·1_K p_Nᵀ,  W22 = (α3 Σ_{i<N} p_i − α4 p_N) p_Nᵀ
is mapped into itself by one population GD step, for every α1..α4, every step sizes η_V, η_W (they
may differ and change from step to step), every μ > 0 and every differentiable loss.

Symbolic proof for given (K, r, p): α1..α4, η_V, η_W, √μ and ℓ' (an undefined function ``dell``) are
symbols; the step uses the Lemma B.1 gradients summed exactly over the population (``_exact_gd``,
P = √μ·I_N; the dynamics depend on P only through PᵀP = μI). The new V, W are checked to have the same
form (all entries of V equal; W's first K columns and all but its last column 0; the last column
constant on the token rows and on the positional rows i < N) by exact simplification to 0. The proof
also records that on the manifold every input has S_1 = … = S_{N−1}.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.analyses.proofs._exact_gd import gd_step, is_zero
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

ID = "D.3"
STATEMENT = (
    "p∈{0,1}, N=rK+1: {V=α1·1, W11=W21=0, W12=α2·1p_Nᵀ, W22=(α3Σ_{i<N}p_i−α4p_N)p_Nᵀ} is invariant under "
    "one GD step, any η_V, η_W, μ, loss"
)

A = sp.symbols("alpha1:5", real=True)
ETA_V, ETA_W = sp.symbols("eta_V eta_W", positive=True)
SQRT_MU = sp.Symbol("sqrt_mu", positive=True)
DELL = sp.Function("dell")  # ℓ', abstract


def manifold_point(
    K: int, N: int, alphas: Sequence[sp.Expr] = A, sqrt_mu: sp.Expr = SQRT_MU
) -> tuple[sp.Matrix, sp.Matrix]:
    """(V, W) of Lemma D.3 with P = √μ·I_N (M = N); W is (K+N)×(K+N)."""
    a1, a2, a3, a4 = alphas
    V = a1 * sp.ones(K, K)
    W = sp.zeros(K + N, K + N)
    last = K + N - 1
    for i in range(K):
        W[i, last] = a2 * sqrt_mu  # W12 = α2·1_K p_Nᵀ, p_N = √μ e_N
    for i in range(N - 1):
        W[K + i, last] = a3 * sqrt_mu**2  # (α3 Σ_{i<N} p_i) p_Nᵀ
    W[last, last] = -a4 * sqrt_mu**2  # −α4 p_N p_Nᵀ
    return V, W


def off_manifold(K: int, N: int, V: sp.Matrix, W: sp.Matrix) -> list[str]:
    """Which defining equations of the manifold (V, W) violates (empty: it is on the manifold)."""
    bad = []
    last = K + N - 1
    if not all(is_zero(V[i, j] - V[0, 0]) for i in range(K) for j in range(K)):
        bad.append("V not proportional to 1")
    if not all(is_zero(W[i, j]) for i in range(K + N) for j in range(last)):
        bad.append("W has a nonzero column other than the last (W11, W21 or off-p_N part)")
    if not all(is_zero(W[i, last] - W[0, last]) for i in range(K)):
        bad.append("W12 not proportional to 1_K p_N^T")
    if not all(is_zero(W[K + i, last] - W[K, last]) for i in range(N - 1)):
        bad.append("W22 not of the form (a Σ_{i<N} p_i − b p_N) p_N^T")
    return bad


def check(
    K: int,
    r: int,
    p: int,
    dloss: Callable[[sp.Expr], sp.Expr] | None = None,
    point: tuple[sp.Matrix, sp.Matrix] | None = None,
) -> dict | None:
    """One GD step from the manifold point; None when the image is on the manifold, else a witness."""
    N = r * K + 1
    pop = CircleWalk(K, N, p).population()
    V, W = point or manifold_point(K, N)
    step = gd_step(pop, V, W, dloss or (lambda z: DELL(z)), ETA_V, ETA_W, SQRT_MU)
    bad = off_manifold(K, N, step.V, step.W)
    equal_attention = all(is_zero(S[n] - S[0]) for S in step.S for n in range(N - 1))
    if not equal_attention:
        bad.append("attention not equal on the N-1 tokens")
    return {"K": K, "r": r, "p": p, "violations": bad} if bad else None


def certify(quick: bool = False) -> Certificate:
    """(K, r) ∈ {(3,1),(4,1)} quick; also (3,2),(5,1),(6,1),(4,2) full; p ∈ {0, 1}."""
    cases = [(3, 1), (4, 1)] if quick else [(3, 1), (4, 1), (5, 1), (6, 1), (3, 2), (4, 2)]
    failures = [w for K, r in cases for p in (0, 1) if (w := check(K, r, p))]
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"(K, r) ∈ {cases}, p ∈ {{0, 1}}; α1..α4, η_V, η_W, √μ symbolic (all values), ℓ' abstract; "
            "P = √μ·I_N (any orthogonal equal-norm P gives the same step, docs/theory.md#reduction)"
        ),
        method="symbolic proof",
        verdict=Verdict.REFUTED if failures else Verdict.PROVED,
        witness=failures[0] if failures else None,
    )
