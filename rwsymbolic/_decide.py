"""Exact decisions about SymPy expressions: is it zero, what is its sign.

Zero is only ever *proved* by algebra, never concluded from a rounded value:
  1. every ``exp(a)`` with a rational argument is rewritten as u**(a*Q) with u = e**(1/Q) (Q the common
     denominator); u is transcendental (Lindemann), so the expression is zero iff the resulting
     rational function of u is identically zero;
  2. remaining ``exp`` atoms (and applied undefined functions such as ``dell(z)``) are replaced by
     fresh independent symbols; if the result cancels to zero, the original is zero (a substitution
     respects every algebraic identity, so a zero image proves a zero original).
Nonzero is proved by evaluation: SymPy's adaptive-precision ``evalf`` at a point (after substituting
rationals for free symbols and a concrete smooth function for an abstract loss) giving a value far from
zero. If neither succeeds the answer is ``None`` ("undecided") and callers must say so.
"""

from __future__ import annotations

from functools import reduce
from math import lcm

import sympy as sp
from sympy.core.function import AppliedUndef

# Points used to *prove* non-identities of symbolic expressions (any point where the value is far from
# zero is a valid witness). p in (0, 1), positive rates, and a smooth stand-in for an abstract loss.
_WITNESS_VALUES = (sp.Rational(3, 10), sp.Rational(7, 5), sp.Rational(13, 17), sp.Rational(5, 3))
_NONZERO_FLOOR = sp.Float("1e-25")
_MAX_DEGREE = 400  # largest power of u = e^(1/Q) the Lindemann rewrite may create
_MAX_SIMPLIFY_OPS = 400  # sp.simplify as a last resort, on small expressions only


def _exp_to_powers(expr: sp.Expr) -> sp.Expr:
    """Rewrite exp(rational) atoms as powers of one transcendental symbol (step 1 above)."""
    atoms = [a for a in expr.atoms(sp.exp) if a.args[0].is_Rational]
    if not atoms:
        return expr
    q = reduce(lcm, (int(a.args[0].q) for a in atoms), 1)
    u = sp.Dummy("u", positive=True)
    return expr.xreplace({a: u ** int(a.args[0] * q) for a in atoms})


def _atoms_to_symbols(expr: sp.Expr) -> sp.Expr:
    """Replace every exp atom and applied undefined function by a fresh symbol (step 2 above)."""
    expr = sp.powsimp(expr, combine="exp") if expr.has(sp.exp) else expr
    for _ in range(8):  # innermost first: an exp may sit inside a dell(...) argument and vice versa
        atoms = [a for a in expr.atoms(sp.exp, AppliedUndef) if not a.args[0].has(sp.exp, AppliedUndef)]
        if not atoms:
            break
        expr = expr.xreplace({a: sp.Dummy("a") for a in atoms})
    # log(a) and log(b) with a = b as rational functions of the fresh symbols become one atom.
    logs = expr.atoms(sp.log)
    if logs:
        expr = expr.xreplace({g: sp.log(sp.cancel(sp.together(g.args[0]))) for g in logs})
    return expr


def proved_zero(expr: sp.Expr) -> bool:
    """True only when ``expr`` is shown to be exactly zero by algebra (never by rounding)."""
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    if expr.is_Rational:
        return False
    try:
        if sp.cancel(sp.together(_atoms_to_symbols(expr))) == 0:
            return True
        powers = _exp_to_powers(expr)
        degree = max((abs(int(e.exp)) for e in powers.atoms(sp.Pow) if e.exp.is_Integer), default=0)
        # The Lindemann rewrite is exact but its polynomial degree grows with the denominators.
        if powers is not expr and degree <= _MAX_DEGREE:
            if sp.cancel(sp.together(_atoms_to_symbols(powers))) == 0:
                return True
    except (sp.PolynomialError, sp.CoercionFailed):  # pragma: no cover - exotic atoms
        pass
    return sp.count_ops(expr) <= _MAX_SIMPLIFY_OPS and sp.simplify(expr) == 0


def _witness_point(expr: sp.Expr) -> sp.Expr:
    """``expr`` with rationals for its free symbols and a concrete smooth function for abstract ones."""
    others = [s for s in sorted(expr.free_symbols, key=str) if s.name != "p"]
    subs = {s: _WITNESS_VALUES[1 + i % (len(_WITNESS_VALUES) - 1)] for i, s in enumerate(others)}
    subs.update({s: _WITNESS_VALUES[0] for s in expr.free_symbols if s.name == "p"})  # p inside (0, 1)
    expr = expr.xreplace(subs)
    # An abstract loss derivative/loss: any smooth function is a legitimate instance of "any loss".
    funcs = {type(a) for a in expr.atoms(AppliedUndef)}
    for f in funcs:
        x = sp.Dummy("x")
        expr = expr.replace(f, sp.Lambda(x, x**2 / 7 - x / 3 + sp.Rational(2, 5)))
    return expr


def evaluate_far_from_zero(expr: sp.Expr) -> sp.Float | None:
    """A high-precision value of ``expr`` at the witness point when it is far from zero, else None."""
    point = _witness_point(sp.sympify(expr))
    try:
        value = sp.N(point, 40, maxn=400)
    except (ValueError, TypeError, ZeroDivisionError):  # pragma: no cover - singular witness point
        return None
    if not value.is_number or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or not value.is_real:
        return None
    if abs(value) > _NONZERO_FLOOR:
        return value
    return None


def is_zero(expr: sp.Expr) -> bool | None:
    """True (proved zero), False (proved nonzero at a point; for numbers: its value), None (undecided).

    >>> import sympy as sp
    >>> is_zero(sp.exp(sp.Rational(1, 2))**2 - sp.exp(1)), is_zero(sp.exp(1) - 2), is_zero(sp.Symbol('p') - 1)
    (True, False, False)
    """
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    # A value far from zero at some point settles "nonzero" cheaply; only then try an exact proof.
    if evaluate_far_from_zero(expr) is not None:
        return False
    return True if proved_zero(expr) else None


def sign(expr: sp.Expr) -> int | None:
    """Exact sign of a *number* (no free symbols, no abstract function): -1, 0, 1, or None if undecided.

    >>> import sympy as sp
    >>> sign(sp.exp(sp.Rational(2, 5)) / (1 + 5 * sp.exp(sp.Rational(2, 5))) - sp.Rational(1, 6))
    1
    """
    expr = sp.sympify(expr)
    if expr.free_symbols or expr.atoms(AppliedUndef):
        return None
    if expr.is_Rational:
        return int(sp.sign(expr))
    value = evaluate_far_from_zero(expr)
    if value is not None:
        return 1 if value > 0 else -1
    return 0 if proved_zero(expr) else None
