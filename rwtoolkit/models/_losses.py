"""The built-in losses ℓ(z) of the label score z = e_yᵀ f and their derivatives, written once against the arithmetic.

One definition per name of ``rwtoolkit.tasks.LOSSES``: ℓ and ℓ' as formulas in the operations of
:class:`~rwtoolkit.models.Arithmetic` (its ``log`` and ``exp``, and the arrays' own ``+ - * / **``). Every engine reads
them through its arithmetic: torch tensors (``rwtoolkit.engines.numeric``: ``TensorLoss``, ``SampleLoss``, the
batched engine), arb balls (``rwtoolkit.engines.balls``), mpmath and dual numbers (the exact engine's analyses), and
SymPy expressions, from which the exact engine takes the formulas it differentiates and evaluates
(``rwtoolkit.engines.exact.make_loss``).

>>> import numpy as np
>>> from rwtoolkit.models import FLOAT64
>>> loss = ArithmeticLoss("squared", 0.1, FLOAT64)
>>> loss.value(np.array([0.5])).tolist(), loss.derivative(np.array([0.5])).tolist()
([0.25], [-1.0])
"""

from __future__ import annotations

from typing import Any, Protocol

from rwtoolkit.models._arith import Array

#: The losses written here: the names of ``rwtoolkit.tasks.LOSSES`` (tests/test_loss_names.py holds them equal;
#: the table is not imported, since ``rwtoolkit.tasks`` loads SymPy and this module serves torch alone too).
BUILT_IN = ("log", "squared", "exp")


class LossArithmetic(Protocol):
    """What a loss reads of an arithmetic (every :class:`~rwtoolkit.models.Arithmetic` has it): elementwise log, exp."""

    def log(self, a: Array) -> Array: ...

    def exp(self, a: Array) -> Array: ...


class ArithmeticLoss:
    """ℓ and ℓ' of the built-in loss ``name`` on arrays of ``arithmetic`` (an ``ElementLoss``).

    ``eps`` is ε of the log-loss −log(z + ε) (the other losses do not read it), an element of the arithmetic
    or a number its arrays add to. ℓ and ℓ':

    - ``"log"``: −log(z + ε) and −1/(z + ε) (defined for z > −ε; the callers check the domain);
    - ``"squared"``: (1 − z)² and 2(z − 1);
    - ``"exp"``: exp(−z) and −exp(−z).
    """

    def __init__(self, name: str, eps: Any, arithmetic: LossArithmetic) -> None:
        if name not in BUILT_IN:
            raise ValueError(f"loss={name!r} is not one of {', '.join(BUILT_IN)}")
        self.name, self.eps, self.ar = name, eps, arithmetic

    def value(self, z: Array) -> Array:
        if self.name == "log":
            return -self.ar.log(z + self.eps)
        if self.name == "squared":
            gap = 1 - z
            return gap * gap  # (1 − z)², as a product: dual numbers have no power
        return self.ar.exp(-z)

    def derivative(self, z: Array) -> Array:
        if self.name == "log":
            return -1 / (z + self.eps)
        if self.name == "squared":
            return 2 * (z - 1)
        return -self.ar.exp(-z)


__all__ = ["BUILT_IN", "ArithmeticLoss", "LossArithmetic"]
