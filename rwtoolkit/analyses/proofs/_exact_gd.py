"""An independent exact population gradient step in full coordinates (V, W), for the certificates.

Per input the gradients are those of Lemma B.1 (certified against SymPy differentiation by
``lemma_b1_gradients``); expectations are exact sums over ``task.population()`` with SymPy
probabilities. Positional embeddings are P = √μ·I_N (M = N): orthogonal with equal squared norm μ, and
the dynamics depend on P only through PᵀP = μI (docs/theory.md#reduction). This code shares nothing with
``rwtoolkit.engines.exact`` (which works in reduced coordinates), so the two can check each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from rwtoolkit.tasks import Population


@dataclass
class StepResult:
    """θ after one GD step and the per-input quantities at θ before the step."""

    V: sp.Matrix
    W: sp.Matrix
    S: list[sp.Matrix]  # attention (N×1) per input
    logits: list[sp.Matrix]  # X̃ᵀWx̃_N (N×1) per input
    z: list[sp.Expr]  # e_yᵀ f per input
    grad_V: sp.Matrix
    grad_W: sp.Matrix


def embed(
    pop: Population, n: int, sqrt_mu: sp.Expr, P: sp.Matrix | None = None
) -> tuple[sp.Matrix, sp.Matrix]:
    """X (K×N, last column 0) and X̃ = [X; P] of input n, P = √μ I_N unless given (M×N)."""
    K, N = pop.K, pop.N
    X = sp.zeros(K, N)
    for i, tok in enumerate(pop.tokens[n]):
        X[int(tok), i] = 1
    return X, X.col_join(sqrt_mu * sp.eye(N) if P is None else P)


def gd_step(
    pop: Population,
    V: sp.Matrix,
    W: sp.Matrix,
    dloss: Callable[[sp.Expr], sp.Expr],
    eta_v: sp.Expr,
    eta_w: sp.Expr,
    sqrt_mu: sp.Expr,
    P: sp.Matrix | None = None,
) -> StepResult:
    """V ← V − η_V E[∇_V ℓ], W ← W − η_W E[∇_W ℓ] over the exact population (Lemma B.1 gradients).

    ``P`` (M×N) replaces the default positional embeddings √μ·I_N; W is then (K+M)×(K+M).
    """
    K, N = pop.K, pop.N
    probs = pop.exact_probs()
    M = N if P is None else P.rows
    gV, gW = sp.zeros(K, K), sp.zeros(K + M, K + M)
    S_all, z_all, logit_all = [], [], []
    for n in range(pop.size):
        X, Xt = embed(pop, n, sqrt_mu, P)
        xN = Xt[:, N - 1]
        logits = Xt.T * W * xN  # (N,1)
        E = logits.applyfunc(sp.exp)
        S = E / sum(E)
        y = int(pop.labels[n])
        XS = X * S
        z = (V * XS)[y]
        g = dloss(z)
        ey = sp.zeros(K, 1)
        ey[y] = 1
        gV += probs[n] * g * ey * XS.T
        gW += probs[n] * g * (Xt * (sp.diag(*S) - S * S.T) * X.T * V.T * ey) * xN.T
        S_all.append(S)
        z_all.append(z)
        logit_all.append(logits)
    return StepResult(V - eta_v * gV, W - eta_w * gW, S_all, logit_all, z_all, gV, gW)


def is_zero(expr: sp.Expr) -> bool:
    """Exact zero test for the expressions here (rational functions of exponentials and symbols)."""
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    return sp.simplify(sp.together(sp.expand(expr))) == 0
