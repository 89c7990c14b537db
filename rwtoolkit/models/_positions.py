"""Positional embeddings with rational entries and PᵀP = μ I exactly, for the exact engines of any model.

The paper's sine basis has irrational entries. A model whose dynamics depend on P only through PᵀP (the
paper's, from zero init: docs/theory.md#reduction) can use any P with PᵀP = μI; a model that sees P itself
(separate key and query from a non-zero start) needs one concrete P, and exact arithmetic needs it rational.
Write μ = (a² + b² + c² + d²)/v² with integers (Lagrange's four-square theorem applied to μ v²); the matrix
of left multiplication by the quaternion (a + bi + cj + dk)/v has orthogonal columns of squared norm μ.
P is N columns of the block diagonal of copies of it: M = 4⌈N/4⌉ rows.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt

import numpy as np

#: Largest μ·v² whose four-square decomposition is searched (a few milliseconds at this size).
MAX_FOUR_SQUARE = 10**12


def four_squares(n: int) -> tuple[int, int, int, int]:
    """Integers a ≥ b ≥ c ≥ d ≥ 0 with a² + b² + c² + d² = n (the first found from the largest a).

    >>> four_squares(14)
    (3, 2, 1, 0)
    """
    if not 0 <= n <= MAX_FOUR_SQUARE:
        raise ValueError(f"four_squares(n={n}): n must be in [0, {MAX_FOUR_SQUARE}]")
    for a in range(isqrt(n), -1, -1):
        ra = n - a * a
        for b in range(min(a, isqrt(ra)), -1, -1):
            rb = ra - b * b
            if rb > 2 * b * b:
                break
            for c in range(min(b, isqrt(rb)), -1, -1):
                rc = rb - c * c
                if rc > c * c:
                    break
                d = isqrt(rc)
                if d * d == rc:
                    return a, b, c, d
    raise AssertionError(f"no four-square decomposition of {n}")  # impossible (Lagrange)


def rational_positions(N: int, mu: Fraction | int | str) -> np.ndarray:
    """An (M, N) array of Fractions with PᵀP = μ I, M = 4⌈N/4⌉ (see the module text).

    >>> P = rational_positions(3, Fraction(7, 2))
    >>> P.shape, bool((P.T @ P == np.eye(3, dtype=int) * Fraction(7, 2)).all())
    ((4, 3), True)
    """
    mu = Fraction(mu)
    if mu <= 0:
        raise ValueError(f"mu={mu} is out of range: mu must be > 0")
    v = mu.denominator
    a, b, c, d = four_squares(mu.numerator * v)
    q = np.array([[a, -b, -c, -d], [b, a, -d, c], [c, d, a, -b], [d, -c, b, a]], dtype=object) * Fraction(
        1, v
    )
    blocks = -(-N // 4)
    P = np.zeros((4 * blocks, 4 * blocks), dtype=object) + Fraction(0)
    for i in range(blocks):
        P[4 * i : 4 * i + 4, 4 * i : 4 * i + 4] = q
    return P[:, :N]
