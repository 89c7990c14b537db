"""One JSON encoding of exact values for every file the toolkit writes (oracles, signal, explore).

A value becomes ``{"exact": <string SymPy parses back>, "float": <nearest double or null>}``; lists and
matrices become the same two keys holding nested lists. The float is null when the value contains
symbols, abstract functions or unresolved ``Piecewise`` indicators.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator

import mpmath
import sympy as sp
from flint import arb

from rwtoolkit.engines.exact.arithmetic._atoms import (
    AtomPrinter,
    expand_atoms,
    free_symbols,
    has_atoms,
    has_undefined,
)
from rwtoolkit.engines.exact.arithmetic._dag import PRECISIONS, Node, dag_ball, dag_float
from rwtoolkit.engines.exact.arithmetic._decide import Unsupported, enclose, nearest_float


@contextlib.contextmanager
def long_integers() -> Iterator[None]:
    """Exact rationals of late steps have thousands of digits: lift Python's int<->str guard."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def exact_string(expr: object) -> str:
    """``expr`` as a string that ``sympy.sympify`` parses back to the same value (named atoms as exp)."""
    return AtomPrinter().doprint(sp.sympify(expr))


def nearest_double(expr: object) -> float | None:
    """The double nearest an exact number; None when it has symbols, an abstract loss or a Piecewise.

    >>> nearest_double(sp.Rational(1, 3)), nearest_double(sp.Symbol('p'))
    (0.3333333333333333, None)

    A value of the ``DAG`` arithmetic is evaluated from its program (``_dag.dag_float``), without SymPy.
    """
    if isinstance(expr, Node):
        return dag_float(expr)
    expr = sp.sympify(expr)
    if free_symbols(expr) or has_undefined(expr):
        return None
    value = nearest_float(expr)
    if value is None:  # nodes the rigorous intervals do not cover: SymPy's adaptive evalf
        value = float(sp.N(expand_atoms(expr), 30))
    if not math.isfinite(value):
        raise ValueError(f"value {expr} is not finite; refusing to write NaN/inf")
    return value


def decimal_value(expr: object, digits: int = 30) -> sp.Float | None:
    """``expr`` as a SymPy Float with ``digits`` correct significant digits; None when it has symbols or an
    abstract loss.

    Values with named exponentials (late steps of ``derive``) are evaluated through a rigorous interval
    enclosure that visits each shared subexpression once, refined until its width is below
    10^-digits of its size, instead of SymPy's ``evalf``, which re-walks the nested exponentials.

    >>> decimal_value(sp.exp(sp.Rational(1, 3)) / 7, 20)
    0.19937320358372707552
    """
    if isinstance(expr, Node):  # a value of the DAG arithmetic: its program's certified balls
        return _dag_decimal(expr, digits)
    expr = sp.sympify(expr)
    if free_symbols(expr) or has_undefined(expr):
        return None
    if has_atoms(expr):
        bits = int(digits * 3.33) + 16
        for prec in (bits, 2 * bits, 4 * bits):
            try:
                box = enclose(expr, prec)
            except Unsupported:  # a node the intervals do not cover (e.g. Piecewise): SymPy's evalf below
                break
            with mpmath.workprec(
                prec
            ):  # the ends converted at the enclosure's precision, not mpmath's 53 bits
                lo, hi = (mpmath.mpf(end) for end in box._mpi_)
                if hi - lo <= abs(lo + hi) / 2 * mpmath.mpf(10) ** (-digits - 1):
                    return sp.Float((lo + hi) / 2, digits)
        expr = expand_atoms(expr)
    return sp.N(expr, digits)


def _dag_decimal(x: Node, digits: int) -> sp.Float:
    """A ``DAG`` node as a SymPy Float with ``digits`` correct significant digits (its balls at rising
    precision); one line where no ball at the top precision is that narrow."""
    for prec in PRECISIONS:
        ball = dag_ball(x, prec)
        if ball.is_finite() and ball.rad() <= abs(ball.mid()) * arb(10) ** (-digits - 1):
            with mpmath.workprec(prec):
                return sp.Float(mpmath.mpf(ball.mid().str(prec // 3, radius=False)), digits)
    raise ValueError(f"no {digits}-digit value of {x!r}: its ball at {PRECISIONS[-1]} bits is wider")


def exact_json(obj: object) -> dict:
    """{"exact": nested strings, "float": nested floats or null} for a scalar, list or Matrix.

    >>> exact_json(sp.Rational(3, 10)), exact_json([1, sp.Symbol("p")])
    ({'exact': '3/10', 'float': 0.3}, {'exact': ['1', 'p'], 'float': None})
    """
    if isinstance(obj, sp.MatrixBase):
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        parts = [exact_json(o) for o in obj]
        floats = [p["float"] for p in parts]
        return {"exact": [p["exact"] for p in parts], "float": None if None in floats else floats}
    return {"exact": exact_string(obj), "float": nearest_double(obj)}
