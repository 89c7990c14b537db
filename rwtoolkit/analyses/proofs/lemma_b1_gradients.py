"""Lemma B.1: for one input, with S = S(X̃ᵀWx̃_N) and g = ℓ'(e_yᵀf),
∇_V ℓ = g·e_y(XS)ᵀ and ∇_W ℓ = g·X̃(diag(S) − SSᵀ)XᵀVᵀe_y·x̃_Nᵀ.

Symbolic proof for given sizes (K, M, N) and every label y: every entry of V, W, X (tokens as generic
real vectors, last column 0) and P is an independent real symbol, and ℓ is an undefined SymPy function,
so the check is for all parameter values, all inputs and every differentiable loss. SymPy differentiates
ℓ(e_yᵀf) with respect to each entry of V and W; after writing e^{a_n} as positive symbols the difference to
the formula is a rational function whose numerator must expand to 0. ℓ' appears in SymPy's result as
Subs(ℓ'(ξ), ξ, z); the certificate checks its evaluation point is z = e_yᵀf before naming it g.
Consequence checked at the same time: ∇_W ℓ = (vector)·x̃_Nᵀ, so its first K columns are 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import sympy as sp

from rwtoolkit.analyses.proofs._certificate import Certificate
from rwtoolkit.io import Verdict

ID = "B.1"
STATEMENT = "∇_V ℓ = g e_y (XS)ᵀ,  ∇_W ℓ = g X̃ (diag S − S Sᵀ) Xᵀ Vᵀ e_y x̃_Nᵀ  (g = ℓ'(e_yᵀ f), any ℓ)"


def symbol_matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}_{j}", real=True))


def check(
    K: int,
    M: int,
    N: int,
    y: int,
    formula_v: Callable[[], sp.Matrix] | None = None,
    formula_w: Callable[[], sp.Matrix] | None = None,
) -> list[dict]:
    """Differences between SymPy's gradients and the formulas (empty list = all entries agree).

    ``formula_v``/``formula_w`` replace the printed formulas (used to show the check can fail).
    """
    V, W = symbol_matrix("V", K, K), symbol_matrix("W", K + M, K + M)
    X = symbol_matrix("x", K, N).copy()
    X[:, N - 1] = sp.zeros(K, 1)  # the query slot carries no token
    P = symbol_matrix("P", M, N)
    Xt = X.col_join(P)  # X̃, (K+M)×N
    xN = Xt[:, N - 1]
    logits = Xt.T * W * xN  # (N,1)
    E = [sp.exp(a) for a in logits]
    pos = [sp.Symbol(f"E{n}", positive=True) for n in range(N)]
    S = sp.Matrix(E) / sp.Add(*E)
    f = V * X * S
    z = f[y]
    ell = sp.Function("ell")
    g = sp.Symbol("g")
    loss = ell(z)
    # the formulas, with g the value ℓ'(z) and S written through the positive symbols
    Ssym = sp.Matrix(pos) / sp.Add(*pos)
    ey = sp.zeros(K, 1)
    ey[y] = 1
    grad_v = (formula_v or (lambda: g * ey * (X * Ssym).T))()
    grad_w = (formula_w or (lambda: g * Xt * (sp.diag(*Ssym) - Ssym * Ssym.T) * X.T * V.T * ey * xN.T))()
    back = dict(zip(E, pos))
    failures = []

    def compare(param: sp.Symbol, expected: sp.Expr, where: tuple) -> None:
        got = sp.diff(loss, param)
        subs_terms = got.atoms(sp.Subs)
        for s in subs_terms:
            if s.point != (z,):
                raise RuntimeError(f"ℓ' is evaluated at {s.point}, not at e_yᵀf")
        got = got.xreplace({s: g for s in subs_terms}).xreplace(back)
        num = sp.numer(sp.together(got - expected))
        if sp.expand(num) != 0:
            failures.append({"K": K, "M": M, "N": N, "y": y, "entry": str(where)})

    for i, j in itertools.product(range(K), range(K)):
        compare(V[i, j], grad_v[i, j], ("V", i, j))
    for i, j in itertools.product(range(K + M), range(K + M)):
        compare(W[i, j], grad_w[i, j], ("W", i, j))
    if any(grad_w[i, j] != 0 for i in range(K + M) for j in range(K)):
        failures.append({"K": K, "M": M, "N": N, "y": y, "entry": "first K columns of the W formula not 0"})
    return failures


def certify(quick: bool = False) -> Certificate:
    """Sizes (K, M, N): (2, 2, 3) quick; also (3, 2, 3) and (2, 3, 4) in full; labels y = 0 and y = K−1."""
    sizes = [(2, 2, 3)] if quick else [(2, 2, 3), (3, 2, 3), (2, 3, 4)]
    failures = []
    for K, M, N in sizes:
        for y in sorted({0, K - 1}):
            failures += check(K, M, N, y)
    return Certificate(
        id=ID,
        statement=STATEMENT,
        scope=(
            f"(K, M, N) ∈ {sizes}, labels y ∈ {{0, K−1}}; all entries of V, W, X (generic, last column 0), P "
            "symbolic; ℓ an undefined function (any differentiable loss)"
        ),
        method="symbolic proof",
        verdict=Verdict.REFUTED if failures else Verdict.PROVED,
        witness=failures[0] if failures else None,
        details={"entries_compared": sum(K * K + (K + M) ** 2 for K, M, N in sizes) * 2},
    )
