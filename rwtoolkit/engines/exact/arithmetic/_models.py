"""The exact arithmetic of ``rwtoolkit.models``: SymPy elements in numpy object arrays, decisions by ``_decide.sign``.

Every model of the registry runs exactly through it (``rwtoolkit.engines.exact.derive_model``): rationals stay rationals,
exponentials stay exact as the engine's named atoms (``rwtoolkit.engines.exact.arithmetic._atoms.exp_atom``: exp(a) once per distinct a), and a comparison is decided by algebra or by a
certified evaluation, never by a rounded value (docs/guide/exact.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from flint import fmpq
from sympy.core.sympify import converter

from rwtoolkit.engines.exact.arithmetic._atoms import exp_atom, has_atoms
from rwtoolkit.engines.exact.arithmetic._dag import Node, dag_element, dag_float, dag_sign, sympy_value
from rwtoolkit.engines.exact.arithmetic._decide import nearest_float, sign
from rwtoolkit.models import BALL_ENGINE, ObjectArithmetic

# A rational element is a python-flint fmpq (tens of times faster than a SymPy Rational on the long
# rationals of late steps); it meets SymPy expressions as the Rational it is.
converter[fmpq] = lambda q: sp.Rational(int(q.p), int(q.q))


def exact_element(value: Any) -> fmpq | sp.Expr | Node:
    """An element of the exact arithmetic: an fmpq for a rational, a node of the ``DAG`` arithmetic as it is,
    else the SymPy expression (``dag_element``'s conversion, which refuses what is not rational)."""
    try:
        return dag_element(value)
    except ValueError:
        return sp.sympify(value)


def _exp(x: fmpq | sp.Expr) -> fmpq | sp.Expr:
    if isinstance(x, fmpq):
        return fmpq(1) if x == 0 else exp_atom(sp.Rational(int(x.p), int(x.q)))
    return exp_atom(x)


def _sqrt(x: fmpq | sp.Expr) -> fmpq | sp.Expr:
    """√x: an fmpq where x is the square of a rational, else SymPy's exact root."""
    if isinstance(x, fmpq) and x >= 0:
        p, q = int(x.p), int(x.q)
        rp, rq = math.isqrt(p), math.isqrt(q)
        if rp * rp == p and rq * rq == q:
            return fmpq(rp, rq)
    return exact_element(sp.sqrt(sp.sympify(x)))


def _sign(x: fmpq | sp.Expr | Node) -> int | None:
    if isinstance(x, fmpq):
        return (x > 0) - (x < 0)
    if isinstance(x, Node):  # a value of the DAG arithmetic (a sequence model's trajectory)
        return dag_sign(x)
    return sign(x)


def _float(value: fmpq | sp.Expr | Node) -> float:
    if isinstance(value, fmpq):
        return int(value.p) / int(value.q)
    if isinstance(value, Node):
        return dag_float(value)
    x = nearest_float(value)
    if x is None:
        raise ValueError(f"no float value for {value} (symbols left)")
    return x


def to_sympy(value: Any) -> Any:
    """An element (or an array of them) as SymPy: rationals become ``sympy.Rational``, a node of the ``DAG``
    arithmetic its expression (``_dag.sympy_value``: the program's own tree, exp(a) as a named atom)."""
    if isinstance(value, np.ndarray):
        return np.vectorize(to_sympy, otypes=[object])(value) if value.size else value
    if isinstance(value, Node):
        return sympy_value(value)
    return sp.sympify(value)


#: The exact arithmetic: fmpq rationals, SymPy expressions where exponentials of non-zero logits enter.
EXACT = ObjectArithmetic(
    "exact", exact_element, exp=_exp, sign=_sign, to_float=_float, sqrt=_sqrt, instead=BALL_ENGINE
)


def _log(x: fmpq | sp.Expr) -> fmpq | sp.Expr:
    expr = sp.sympify(x)
    # SymPy's log would study a large argument holding exponential atoms again: it is positive (a probability).
    return exact_element(sp.log(expr, evaluate=not has_atoms(expr)))


def exact_log(a: np.ndarray) -> np.ndarray:
    """The elementwise natural logarithm of positive exact elements, as SymPy's exact ``log`` (log(1/2) =
    −log 2): the value of a cross-entropy objective in the exact arithmetic (``rwtoolkit.models.CrossEntropy``,
    whose gradient needs no logarithm). EXACT itself has none, so a model's forward pass holds no logarithm.

    >>> exact_log(EXACT.asarray([[1, "1/2"]])).tolist()
    [[0, -log(2)]]
    """
    return EXACT.apply(_log, a)


class ExactLoss:
    """ℓ and ℓ' of a ``rwtoolkit.engines.exact`` loss, elementwise on object arrays of label scores."""

    def __init__(self, value: Callable[[sp.Expr], sp.Expr], derivative: Callable[[sp.Expr], sp.Expr]) -> None:
        self._value, self._derivative = value, derivative

    def value(self, z: np.ndarray) -> np.ndarray:
        return EXACT.apply(lambda v: exact_element(self._value(sp.sympify(v))), z)

    def derivative(self, z: np.ndarray) -> np.ndarray:
        return EXACT.apply(lambda v: exact_element(self._derivative(sp.sympify(v))), z)
