"""The exact arithmetic of ``rwmodels``: SymPy elements in numpy object arrays, decisions by ``_decide.sign``.

Every model of the registry runs exactly through it (``rwsymbolic.derive_model``): rationals stay rationals,
exponentials of rational scores stay exact (``sympy.exp``), and a comparison is decided by algebra or by a
certified evaluation, never by a rounded value (docs/guide/exact.md).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from rwmodels import ObjectArithmetic
from rwsymbolic._decide import nearest_float, sign


def _convert(value: Any) -> sp.Expr:
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    return sp.sympify(value)


def _float(value: sp.Expr) -> float:
    x = nearest_float(value)
    if x is None:
        raise ValueError(f"no float value for {value} (symbols left)")
    return x


#: The exact arithmetic (SymPy).
EXACT = ObjectArithmetic("exact", _convert, exp=sp.exp, sign=sign, to_float=_float)


class ExactLoss:
    """ℓ and ℓ' of a ``rwsymbolic`` loss, elementwise on object arrays of label scores."""

    def __init__(self, value: Callable[[sp.Expr], sp.Expr], derivative: Callable[[sp.Expr], sp.Expr]) -> None:
        self._value, self._derivative = value, derivative

    def value(self, z: np.ndarray) -> np.ndarray:
        return EXACT.apply(self._value, z)

    def derivative(self, z: np.ndarray) -> np.ndarray:
        return EXACT.apply(self._derivative, z)
