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

import math
from functools import reduce
from math import lcm
from typing import TYPE_CHECKING

import sympy as sp
from mpmath import iv
from mpmath.libmp import to_float
from sympy.core.function import AppliedUndef

from rwtoolkit.engines.exact.arithmetic._atoms import (
    definition,
    expand_atoms,
    free_symbols,
    has_atoms,
    has_undefined,
)

if TYPE_CHECKING:
    from mpmath.ctx_iv import ivmpf  # the interval type of ``iv``: every enclosure is one

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


def _witness_values(expr: sp.Expr) -> dict:
    """Rationals for the user's free symbols of ``expr``: p inside (0, 1), positive values for the others."""
    others = [s for s in sorted(free_symbols(expr), key=str) if s.name != "p"]
    subs = {s: _WITNESS_VALUES[1 + i % (len(_WITNESS_VALUES) - 1)] for i, s in enumerate(others)}
    subs.update({s: _WITNESS_VALUES[0] for s in free_symbols(expr) if s.name == "p"})
    return subs


def _witness_point(expr: sp.Expr) -> sp.Expr:
    """``expr`` with rationals for its free symbols and a concrete smooth function for abstract ones."""
    expr = expand_atoms(expr).xreplace(_witness_values(expr))
    # An abstract loss derivative/loss: any smooth function is a legitimate instance of "any loss".
    funcs = {type(a) for a in expr.atoms(AppliedUndef)}
    for f in funcs:
        x = sp.Dummy("x")
        expr = expr.replace(f, sp.Lambda(x, _smooth_stand_in(x)))
    return expr


def evaluate_far_from_zero(expr: sp.Expr) -> bool:
    """True when ``expr`` is proved nonzero at the witness point (a rigorous interval excluding zero).

    SymPy's adaptive ``evalf`` (a value far from zero) is the fallback for nodes intervals do not cover.
    """
    expr = sp.sympify(expr)
    if interval_sign(expr, _witness_values(expr)) is not None:
        return True
    if has_atoms(expr) and not expr.has(sp.Piecewise):
        return False  # covered by the intervals above; SymPy's evalf would re-walk every nested exp
    point = _witness_point(expr)
    try:
        value = sp.N(point, 40, maxn=400)
    except (ValueError, TypeError, ZeroDivisionError):  # pragma: no cover - singular witness point
        return False
    if not value.is_number or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or not value.is_real:
        return False
    return bool(abs(value) > _NONZERO_FLOOR)


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
    if evaluate_far_from_zero(expr):
        return False
    return True if _proved_zero_with_atoms(expr) else None


def _proved_zero_with_atoms(expr: sp.Expr) -> bool:
    """``proved_zero`` with named atoms as independent symbols, then with atoms of equal exponents made one
    (``unify_atoms``), then (small cases) with them expanded."""
    if proved_zero(expr):
        return True
    if not has_atoms(expr):
        return False
    unified = unify_atoms(expr)
    if unified is not expr and proved_zero(unified):
        return True
    return sp.count_ops(expr) <= _MAX_SIMPLIFY_OPS and proved_zero(expand_atoms(expr))


#: Levels of nested atoms ``unify_atoms`` looks through (an exponent's atoms, their exponents' atoms, ...).
_MAX_UNIFY_DEPTH = 4
#: (atom, atom) -> whether their exponents were proved equal.
_EQUAL_EXPONENTS: dict[tuple[sp.Dummy, sp.Dummy], bool] = {}


