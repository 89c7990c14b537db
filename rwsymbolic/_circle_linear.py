"""Exact first moments of circle walks from the Markov structure (transfer matrices), not enumeration.

Π is circulant, so Π^m is circulant too: [Π^m]_{ij} = c_m[(j - i) mod K], where c_m[d] is the law of
the displacement s_{i+m} - s_i (mod K) after m steps. The recurrence
c_{m+1}[d] = p·c_m[d-1] + (1-p)·c_m[d+1] gives every power in O(K) polynomial operations per step,
so Σ_{m<N} Π^m costs O(N·K) operations on polynomials of degree < N instead of K·2^(N-1) walks.

Because s_1 is uniform and the uniform law is stationary (Π is doubly stochastic), every token is
uniform, P(s_i = b) = 1/K, and

    E[e_y x_iᵀ]_{ab} = P(s_N = a, s_i = b) = (1/K)·[Π^(N-i)]_{ba} = (1/K)·[(Πᵀ)^(N-i)]_{ab}.

Indices in code are 0-based (node k is MATH.md's node k+1); positions i are 1-based as in MATH.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
from sympy import QQ
from sympy.polys.rings import ring

from rwtasks import CircleWalk, is_numeric

#: Largest N (number of walk steps + 1) the structured expectations accept. The work is O(N²·K)
#: coefficient operations with symbolic p (about 0.1 s at K = 8, N = 64) and the entries are
#: polynomials of degree N - 1; beyond this the SymPy expressions themselves become the bottleneck.
MAX_STRUCTURED_N = 4096
#: Largest K accepted for the same reason (a K×K matrix of degree-(N-1) polynomials).
MAX_STRUCTURED_K = 512

# The polynomial ring QQ[t] in which powers of Π are computed when p is not a rational number;
# t is replaced by p when the result is turned into SymPy expressions.
_RING, _T = ring("t", QQ)


def _check_size(walk: CircleWalk) -> None:
    if walk.N > MAX_STRUCTURED_N:
        raise ValueError(
            f"N={walk.N} is too large for exact circle-walk expectations: N must be <= "
            f"{MAX_STRUCTURED_N} (the entries are polynomials of degree N-1; estimated work "
            f"~{walk.N**2 * walk.K:.2g} coefficient operations); use rwnumeric for larger N"
        )
    if walk.K > MAX_STRUCTURED_K:
        raise ValueError(
            f"K={walk.K} is too large for exact circle-walk expectations: K must be <= "
            f"{MAX_STRUCTURED_K}; use rwnumeric for larger K"
        )


@lru_cache(maxsize=64)
def _displacement_laws(K: int, max_steps: int, p: sp.Expr) -> tuple[tuple[sp.Expr, ...], ...]:
    """c_m[d] = P(s_{i+m} - s_i ≡ d mod K) for m = 0..max_steps, exact (cached per (K, steps, p))."""
    rational = is_numeric(p) and p.is_Rational
    if rational:
        step_cw, step_ccw = QQ(int(p.p), int(p.q)), QQ(int((1 - p).p), int((1 - p).q))
        zero, one = QQ(0), QQ(1)
    else:
        step_cw, step_ccw = _T, 1 - _T
        zero, one = _RING.zero, _RING.one
    law = [zero] * K
    law[0] = one
    laws = [law]
    for _ in range(max_steps):
        # One more step: +1 (clockwise) with probability p, -1 with probability 1 - p.
        law = [step_cw * law[(d - 1) % K] + step_ccw * law[(d + 1) % K] for d in range(K)]
        laws.append(law)
    if rational:
        return tuple(tuple(QQ.to_sympy(c) for c in law) for law in laws)
    if isinstance(p, sp.Symbol):
        return tuple(tuple(c.as_expr(p) for c in law) for law in laws)
    t = _RING.symbols[0].as_expr()
    return tuple(tuple(sp.expand(c.as_expr().subs(t, p)) for c in law) for law in laws)


def _circulant(first_row: list[sp.Expr] | tuple[sp.Expr, ...], transpose: bool = False) -> sp.Matrix:
    """The circulant matrix with [M]_{ij} = first_row[(j - i) mod K] (or (i - j) if ``transpose``)."""
    K = len(first_row)
    sign = -1 if transpose else 1
    return sp.Matrix(K, K, lambda i, j: first_row[(sign * (j - i)) % K])


def transition_power(walk: CircleWalk, m: int) -> sp.Matrix:
    """Π^m exactly, from the circulant displacement recurrence (m >= 0).

    >>> from rwtasks import CircleWalk
    >>> w = CircleWalk(3, 4, "p")
    >>> transition_power(w, 2) == (w.transition_matrix() ** 2).applyfunc(sp.expand)
    True
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 0:
        raise ValueError(f"m={m!r} must be an integer >= 0")
    _check_size(walk)
    return _circulant(_displacement_laws(walk.K, m, walk.p)[m])


