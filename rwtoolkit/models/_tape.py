"""Reverse-mode differentiation of a model's forward pass, in any arithmetic.

A model's forward pass is a composition of the primitives of :class:`Tape` (matrix product, transpose of
the last two axes, softmax over the last axis, sum, elementwise product with a constant, ReLU). Each primitive
records its inputs and its vector-Jacobian product, written once in terms of :class:`~rwtoolkit.models.Arithmetic`;
:meth:`Tape.gradient` runs them backwards. So the gradient of every model, in every arithmetic, comes from
the one forward definition: nobody writes Lemma B.1 by hand again (the paper's gradient is a test of the
tape, tests/test_models.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rwtoolkit.models._arith import Arithmetic, Array


class Var:
    """A value on the tape: ``value`` (an array of the arithmetic) and how it was made."""

    __slots__ = ("value", "index", "parents")

    def __init__(self, value: Array, index: int, parents: tuple[tuple[Var, Callable[[Array], Array]], ...]):
        self.value = value
        self.index = index
        self.parents = parents

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)


Operand = Var | Array


def _value(x: Operand) -> Array:
    return x.value if isinstance(x, Var) else x


class Tape:
    """Records primitives on values of one arithmetic and differentiates them in reverse.

    >>> from rwtoolkit.models import FLOAT64
    >>> import numpy as np
    >>> tape = Tape(FLOAT64)
    >>> A = tape.input(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> y = tape.matmul(A, np.array([1.0, 1.0]))
    >>> tape.gradient(y, np.array([1.0, 0.0]), {"A": A})["A"].tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """

    def __init__(self, arithmetic: Arithmetic) -> None:
        self.ar = arithmetic
        self._count = 0

    def _var(self, value: Array, *parents: tuple[Operand, Callable[[Array], Array]]) -> Var:
        self._count += 1
        kept = tuple((p, vjp) for p, vjp in parents if isinstance(p, Var))
        return Var(value, self._count, kept)

    def input(self, value: Array) -> Var:
        """A value to differentiate with respect to (a parameter)."""
        return self._var(value)

    # primitives ----------------------------------------------------------------------------------
    def matmul(self, a: Operand, b: Operand) -> Var:
        """``a @ b`` with numpy's rules (1-D operands promoted, leading axes broadcast)."""
        A, B = _value(a), _value(b)
        return self._var(
            A @ B, (a, lambda g: self._matmul_left(A, B, g)), (b, lambda g: self._matmul_right(A, B, g))
        )

    def swap(self, a: Operand) -> Var:
        """The transpose of the last two axes."""
        return self._var(_value(a).swapaxes(-1, -2), (a, lambda g: g.swapaxes(-1, -2)))

    def softmax(self, a: Operand) -> Var:
        """Softmax over the last axis; its VJP is S ⊙ (g − Σ g S)."""
        S = self.ar.softmax(_value(a))
        return self._var(S, (a, lambda g: S * (g - self.ar.sum(g * S, -1, keepdims=True))))

    def scale(self, a: Operand, c: Array) -> Var:
        """The elementwise product with a constant ``c`` (broadcast)."""
        A = _value(a)
        return self._var(A * c, (a, lambda g: self._unbroadcast(g * c, A.shape)))

    def relu(self, a: Operand) -> Var:
        """max(a, 0) elementwise; its VJP passes g where a > 0 and 0 elsewhere (0 at a = 0, as torch's relu).

        Whether an entry is > 0 is decided by the arithmetic (``Arithmetic.positive``): exactly in the exact
        arithmetics, refused in one line where a ball or an expression cannot decide it.
        """
        A = _value(a)
        on = self.ar.positive(A)
        return self._var(A * on, (a, lambda g: g * on))

    def add(self, a: Operand, b: Operand) -> Var:
        """The elementwise sum (broadcast)."""
        A, B = _value(a), _value(b)
        return self._var(
            A + B, (a, lambda g: self._unbroadcast(g, A.shape)), (b, lambda g: self._unbroadcast(g, B.shape))
        )

    def reshape(self, a: Operand, shape: tuple[int, ...]) -> Var:
        """The same entries in another shape."""
        A = _value(a)
        return self._var(A.reshape(shape), (a, lambda g: g.reshape(tuple(A.shape))))

    def attend(self, X: Operand, S: Operand) -> Var:
        """X S per input: X (n, K, N) and S (n, N) give (n, K)."""
        n, N = _value(S).shape
        return self.reshape(self.matmul(X, self.reshape(S, (n, N, 1))), (n, -1))

    def sum(self, a: Operand, axis: int) -> Var:
        """The sum over one axis."""
        A = _value(a)
        ax = axis % A.ndim

        def vjp(g: Array) -> Array:
            expanded = g.reshape(tuple(A.shape[:ax]) + (1,) + tuple(A.shape[ax + 1 :]))
            return expanded + self.ar.zeros(A.shape)

        return self._var(self.ar.sum(A, ax), (a, vjp))

    # the backward pass -----------------------------------------------------------------------------
    def gradient(self, out: Var, cotangent: Array, wrt: Mapping[str, Var]) -> dict[str, Array]:
        """The vector-Jacobian product cotangentᵀ ∂out/∂x for every ``x`` of ``wrt`` (zeros if unreached)."""
        grads: dict[int, Array] = {out.index: cotangent}
        nodes: dict[int, Var] = {}
        stack = [out]
        while stack:  # every Var that ``out`` depends on
            v = stack.pop()
            if v.index not in nodes:
                nodes[v.index] = v
                stack.extend(p for p, _ in v.parents)
        for index in sorted(nodes, reverse=True):  # children were made after their parents
            v = nodes[index]
            if index not in grads:
                continue
            g = grads[index]
            for parent, vjp in v.parents:
                contribution = vjp(g)
                grads[parent.index] = (
                    contribution if parent.index not in grads else grads[parent.index] + contribution
                )
        return {name: grads.get(v.index, self.ar.zeros(v.shape)) for name, v in wrt.items()}

    # helpers of the matrix product ----------------------------------------------------------------
    def _unbroadcast(self, g: Array, shape: Any) -> Array:
        """Sum ``g`` down to ``shape`` (undo numpy broadcasting)."""
        shape = tuple(shape)
        while g.ndim > len(shape):
            g = self.ar.sum(g, 0)
        for axis, size in enumerate(shape):
            if size == 1 and g.shape[axis] != 1:
                g = self.ar.sum(g, axis, keepdims=True)
        return g

    def _matmul_left(self, A: Array, B: Array, g: Array) -> Array:
        A2, B2, g2 = self._promoted(A, B, g)
        return self._unbroadcast(g2 @ B2.swapaxes(-1, -2), A2.shape).reshape(tuple(A.shape))

    def _matmul_right(self, A: Array, B: Array, g: Array) -> Array:
        A2, B2, g2 = self._promoted(A, B, g)
        return self._unbroadcast(A2.swapaxes(-1, -2) @ g2, B2.shape).reshape(tuple(B.shape))

    @staticmethod
    def _promoted(A: Array, B: Array, g: Array) -> tuple[Array, Array, Array]:
        """1-D operands as matrices (a row for A, a column for B) and the cotangent shaped to match."""
        if A.ndim == 1:
            A, g = (
                A.reshape((1,) + tuple(A.shape)),
                g.reshape(tuple(g.shape[:-1]) + (1,) + tuple(g.shape[-1:])),
            )
        if B.ndim == 1:
            B, g = B.reshape(tuple(B.shape) + (1,)), g.reshape(tuple(g.shape) + (1,))
        return A, B, g


__all__ = ["Operand", "Tape", "Var"]
