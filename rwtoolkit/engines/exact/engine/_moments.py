"""Exact first moments of circle walks from the Markov structure (transfer matrices), not enumeration.

Π is circulant, so Π^m is circulant too: [Π^m]_{ij} = c_m[(j - i) mod K], where c_m[d] is the law of
the displacement s_{i+m} - s_i (mod K) after m steps. The recurrence
c_{m+1}[d] = p·c_m[d-1] + (1-p)·c_m[d+1] gives every power in O(K) polynomial operations per step,
so Σ_{m<N} Π^m costs O(N·K) operations on polynomials of degree < N instead of K·2^(N-1) walks.

Because s_1 is uniform and the uniform law is stationary (Π is doubly stochastic), every token is
uniform, P(s_i = b) = 1/K, and

    E[e_y x_iᵀ]_{ab} = P(s_N = a, s_i = b) = (1/K)·[Π^(N-i)]_{ba} = (1/K)·[(Πᵀ)^(N-i)]_{ab}.

Indices in code are 0-based (node k is node k+1 of docs/theory.md#task); positions i are 1-based as there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy import QQ
from sympy.polys.rings import ring

from rwtoolkit.tasks import CircleWalk, is_numeric

#: Largest N the structured expectations accept with symbolic p: the entries are polynomials of
#: degree N - 1 with large coefficients and the work grows like N³·K in bit operations (K = 8:
#: about 0.3 s at N = 100, about a minute at N = 1000 on this project's 2-core machine).
MAX_SYMBOLIC_N = 256
#: Largest N accepted with a rational p (O(N·K) operations on rationals of O(N) digits).
MAX_STRUCTURED_N = 4096
#: Largest K accepted (a K×K matrix is built from the K distinct circulant entries).
MAX_STRUCTURED_K = 128

# The polynomial ring QQ[t] in which powers of Π are computed when p is not a rational number;
# t is replaced by p when the result is turned into SymPy expressions.
_RING, _T = ring("t", QQ)


def _check_size(walk: CircleWalk) -> None:
    rational = is_numeric(walk.p) and walk.p.is_Rational
    limit = MAX_STRUCTURED_N if rational else MAX_SYMBOLIC_N
    if walk.N > limit:
        raise ValueError(
            f"N={walk.N} is too large for exact circle-walk expectations with "
            f"{'rational' if rational else 'symbolic'} p: N must be <= {limit} (the work grows like "
            f"N^{2 if rational else 3}*K: estimated ~{walk.N ** (2 if rational else 3) * walk.K:.2g} "
            f"operations); {'use rwtoolkit.engines.numeric' if rational else 'give a rational p or use rwtoolkit.engines.numeric'} "
            "for larger N"
        )
    if walk.K > MAX_STRUCTURED_K:
        raise ValueError(
            f"K={walk.K} is too large for exact circle-walk expectations: K must be <= "
            f"{MAX_STRUCTURED_K}; use rwtoolkit.engines.numeric for larger K"
        )


def _is_rational(p: sp.Expr) -> bool:
    return bool(is_numeric(p) and p.is_Rational)


def _step_weights(p: sp.Expr) -> tuple[Any, Any, Any, Any]:
    """(p, 1 - p, 0, 1) in QQ for a rational p, else in QQ[t] with t standing for p."""
    if _is_rational(p):
        return QQ(int(p.p), int(p.q)), QQ(int((1 - p).p), int((1 - p).q)), QQ(0), QQ(1)
    return _T, 1 - _T, _RING.zero, _RING.one


@lru_cache(maxsize=64)
def _displacement_laws(K: int, max_steps: int, p: sp.Expr) -> tuple[tuple[Any, ...], ...]:
    """c_m[d] = P(s_{i+m} - s_i ≡ d mod K) for m = 0..max_steps, as elements of QQ (rational p) or of
    QQ[t] (any other p, t standing for p); cached per (K, steps, p)."""
    step_cw, step_ccw, zero, one = _step_weights(p)
    law = [zero] * K
    law[0] = one
    laws = [tuple(law)]
    for _ in range(max_steps):
        # One more step: +1 (clockwise) with probability p, -1 with probability 1 - p.
        law = [step_cw * law[(d - 1) % K] + step_ccw * law[(d + 1) % K] for d in range(K)]
        laws.append(tuple(law))
    return tuple(laws)


def _to_expr(value: Any, p: sp.Expr) -> sp.Expr:
    """An element of QQ or QQ[t] from ``_displacement_laws`` as a SymPy expression in p (expanded)."""
    if _is_rational(p):
        return QQ.to_sympy(value)
    if isinstance(p, sp.Symbol):
        return value.as_expr(p)
    return sp.expand(value.as_expr().subs(_T.as_expr(), p))


@lru_cache(maxsize=64)
def _offset_sums(K: int, N: int, p: sp.Expr) -> tuple[object, ...]:
    """Σ_{m=1}^{N-1} c_m[d] for d = 0..K-1, in QQ or QQ[t] (t standing for p), cached per (K, N, p).

    Runs the recurrence of ``_displacement_laws`` without keeping the N laws (memory O(K) elements).
    """
    step_cw, step_ccw, zero, one = _step_weights(p)
    law = [zero] * K
    law[0] = one
    sums = [zero] * K
    for _ in range(N - 1):
        law = [step_cw * law[(d - 1) % K] + step_ccw * law[(d + 1) % K] for d in range(K)]
        sums = [total + c for total, c in zip(sums, law)]
    return tuple(sums)


def signal_offset_polys(K: int, N: int) -> tuple[Any, ...]:
    """The signal's circulant entries c_d = Σ_{m=1}^{N-1} c_m[d]/(K(N-1)) - 1/K² as elements of QQ[t]
    (t standing for p): what ``vanishing_set`` takes the gcd of without SymPy expressions."""
    scale, mean = QQ(1, K * (N - 1)), QQ(1, K * K)
    return tuple(total * scale - mean for total in _offset_sums(K, N, _T.as_expr()))


def circulant(first_row: list[sp.Expr] | tuple[sp.Expr, ...], transpose: bool = False) -> sp.Matrix:
    """The circulant matrix with [M]_{ij} = first_row[(j - i) mod K] (or (i - j) if ``transpose``)."""
    K = len(first_row)
    sign = -1 if transpose else 1
    return sp.Matrix(K, K, lambda i, j: first_row[(sign * (j - i)) % K])


def transition_power(walk: CircleWalk, m: int) -> sp.Matrix:
    """Π^m exactly, from the circulant displacement recurrence (m >= 0).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> w = CircleWalk(3, 4, "p")
    >>> transition_power(w, 2) == (w.transition_matrix() ** 2).applyfunc(sp.expand)
    True
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 0:
        raise ValueError(f"m={m!r} must be an integer >= 0")
    _check_size(walk)
    limit = MAX_STRUCTURED_N if _is_rational(walk.p) else MAX_SYMBOLIC_N
    if m > limit:
        raise ValueError(f"m={m} is too large for an exact power of Π here: m must be <= {limit}")
    return circulant([_to_expr(c, walk.p) for c in _displacement_laws(walk.K, m, walk.p)[m]])