def expected_label_token_outer(walk: CircleWalk, i: int) -> sp.Matrix:
    """E[e_y x_iᵀ] = (1/K)·(Πᵀ)^(N-i) for the 1-based token position i in 1..N-1 (K×K, exact).

    >>> from rwtasks import CircleWalk
    >>> expected_label_token_outer(CircleWalk(3, 2, 1), 1)
    Matrix([
    [  0,   0, 1/3],
    [1/3,   0,   0],
    [  0, 1/3,   0]])
    """
    N = walk.N
    if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= N - 1:
        raise ValueError(f"i={i!r} must be a token position in 1..N-1 = 1..{N - 1}")
    _check_size(walk)
    law = _displacement_laws(walk.K, N - i, walk.p)[N - i]
    return _circulant([c / walk.K for c in law], transpose=True)


def label_token_offsets(walk: CircleWalk) -> tuple[sp.Expr, ...]:
    """g_d with E[e_y (X·1_N)ᵀ]_{ab} = g_{(a-b) mod K}: g_d = (1/K) Σ_{m=1}^{N-1} c_m[d].

    The K distinct entries of the circulant matrix Σ_{i<N} E[e_y x_iᵀ] = (1/K) Σ_{m=1}^{N-1} (Πᵀ)^m,
    expanded polynomials in p.

    >>> from rwtasks import CircleWalk
    >>> label_token_offsets(CircleWalk(3, 3, "p"))
    (-2*p**2/3 + 2*p/3, p**2/3 - p/3 + 1/3, p**2/3 - p/3 + 1/3)
    """
    _check_size(walk)
    laws = _displacement_laws(walk.K, walk.N - 1, walk.p)
    return tuple(
        sp.expand(sp.Add(*(laws[m][d] for m in range(1, walk.N)))) / walk.K for d in range(walk.K)
    )


def label_token_sum(walk: CircleWalk) -> sp.Matrix:
    """E[e_y (X·1_N)ᵀ] = Σ_{i=1}^{N-1} E[e_y x_iᵀ] = (1/K) Σ_{m=1}^{N-1} (Πᵀ)^m (K×K, exact).

    With uniform attention 1/N this gives V(1) of Lemma C.1: V(1) = -η·ℓ'(0)/N · label_token_sum.

    >>> from rwtasks import CircleWalk
    >>> label_token_sum(CircleWalk(3, 2, 1))
    Matrix([
    [  0,   0, 1/3],
    [1/3,   0,   0],
    [  0, 1/3,   0]])
    """
    return _circulant(label_token_offsets(walk), transpose=True)


@dataclass(frozen=True)
class CircleFirstMoments:
    """The first moments of a circle walk that the first GD step (Lemma C.1) and the signal use.

    ``label_mean`` = E[e_y], ``token_mean`` = E[x̄] (both (1/K)·1, K×1),
    ``label_token_sum`` = E[e_y (X·1_N)ᵀ] = Σ_{i<N} E[e_y x_iᵀ] and
    ``label_token_mean`` = E[e_y x̄ᵀ] = label_token_sum / (N-1) (K×K).
    """

    label_mean: sp.Matrix
    token_mean: sp.Matrix
    label_token_sum: sp.Matrix
    label_token_mean: sp.Matrix


def circle_first_moments(walk: CircleWalk) -> CircleFirstMoments:
    """E[e_y], E[x̄], E[e_y (X·1_N)ᵀ] and E[e_y x̄ᵀ] of a circle walk, exact (MATH.md §1, §5).

    >>> from rwtasks import CircleWalk
    >>> m = circle_first_moments(CircleWalk(4, 5, "p"))
    >>> m.label_mean.T, sp.factor(m.label_token_mean[1, 0])
    (Matrix([[1/4, 1/4, 1/4, 1/4]]), -(4*p**3 - 6*p**2 + 2*p - 1)/16)
    """
    K = walk.K
    uniform = sp.Matrix([sp.Rational(1, K)] * K)
    total = label_token_sum(walk)
    return CircleFirstMoments(
        label_mean=uniform,
        token_mean=uniform,
        label_token_sum=total,
        label_token_mean=total / (walk.N - 1),
    )
