"""Exact walk probabilities on the K-cycle as polynomials in p, and sign checks of polynomials.

[Π^R]_{i,j} = Σ_{a : 2a − R ≡ j − i (mod K)} C(R, a) p^a (1−p)^(R−a)  (a clockwise steps out of R):
Π is circulant, so row 0 (offsets e = j − i) determines it. Nodes are 0-based here.
"""

from __future__ import annotations

from math import comb

import sympy as sp

from rwtoolkit.tasks import symbol

P = symbol("p")  # the real symbol p shared with rwtoolkit.tasks


def power_entry(K: int, R: int, e: int) -> sp.Expr:
    """[Π^R]_{0,e} as an exact polynomial in the symbol p (the closed form above).

    >>> power_entry(4, 2, 0)
    2*p*(1 - p)
    """
    return sp.Add(*[comb(R, a) * P**a * (1 - P) ** (R - a) for a in range(R + 1) if (2 * a - R - e) % K == 0])


def sum_of_powers_row(K: int, lo: int, hi: int) -> list[sp.Poly]:
    """Row 0 of Σ_{R=lo}^{hi} Π^R as K polynomials in p (entry e is offset j − i = e)."""
    return [sp.Poly(sp.Add(*[power_entry(K, R, e) for R in range(lo, hi + 1)]), P) for e in range(K)]


def bernstein_row(K: int, lo: int, hi: int) -> list[list[int]]:
    """Row 0 of Σ_{R=lo}^{hi} Π^R in the basis p^j (1−p)^(hi−j), j = 0..hi: integer coefficients.

    Each term p^a (1−p)^(R−a) is lifted to degree hi by multiplying with (p + 1 − p)^(hi−R). A polynomial
    whose coefficients in this basis are all ≥ 0 and not all 0 is > 0 on the open interval (0, 1).
    """
    rows = [[0] * (hi + 1) for _ in range(K)]
    for R in range(lo, hi + 1):
        for a in range(R + 1):
            row = rows[(2 * a - R) % K]
            weight = comb(R, a)
            for t in range(hi - R + 1):
                row[a + t] += weight * comb(hi - R, t)
    return rows


def basis_to_poly(coeffs: list[int]) -> sp.Poly:
    """Σ_j c_j p^j (1−p)^(n−j) (n = len − 1) expanded into an integer polynomial in p.

    >>> basis_to_poly([1, 1])  # (1 − p) + p
    Poly(1, p, domain='ZZ')
    """
    n = len(coeffs) - 1
    out = [0] * (n + 1)
    for j, c in enumerate(coeffs):
        if c:
            for t in range(n - j + 1):
                out[j + t] += c * comb(n - j, t) * (-1) ** t
    return sp.Poly(list(reversed(out)), P, domain="ZZ")


def nonnegative_on(poly: sp.Poly, lo: sp.Rational, hi: sp.Rational) -> tuple[bool, sp.Rational | None]:
    """Is ``poly`` ≥ 0 on the closed interval [lo, hi]? Returns (answer, a rational point where it is < 0).

    Exact: the real roots of the square-free part inside (lo, hi) are isolated (Sturm sequences via
    SymPy), and the sign is tested at both ends and at one rational point between consecutive roots.

    >>> nonnegative_on(sp.Poly((2*P - 1)**2, P), sp.Integer(0), sp.Integer(1))
    (True, None)
    >>> nonnegative_on(sp.Poly(P - sp.Rational(1, 3), P), sp.Integer(0), sp.Integer(1))
    (False, 0)
    """
    if poly.is_zero:
        return True, None
    points = [lo, hi]
    sqf = poly.sqf_part()
    inside = sqf.count_roots(lo, hi) - (sqf.eval(lo) == 0) - (sqf.eval(hi) == 0)
    if inside == 0:
        points.append((lo + hi) / 2)
    else:
        grid = [lo, *sorted(r for r in sqf.real_roots() if lo < r < hi), hi]
        points += [_rational_between(left, right) for left, right in zip(grid, grid[1:])]
    for x in points:
        if poly.eval(x) < 0:
            return False, sp.Rational(x)
    return True, None


def _rational_between(a: sp.Expr, b: sp.Expr) -> sp.Rational:
    """A rational number strictly between the real algebraic numbers a < b."""
    mid = (sp.Rational(str(sp.N(a, 60))) + sp.Rational(str(sp.N(b, 60)))) / 2
    if not a < mid < b:
        raise RuntimeError(f"no rational found between {a} and {b} at 60 digits (midpoint {mid})")
    return mid