def unify_atoms(expr: sp.Expr, depth: int = 0) -> sp.Expr:
    """``expr`` with every named atom replaced by one representative of the atoms whose exponents are proved
    equal: exp(a) = exp(b) when a - b is proved zero (by the same algebra, atoms unified one level down).

    The engine names each syntactically distinct exponent once, so two atoms may stand for the same number
    (a tie in f between entries built along different paths). Replacing an atom by an equal one is a
    substitution of equal values, so a zero image proves a zero original. Only pairs whose exponents'
    enclosures overlap are tried; ``expr`` itself is returned when nothing is unified.

    >>> from rwtoolkit.engines.exact.arithmetic._atoms import exp_atom
    >>> e = exp_atom(sp.Rational(1, 3))
    >>> a, b = exp_atom(e * (e + 1)), exp_atom(e**2 + e)  # one exponent, built along two paths
    >>> a == b, unify_atoms(a - b)
    (False, 0)
    """
    named = sorted((a for a in sp.sympify(expr).atoms(sp.Dummy) if definition(a) is not None), key=str)
    if len(named) < 2 or depth >= _MAX_UNIFY_DEPTH:
        return expr
    spans = {}
    for atom in named:
        try:
            spans[atom] = enclose(definition(atom), 64)
        except Unsupported:
            spans[atom] = None
    representative: dict[sp.Basic, sp.Basic] = {}
    for i, a in enumerate(named):
        if a in representative or spans[a] is None:
            continue
        for b in named[i + 1 :]:
            span_a, span_b = spans[a], spans[b]
            if b in representative or span_b is None or span_a.b < span_b.a or span_b.b < span_a.a:
                continue
            if _equal_exponents(a, b, depth):
                representative[b] = a
    return expr.xreplace(representative) if representative else expr


def _equal_exponents(a: sp.Dummy, b: sp.Dummy, depth: int) -> bool:
    key = (a, b)
    if key not in _EQUAL_EXPONENTS:
        first, second = definition(a), definition(b)
        equal = False
        if first is not None and second is not None:
            difference = unify_atoms(first - second, depth + 1)
            equal = sp.cancel(sp.together(_atoms_to_symbols(difference))) == 0
        _EQUAL_EXPONENTS[key] = equal
    return _EQUAL_EXPONENTS[key]


def sign(expr: sp.Expr) -> int | None:
    """Exact sign of a *number* (no free symbols, no abstract function): -1, 0, 1, or None if undecided.

    A rigorous interval that excludes zero decides -1 or 1; 0 needs an algebraic proof.

    >>> import sympy as sp
    >>> sign(sp.exp(sp.Rational(2, 5)) / (1 + 5 * sp.exp(sp.Rational(2, 5))) - sp.Rational(1, 6))
    1
    """
    expr = sp.sympify(expr)
    if free_symbols(expr) or has_undefined(expr):
        return None
    if expr.is_Rational:
        return int(sp.sign(expr))
    decided = interval_sign(expr)
    if decided is not None:
        return decided
    if evaluate_far_from_zero(expr):  # nodes the intervals do not cover
        value = sp.N(_witness_point(expr), 40, maxn=400)
        return 1 if value > 0 else -1
    return 0 if _proved_zero_with_atoms(expr) else None


# Interval evaluation ------------------------------------------------------------------------------
#: Working precisions (bits) tried in turn by ``enclose``-based decisions before exact algebra.
_PRECISIONS = (64, 256, 1024, 4096)


class Unsupported(Exception):
    """An expression node the interval evaluator does not handle (the caller falls back)."""


def _smooth_stand_in(x: sp.Expr | ivmpf) -> sp.Expr | ivmpf:
    """The concrete smooth function substituted for an abstract loss (also used by ``_witness_point``)."""
    return (
        x**2 / 7 - x / 3 + sp.Rational(2, 5) if isinstance(x, sp.Basic) else x * x / 7 - x / 3 + iv.mpf(2) / 5
    )


def enclose(expr: sp.Expr, prec: int, point: dict | None = None) -> ivmpf:
    """A rigorous interval (mpmath ``iv``, ``prec`` bits) containing the value of ``expr``.

    Subexpressions shared by identity are evaluated once, so nested exponentials that SymPy's own
    ``evalf`` re-walks at every occurrence cost one visit each. Named atoms (``rwtoolkit.engines.exact.arithmetic._atoms``) are
    evaluated as the exponentials they stand for. ``point`` maps free symbols to rationals, and an
    applied undefined function (the abstract loss) is evaluated as the smooth stand-in of
    ``_witness_point``. Raises ``Unsupported`` for anything else (e.g. ``Piecewise``).

    >>> import sympy as sp
    >>> x = enclose(sp.exp(sp.Rational(1, 2)) - sp.Rational(41, 25), 64)
    >>> bool(x.a > 0), bool(x.b < 0.01)
    (True, True)
    """
    # Without a point the enclosures are kept across calls (signs of many z share subexpressions).
    memo: dict[int, tuple[sp.Basic, ivmpf]] = _SHARED.setdefault(prec, {}) if not point else {}
    point = point or {}
    old = iv.prec
    iv.prec = prec
    try:
        return _enclose(sp.sympify(expr), memo, point)
    finally:
        iv.prec = old


