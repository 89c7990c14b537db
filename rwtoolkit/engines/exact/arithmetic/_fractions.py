"""Canonical forms of exact expressions: reduced fractions over FLINT polynomials, comparable with ``==``.

``fraction_form`` maps an expression in symbols and named atoms to one canonical object: each term of
a sum reduced to lowest terms with a monic denominator (polynomial gcd in FLINT's ``fmpq_mpoly``),
terms over equal denominators, or over a denominator that divides exactly one of the largest ones,
added, then each fraction split into its polynomial quotient and remainder (the quotients added into
one polynomial), with the symbols and atoms as polynomial variables; other functions (log, Piecewise,
comparisons) keep canonical arguments. Equal forms mean equal values (every step is an exact
identity). The exact engine's two arithmetics (``rwtoolkit.engines.exact.engine``) build different trees for equal
values; this is how the tests compare them, and ``Canonical.polynomial`` is how the polynomial pass
reads a SymPy value into FLINT.
"""

from __future__ import annotations

import sympy as sp
from flint import fmpq, fmpq_mpoly, fmpq_mpoly_ctx

from rwtoolkit.engines.exact.arithmetic._rational import to_fmpq, to_sympy


def fraction_form(expr: object) -> object:
    """A canonical, comparable form of an exact expression in symbols and named atoms (see module docstring).

    Sums become a frozenset of reduced fractions (numerator, monic denominator) over the expression's
    symbols, one per distinct denominator; matrices and lists are mapped entry by entry. Equal forms
    mean equal values; the two arithmetic paths of the engine give equal forms.

    >>> x, y = sp.symbols("x y", positive=True)
    >>> a = 1 / (x / (1 + y) + sp.Rational(1, 10)) + y
    >>> b = (10 + 10 * y) / (10 * x + 1 + y) + y
    >>> a == b, fraction_form(a) == fraction_form(b), fraction_form(a) == fraction_form(b + 1)
    (False, True, False)
    >>> fraction_form(x) == fraction_form(y)
    False
    """
    if isinstance(expr, sp.MatrixBase):
        return ("Matrix", expr.shape, tuple(fraction_form(v) for v in expr))
    if isinstance(expr, (list, tuple)):
        return tuple(fraction_form(v) for v in expr)
    if isinstance(expr, dict):
        return tuple(sorted((k, fraction_form(v)) for k, v in expr.items()))
    expr = sp.sympify(expr)
    symbols = sorted(expr.free_symbols, key=lambda s: (s.name, getattr(s, "dummy_index", 0) or 0))
    ctx = polynomial_context(symbols)
    return tuple(symbols), Canonical(ctx, symbols).freeze(expr)  # the variables name the polynomials


def polynomial_context(symbols: list[sp.Symbol]) -> fmpq_mpoly_ctx:
    """FLINT's ring of polynomials with rational coefficients in ``symbols`` (lex order, generic names).

    The names are positional (y{n}_0, y{n}_1, ...): two SymPy symbols with one name but different
    assumptions stay two variables.

    >>> polynomial_context(list(sp.symbols("p mu"))).names()
    ('y2_0', 'y2_1')
    """
    return fmpq_mpoly_ctx.get((f"y{len(symbols)}_", max(len(symbols), 1)), "lex")


