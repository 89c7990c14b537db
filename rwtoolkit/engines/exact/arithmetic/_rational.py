"""Exact rationals at the SymPy boundary: python-flint's ``fmpq``, balanced sums, and SymPy trees built unsorted.

SymPy's ``Rational`` is a Python object: every product and sum allocates, sympifies and reduces by a
gcd in Python, and on a step of a large population that is nearly all of the time. FLINT's ``fmpq``
does the same exact arithmetic in C. This module holds what the exact engine's passes share:

* ``to_fmpq`` / ``to_sympy``: the two directions of the boundary (exact both ways);
* ``tree_sum``, ``rational_sum``, ``exact_sum``: sums added as balanced trees (rational terms in ``fmpq``);
* ``add_ordered``, ``mul_ordered``, ``product_ordered``, ``descend``: SymPy ``Add`` and ``Mul`` built in
  the order given, without SymPy's sort of the terms by comparing their trees (the value is the same);
* ``use_flint``: ``RWSYMBOLIC_ARITHMETIC=sympy`` forces SymPy everywhere (the reference path, used by
  the benchmarks and the tests that compare the two).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import sympy as sp
from flint import fmpq, fmpq_mpoly

T = TypeVar("T", bound=Any)

#: Environment variable choosing the arithmetic: "flint" (default) or "sympy" (pure SymPy reference).
ARITHMETIC_ENV = "RWSYMBOLIC_ARITHMETIC"


def use_flint() -> bool:
    """True unless ``RWSYMBOLIC_ARITHMETIC`` is "sympy" (read at each call, so it can be switched)."""
    choice = os.environ.get(ARITHMETIC_ENV, "flint").strip().lower()
    if choice not in ("flint", "sympy"):
        raise ValueError(f"{ARITHMETIC_ENV}={choice!r} must be 'flint' or 'sympy'")
    return choice == "flint"


#: SymPy >= 1.13 builds a Rational from coprime integers without a second gcd.
COPRIME = getattr(sp.Rational, "from_coprime_ints", None)


def to_fmpq(x: sp.Rational) -> fmpq:
    """The ``fmpq`` of a SymPy Rational (exact)."""
    return fmpq(int(x.p), int(x.q))


def to_sympy(x: fmpq) -> sp.Rational:
    """The SymPy Rational of an ``fmpq`` (already reduced, so SymPy's gcd is skipped).

    >>> to_sympy(to_fmpq(sp.Rational(-6, 4))), to_sympy(fmpq(0))
    (-3/2, 0)
    """
    p, q = int(x.p), int(x.q)
    return COPRIME(p, q) if COPRIME is not None else sp.Rational(p, q)


#: An exact FLINT value: a rational, or a polynomial with rational coefficients (``rwtoolkit.engines.exact.engine._polynomial_pass``).
Exact = TypeVar("Exact", fmpq, fmpq_mpoly)


def tree_sum(terms: Sequence[Exact]) -> Exact:
    """Σ terms added pairwise as a balanced tree (``fmpq`` 0 for no terms).

    Adding thousands of fractions with distinct denominators one by one makes every partial sum as
    long as the final one (quadratic work); pairing keeps the operands of each addition of similar
    size, so the large additions are few and FLINT's fast multiplication pays off.

    >>> tree_sum([fmpq(1, 2), fmpq(1, 3), fmpq(1, 6)]), tree_sum([])
    (1, 0)
    """
    level = list(terms)
    if not level:
        return cast(Any, fmpq(0))  # no polynomial ring to take a zero from
    while len(level) > 1:
        nxt = [a + b for a, b in zip(level[::2], level[1::2])]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def rational_sum(terms: Sequence[sp.Rational]) -> sp.Rational:
    """Σ terms of SymPy Rationals, added as ``fmpq`` (``tree_sum``).

    >>> rational_sum([sp.Rational(1, 3), sp.Rational(1, 6), sp.Integer(2)])
    5/2
    """
    return to_sympy(tree_sum([fmpq(int(t.p), int(t.q)) for t in terms]))


def all_rational(values: Sequence[object]) -> bool:
    return all(isinstance(v, sp.Basic) and v.is_Rational for v in values)


def exact_sum(terms: list[sp.Expr]) -> sp.Expr:
    """Σ terms, with the rational terms added as one balanced tree of unreduced fractions.

    SymPy adds Rationals one by one and reduces each partial sum by a gcd; with thousands of distinct
    large denominators that is quadratic and dominates a step. Here numerators and denominators are
    combined pairwise and reduced once at the end (exactly the same value); with python-flint the
    rational terms are added as ``fmpq`` in C instead (``rational_sum``).
    """
    if use_flint():
        rational = [t for t in terms if t.is_Rational]
        if len(rational) < 2:
            return sp.Add(*terms)
        return sp.Add(rational_sum(rational), *(t for t in terms if not t.is_Rational))
    rationals = [(int(t.p), int(t.q)) for t in terms if t.is_Rational]
    others = [t for t in terms if not t.is_Rational]
    if len(rationals) < 2:
        return sp.Add(*terms)
    while len(rationals) > 1:
        nxt = [(a * d + b * c, b * d) for (a, b), (c, d) in zip(rationals[::2], rationals[1::2])]
        if len(rationals) % 2:
            nxt.append(rationals[-1])
        rationals = nxt
    num, den = rationals[0]
    return sp.Add(sp.Rational(num, den), *others)


def product_ordered(coef: fmpq, factors: tuple[sp.Expr, ...]) -> sp.Expr:
    """coef · Π factors as one SymPy Mul, the factors' own products spliced in, without sorting."""
    out: list[sp.Expr] = []
    for f in factors:
        if f.is_Number:
            coef *= to_fmpq(f)
        elif f.is_Mul:
            head = f.args[0]
            if head.is_Number:
                coef *= to_fmpq(head)
                out.extend(f.args[1:])
            else:
                out.extend(f.args)
        elif f is not sp.S.One:
            out.append(f)
    if coef == 0:
        return sp.S.Zero
    if len(set(out)) != len(out):  # a repeated factor: SymPy's Mul collects it into a power
        return sp.Mul(to_sympy(coef), *out)
    return mul_ordered([to_sympy(coef), *out] if coef != 1 else out)


def mul_ordered(factors: list[sp.Expr]) -> sp.Expr:
    """SymPy's Mul of distinct non-number factors and at most one leading number, in the given order."""
    factors = [f for f in factors if f is not sp.S.One]
    if len(factors) < 2:
        return factors[0] if factors else sp.S.One
    if factors[0] is sp.S.Zero:
        return sp.S.Zero
    return sp.Mul._from_args(factors, True)


def add_ordered(terms: list[sp.Expr]) -> sp.Expr:
    """SymPy's Add of ``terms`` (no two alike) in the given order, the rational part first.

    ``sp.Add`` would sort the terms by comparing their trees, which on the sums of a step costs more
    than all of the arithmetic; the order does not change the value, and it is deterministic.
    """
    numbers = [t for t in terms if t.is_Number]
    rest: list[sp.Expr] = []
    for t in terms:
        if t.is_Add:
            numbers.extend(a for a in t.args if a.is_Number)
            rest.extend(a for a in t.args if not a.is_Number)
        elif not t.is_Number:
            rest.append(t)
    head = sp.Add(*numbers) if numbers else sp.S.Zero
    args = ([head] if head is not sp.S.Zero else []) + rest
    if len(args) < 2:
        return args[0] if args else sp.S.Zero
    return sp.Add._from_args(args, True)


def descend(x: sp.Expr, rate: sp.Expr, g: sp.Expr) -> sp.Expr:
    """x - rate·g, one coordinate of a gradient step; for a rational rate and a sum g each term of g is
    scaled on its own (SymPy would distribute the rate and sort the sum's terms again).

    >>> a, b = sp.symbols("a b", positive=True)
    >>> step = descend(sp.Rational(1, 2), sp.Rational(3, 2), a / (a + b) + 2 * b + 1)
    >>> sp.simplify(step - (sp.Rational(1, 2) - sp.Rational(3, 2) * (a / (a + b) + 2 * b + 1)))
    0
    """
    if not (rate.is_Rational and g.is_Add and x.is_Rational):
        return x - rate * g
    return add_ordered([x, *(product_ordered(-to_fmpq(rate), (t,)) for t in g.args)])