def expected_label_token_outer(walk: CircleWalk, i: int) -> sp.Matrix:
    """E[e_y x_iᵀ] = (1/K)·(Πᵀ)^(N-i) for the 1-based token position i in 1..N-1 (K×K, exact).

    >>> from rwtoolkit.tasks import CircleWalk
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
    return circulant([_to_expr(c, walk.p) / walk.K for c in law], transpose=True)


def label_token_offsets(walk: CircleWalk) -> tuple[sp.Expr, ...]:
    """g_d with E[e_y (X·1_N)ᵀ]_{ab} = g_{(a-b) mod K}: g_d = (1/K) Σ_{m=1}^{N-1} c_m[d].

    The K distinct entries of the circulant matrix Σ_{i<N} E[e_y x_iᵀ] = (1/K) Σ_{m=1}^{N-1} (Πᵀ)^m,
    expanded polynomials in p.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> label_token_offsets(CircleWalk(3, 3, "p"))
    (-2*p**2/3 + 2*p/3, p**2/3 - p/3 + 1/3, p**2/3 - p/3 + 1/3)
    """
    _check_size(walk)
    return tuple(sp.expand(_to_expr(s, walk.p) / walk.K) for s in _offset_sums(walk.K, walk.N, walk.p))


def label_token_sum(walk: CircleWalk) -> sp.Matrix:
    """E[e_y (X·1_N)ᵀ] = Σ_{i=1}^{N-1} E[e_y x_iᵀ] = (1/K) Σ_{m=1}^{N-1} (Πᵀ)^m (K×K, exact).

    With uniform attention 1/N this gives V(1) of Lemma C.1: V(1) = -η·ℓ'(0)/N · label_token_sum.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> label_token_sum(CircleWalk(3, 2, 1))
    Matrix([
    [  0,   0, 1/3],
    [1/3,   0,   0],
    [  0, 1/3,   0]])
    """
    return circulant(label_token_offsets(walk), transpose=True)


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
    """E[e_y], E[x̄], E[e_y (X·1_N)ᵀ] and E[e_y x̄ᵀ] of a circle walk, exact (docs/theory.md#task, #signal).

    >>> from rwtoolkit.tasks import CircleWalk
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