class Canonical:
    """Maps SymPy expressions to Σ_{opaque o} Σ_Q N_Q/Q · o (reduced fractions, monic Q)."""

    def __init__(self, ctx: fmpq_mpoly_ctx, symbols: list[sp.Symbol]) -> None:
        self.ctx = ctx
        gens = ctx.gens()
        self.var = {s: gens[i] for i, s in enumerate(symbols)}
        self.one = ctx.from_dict({(0,) * ctx.nvars(): 1})

    def freeze(self, expr: sp.Basic) -> object:
        return _frozen(self.value(expr))

    def polynomial(self, expr: sp.Basic) -> fmpq_mpoly | None:
        """``expr`` as one polynomial in the symbols, or None when it is not a polynomial."""
        try:
            value = self.value(expr)
        except (ValueError, ZeroDivisionError):
            return None
        if set(value) - {()}:
            return None  # an opaque function (exp, log, ...)
        fractions = list(value.get((), {}).values())
        if not fractions:
            return self.ctx.from_dict({})
        if len(fractions) > 1 or not fractions[0][1].is_one():
            return None  # a denominator in the symbols
        return fractions[0][0]

    # a value: {opaque key: {str(Q): (N, Q)}}; opaque key () is the plain rational part
    def value(self, expr: sp.Basic) -> dict:
        if expr.is_Rational:
            return {(): self._fractions(self.one * to_fmpq(expr), self.one)} if expr != 0 else {}
        if expr in self.var:
            return {(): self._fractions(self.var[expr], self.one)}
        if isinstance(expr, sp.Add):
            out: dict = {}
            for a in expr.args:
                _add_into(out, self.value(a))
            return out
        if isinstance(expr, sp.Mul):
            acc: dict = {(): self._fractions(self.one, self.one)}
            for a in expr.args:
                acc = self._mul(acc, self.value(a))
            return acc
        if isinstance(expr, sp.Pow) and expr.exp.is_Integer:
            base = self.value(expr.base)
            n = int(expr.exp)
            if n < 0:
                base = self._invert(base)
                n = -n
            acc = {(): self._fractions(self.one, self.one)}
            for _ in range(n):
                acc = self._mul(acc, base)
            return acc
        # any other function: kept, with canonical arguments, as an opaque factor
        args = [self._single(a) for a in expr.args]
        numbers = [a for a in args if isinstance(a, tuple) and len(a) == 3 and a[2] is not None]
        if isinstance(expr, sp.Function) and args and len(numbers) == len(args):
            # arguments that are numbers in value (p + (1 - p) = 1): SymPy's value of the function there
            at_numbers = expr.func(*(a[2] for a in numbers))
            if at_numbers != expr:
                return self.value(at_numbers)
        key = (type(expr).__name__, tuple(a[:2] if isinstance(a, tuple) and len(a) == 3 else a for a in args))
        return {key: self._fractions(self.one, self.one)}

    def _single(self, arg: sp.Basic) -> object:
        """An argument of an opaque function as one reduced fraction (n, q, the SymPy number n/q when
        constant) or its own opaque form."""
        if not isinstance(arg, sp.Expr) or arg.is_Relational:
            if isinstance(arg, sp.Basic) and arg.args:
                return (type(arg).__name__, tuple(self._single(a) for a in arg.args))
            return str(arg)
        value = self.value(arg)
        if set(value) - {()}:
            return _frozen(value)
        n, q = self._combine(value.get((), {}))
        number = None
        if n.is_constant() and q.is_constant():
            constant = n.to_dict().get((0,) * self.ctx.nvars(), fmpq(0)) / q.leading_coefficient()
            number = to_sympy(constant)
        return (str(n), str(q), number)

    def _fractions(self, n: fmpq_mpoly, q: fmpq_mpoly) -> dict:
        n, q = reduce_fraction(n, q)
        return {str(q): (n, q)} if not n.is_zero() else {}

    def _combine(self, fr: dict) -> tuple[fmpq_mpoly, fmpq_mpoly]:
        n, q = self.ctx.from_dict({}), self.one
        for a, b in fr.values():
            n, q = reduce_fraction(n * b + a * q, q * b)
        return n, q

    def _invert(self, value: dict) -> dict:
        if set(value) - {()}:
            raise ValueError("fraction_form: 1/x for x with opaque factors is not supported")
        n, q = self._combine(value.get((), {}))
        if n.is_zero():
            raise ZeroDivisionError("fraction_form: division by zero")
        return {(): self._fractions(q, n)}

    def _mul(self, a: dict, b: dict) -> dict:
        out: dict = {}
        for oa, fa in a.items():
            for ob, fb in b.items():
                if oa and ob:
                    key = tuple(sorted((oa, ob), key=str))
                else:
                    key = oa or ob
                part: dict = {}
                for na, qa in fa.values():
                    for nb, qb in fb.values():
                        _add_fraction(part, *reduce_fraction(na * nb, qa * qb))
                _add_into(out, {key: part})
        return out


def _frozen(value: dict) -> frozenset:
    return frozenset(
        (o, frozenset((str(n), str(q)) for n, q in _proper(_merge_divisors(fr)).values()))
        for o, fr in value.items()
        if fr
    )


def _proper(fr: dict) -> dict:
    """Each fraction n/q as its quotient and remainder by q (lex order), the quotients added into one polynomial.

    A sum can carry its polynomial part on its own or inside a fraction (n/q + P = (n + P q)/q); the
    remainder of n by q (no term divisible by q's leading term) is one for both writings.
    """
    out: dict = {}
    whole = []
    for n, q in fr.values():
        if q.is_one():
            whole.append(n)
            continue
        quotient, remainder = divmod(n, q)
        whole.append(quotient)
        if not remainder.is_zero():
            out[str(q)] = (remainder, q)
    if whole:
        total = sum(whole[1:], whole[0])
        if not total.is_zero():
            one = total.context().constant(1)
            out[str(one)] = (total, one)
    return out


def _merge_divisors(fr: dict) -> dict:
    """Each fraction whose denominator divides exactly one maximal denominator of the sum is added into it.

    A group's term can be written over B·D or split into pieces over B and over B·D (the SymPy path
    distributes some products): this merge makes the two writings one. Repeated until nothing merges.
    """
    fr = dict(fr)
    while True:
        items = list(fr.items())
        maximal = [(k, q) for k, (_, q) in items if not any(k2 != k and q2 % q == 0 for k2, (_, q2) in items)]
        moved = False
        for k, (n, q) in items:
            if any(k == km for km, _ in maximal):
                continue
            targets = [(km, qm) for km, qm in maximal if qm % q == 0]
            if len(targets) == 1 and k in fr:
                km, qm = targets[0]
                del fr[k]
                _add_fraction(fr, n * (qm / q), qm)
                moved = True
        if not moved:
            return fr


def _add_fraction(fr: dict, n: fmpq_mpoly, q: fmpq_mpoly) -> None:
    """Add n/q (reduced, monic q) into a {str(Q): (N, Q)} map, re-reducing and merging until stable."""
    while not n.is_zero():
        key = str(q)
        hit = fr.pop(key, None)
        if hit is None:
            fr[key] = (n, q)
            return
        n2, q2 = reduce_fraction(hit[0] + n, q)
        if str(q2) == key:
            if not n2.is_zero():
                fr[key] = (n2, q2)
            return
        n, q = n2, q2  # the sum cancelled a factor: merge it with its new denominator


def _add_into(out: dict, value: dict) -> None:
    for o, fr in value.items():
        target = out.setdefault(o, {})
        for n, q in fr.values():
            _add_fraction(target, n, q)
        if not target:
            del out[o]


def reduce_fraction(n: fmpq_mpoly, q: fmpq_mpoly) -> tuple[fmpq_mpoly, fmpq_mpoly]:
    """n/q in lowest terms with q monic (leading coefficient 1 in lex order)."""
    if n.is_zero():
        return n, n + 1  # 0 = 0/1
    g = n.gcd(q)
    if not g.is_one():
        n, q = n / g, q / g
    lc = q.leading_coefficient()
    if lc != 1:
        n, q = n / lc, q / lc
    return n, q