#: prec -> id(node) -> (node, enclosure): point-free enclosures, shared by every call.
_SHARED: dict[int, dict[int, tuple[sp.Basic, ivmpf]]] = {}


def _enclose(node: sp.Basic, memo: dict[int, tuple[sp.Basic, ivmpf]], point: dict) -> ivmpf:
    key = id(node)
    hit = memo.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    if node.is_Rational:
        value = iv.mpf(int(node.p)) / int(node.q) if node.q != 1 else iv.mpf(int(node.p))
    elif node.is_Add:
        value = iv.mpf(0)
        for arg in node.args:
            value = value + _enclose(arg, memo, point)
    elif node.is_Mul:
        value = iv.mpf(1)
        for arg in node.args:
            value = value * _enclose(arg, memo, point)
    elif node.is_Pow:
        base = _enclose(node.base, memo, point)
        if node.exp.is_Integer:
            value = base ** int(node.exp)
        elif node.exp == sp.S.Half and base.a >= 0:
            value = iv.sqrt(base)
        elif node.exp == -sp.S.Half and base.a > 0:
            value = 1 / iv.sqrt(base)
        else:
            raise Unsupported(node)
    elif isinstance(node, sp.exp):
        value = iv.exp(_enclose(node.args[0], memo, point))
    elif isinstance(node, sp.log):
        arg = _enclose(node.args[0], memo, point)
        if not arg.a > 0:
            raise Unsupported(node)
        value = iv.log(arg)
    elif node.is_Symbol:
        arg = definition(node)
        if arg is not None:
            value = iv.exp(_enclose(arg, memo, point))
        elif node in point:
            value = _enclose(point[node], memo, point)
        else:
            raise Unsupported(node)
    elif isinstance(node, AppliedUndef) and len(node.args) == 1:
        value = _smooth_stand_in(_enclose(node.args[0], memo, point))
    elif node is sp.pi:
        value = iv.pi
    elif node is sp.E:
        value = iv.e
    else:
        raise Unsupported(node)
    if not all(math.isfinite(to_float(end)) for end in value._mpi_):
        raise Unsupported(node)  # a division by an interval containing zero
    memo[key] = (node, value)
    return value


def interval_sign(expr: sp.Expr, point: dict | None = None) -> int | None:
    """-1 or 1 when a rigorous enclosure of ``expr`` (at ``point``) excludes zero, else None.

    Precision rises through ``_PRECISIONS``; None means every enclosure contained zero (or the
    expression has nodes the evaluator does not handle): the sign is then for exact algebra to decide.

    >>> import sympy as sp
    >>> interval_sign(sp.exp(sp.Rational(2, 5)) / (1 + 5 * sp.exp(sp.Rational(2, 5))) - sp.Rational(1, 6))
    1
    """
    for prec in _PRECISIONS:
        try:
            value = enclose(expr, prec, point)
        except Unsupported:
            return None
        if value.a > 0:
            return 1
        if value.b < 0:
            return -1
    return None


def nearest_float(expr: sp.Expr) -> float | None:
    """The double nearest the exact number ``expr`` (from a rigorous enclosure), or None if unsupported.

    The enclosure is refined until its two ends round to the same double, so the result is the
    double of every point of it.

    >>> import sympy as sp
    >>> nearest_float(sp.exp(sp.Rational(1, 2))) == float(sp.N(sp.exp(sp.Rational(1, 2)), 30))
    True
    """
    for prec in _PRECISIONS:
        try:
            value = enclose(expr, prec)
        except Unsupported:
            return None
        lo, hi = (to_float(end, rnd="n") for end in value._mpi_)
        if lo == hi:
            return lo
    return None
