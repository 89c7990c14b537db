"""Reverse-mode differentiation of a model's forward pass, in any arithmetic.

A model's forward pass is a composition of the primitives of :class:`Tape`: matrix product, sum, difference,
elementwise product and quotient (with broadcasting), the product with a constant, exp, log, square root, ReLU,
GELU, softmax over the last axis (with a constant mask), log-softmax, layer norm, mean and sum over an axis,
reshape, the transpose of the last two axes and any permutation of axes, concatenation, and gather along an
axis. Each primitive records its inputs and its vector-Jacobian product, written once in terms of
:class:`~rwtoolkit.models.Arithmetic` (:class:`~rwtoolkit.models.ExtendedArithmetic` for the standard
architectures' primitives); :meth:`Tape.gradient` runs them backwards. So the gradient of every model, in every arithmetic, comes from
the one forward definition: nobody writes Lemma B.1 by hand again (the paper's gradient is a test of the
tape, tests/test_models.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rwtoolkit.models._arith import BALL_ENGINE, Arithmetic, Array

#: The alternative a primitive names where an exact arithmetic cannot hold its values.


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

    def softmax(self, a: Operand, mask: Any = None) -> Var:
        """Softmax over the last axis; its VJP is S ⊙ (g − Σ g S).

        ``mask``: a constant boolean array broadcasting to ``a``'s shape; the entries where it is False are left
        out of the softmax and are exactly 0 in S (the −∞ of ``masked_fill(−inf)``: a causal mask is
        ``np.tril(np.ones((L, L), bool))``). Their VJP is 0 by the same formula, as S is 0 there. A row with every
        entry left out is refused in one line.
        """
        A = _value(a)
        if mask is None:
            S = self.ar.softmax(A)
        else:
            S = self._needs("softmax with a mask", "masked_softmax")(A, self._mask(A, mask))
        return self._var(S, (a, lambda g: S * (g - self.ar.sum(g * S, -1, keepdims=True))))

    def log_softmax(self, a: Operand) -> Var:
        """log softmax over the last axis, a − log Σ exp(a) (stably where the arithmetic rounds); its VJP is
        g − S Σ g, with S the softmax. It needs a logarithm: the exact arithmetic refuses it in one line."""
        A = _value(a)
        out = self._needs("log_softmax", "log_softmax")(A)
        S = self.ar.softmax(A)
        return self._var(out, (a, lambda g: g - S * self.ar.sum(g, -1, keepdims=True)))

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

    def sub(self, a: Operand, b: Operand) -> Var:
        """The elementwise difference a − b (broadcast); its VJPs are g and −g, summed to each shape."""
        A, B = _value(a), _value(b)
        return self._var(
            A - B, (a, lambda g: self._unbroadcast(g, A.shape)), (b, lambda g: self._unbroadcast(-g, B.shape))
        )

    def mul(self, a: Operand, b: Operand) -> Var:
        """The elementwise product a ⊙ b of two values (broadcast); its VJPs are g ⊙ b and g ⊙ a."""
        A, B = _value(a), _value(b)
        return self._var(
            A * B,
            (a, lambda g: self._unbroadcast(g * B, A.shape)),
            (b, lambda g: self._unbroadcast(g * A, B.shape)),
        )

    def div(self, a: Operand, b: Operand) -> Var:
        """The elementwise quotient q = a / b (broadcast); its VJPs are g / b and −g ⊙ q / b."""
        A, B = _value(a), _value(b)
        Q = A / B
        return self._var(
            Q,
            (a, lambda g: self._unbroadcast(g / B, A.shape)),
            (b, lambda g: self._unbroadcast(-(g * Q) / B, B.shape)),
        )

    def exp(self, a: Operand) -> Var:
        """exp(a) elementwise; its VJP is g ⊙ exp(a)."""
        E = self.ar.exp(_value(a))
        return self._var(E, (a, lambda g: g * E))

    def log(self, a: Operand) -> Var:
        """The natural logarithm of entries > 0; its VJP is g / a."""
        A = _value(a)
        return self._var(self.ar.log(A), (a, lambda g: g / A))

    def sqrt(self, a: Operand) -> Var:
        """The square root of entries > 0 (``Arithmetic.sqrt``); its VJP is g / (2 √a)."""
        R = self.ar.sqrt(_value(a))
        return self._var(R, (a, lambda g: g / (2 * R)))

    def gelu(self, a: Operand) -> Var:
        """GELU, the erf form (torch's default): x Φ(x), Φ(x) = (1 + erf(x/√2))/2; its VJP is
        g ⊙ (Φ(x) + x φ(x)), φ(x) = exp(−x²/2)/√(2π).

        erf at a rational is transcendental: an exact arithmetic refuses GELU in one line naming the ball engine.
        """
        self._inexact("gelu", "erf is not exact")
        A = _value(a)
        two = self.ar.asarray(2)
        Phi = (1 + self._needs("gelu", "erf")(A / self.ar.sqrt(two))) / 2
        phi = self.ar.exp(-(A * A) / 2) / self.ar.sqrt(two * self._needs("gelu", "pi")())
        return self._var(A * Phi, (a, lambda g: g * (Phi + A * phi)))

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
        return self._var(self.ar.sum(A, ax), (a, lambda g: self._expand(g, A.shape, ax)))

    def mean(self, a: Operand, axis: int) -> Var:
        """The mean over one axis, the sum divided by its size n; its VJP is g / n on every entry of the axis."""
        A = _value(a)
        ax = axis % A.ndim
        n = A.shape[ax]
        return self._var(self.ar.sum(A, ax) / n, (a, lambda g: self._expand(g / n, A.shape, ax)))

    def permute(self, a: Operand, axes: Sequence[int]) -> Var:
        """The axes of ``a`` reordered: axis i of the result is axis ``axes[i]`` of ``a`` (numpy's transpose,
        torch's permute); its VJP is g permuted back."""
        A = _value(a)
        order = self._axes(A.ndim, axes)
        back = [0] * len(order)
        for i, axis in enumerate(order):
            back[axis] = i
        return self._var(_permuted(A, order), (a, lambda g: _permuted(g, back)))

    def concat(self, parts: Sequence[Operand], axis: int) -> Var:
        """The values joined along ``axis`` (numpy's concatenate, torch's cat); each part's VJP is its slice of g."""
        values = [_value(p) for p in parts]
        if not values:
            raise ValueError("concat: no values to join")
        ndim = values[0].ndim
        if not -ndim <= axis < ndim:
            raise ValueError(f"concat: axis={axis} out of range for {ndim} axes")
        ax = axis % ndim
        shapes = [tuple(v.shape) for v in values]
        for shape in shapes:
            if len(shape) != ndim or shape[:ax] + shape[ax + 1 :] != shapes[0][:ax] + shapes[0][ax + 1 :]:
                raise ValueError(f"concat: shapes {shapes} differ outside axis {ax}")
        out = self._needs("concat", "concat")(values, ax)
        edges = np.cumsum([0] + [s[ax] for s in shapes])

        def part(lo: int, hi: int) -> Callable[[Array], Array]:
            return lambda g: g[(slice(None),) * ax + (slice(lo, hi),)]

        return self._var(out, *((p, part(int(edges[i]), int(edges[i + 1]))) for i, p in enumerate(parts)))

    def gather(self, a: Operand, indices: Any, axis: int) -> Var:
        """Entries of ``a`` taken along ``axis`` at constant integer ``indices`` (numpy's take_along_axis, torch's
        gather): out[..., j, ...] = a[..., indices[..., j, ...], ...], ``indices`` with as many axes as ``a`` and
        its other sizes equal to a's or 1 (broadcast). Its VJP scatter-adds g back: an entry taken twice gets
        both contributions, an entry never taken gets 0.
        """
        A = _value(a)
        shape = tuple(A.shape)
        idx = np.asarray(indices)
        if idx.dtype.kind not in "iu" or idx.ndim != len(shape):
            raise ValueError(
                f"gather: indices must be integers with {len(shape)} axes, got dtype {idx.dtype} with {idx.ndim}"
            )
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"gather: axis={axis} out of range for {len(shape)} axes")
        ax = axis % len(shape)
        n = shape[ax]
        if idx.size and not (-n <= idx.min() and idx.max() < n):
            raise ValueError(
                f"gather: indices must lie in [-{n}, {n}) along axis {ax}, got {idx.min()}..{idx.max()}"
            )
        rest = [1 if d == ax else s for d, s in enumerate(shape)]
        rest_idx = [1 if d == ax else s for d, s in enumerate(idx.shape)]
        try:
            other = np.broadcast_shapes(tuple(rest), tuple(rest_idx))
        except ValueError:
            raise ValueError(
                f"gather: indices of shape {idx.shape} do not broadcast against {shape}"
            ) from None
        out_shape = other[:ax] + (idx.shape[ax],) + other[ax + 1 :]
        taken = np.array(np.broadcast_to(idx % n if n else idx, out_shape))  # writable: torch indexes with it
        grid = np.indices(out_shape, sparse=True)
        where = tuple(
            taken if d == ax else (grid[d] if shape[d] > 1 else 0 * grid[d]) for d in range(len(shape))
        )
        # (out..., n): which entry of the axis each output took; the VJP sums g over it
        onehot = self.ar.asarray((taken[..., None] == np.arange(n)).astype(np.int64))

        def vjp(g: Array) -> Array:
            scattered = self.ar.sum(g[..., None] * onehot, ax)  # (out without ax..., n)
            moved = _permuted(scattered, [*range(ax), len(shape) - 1, *range(ax, len(shape) - 1)])
            return self._unbroadcast(moved, shape)

        return self._var(A[where], (a, vjp))

    def layer_norm(
        self, a: Operand, eps: Any, weight: Operand | None = None, bias: Operand | None = None
    ) -> Var:
        """Layer norm over the last axis, torch's: (a − mean a) / √(var a + ε) ⊙ weight + bias, the variance
        the biased one (divided by the axis size); ``weight`` and ``bias`` (the elementwise affine, tape values or
        constants) optional. A composition of sub, mul, mean, sqrt, div and add, so its VJP is theirs.

        √(var + ε) is irrational unless var + ε is a rational square: an exact arithmetic refuses layer norm in
        one line naming the ball engine (MATH §14: algebraic, not rational).
        """
        self._inexact("layer_norm", "√(var + ε) is irrational in general")
        A = _value(a)
        lifted = tuple(A.shape[:-1]) + (1, A.shape[-1])  # the mean keeps its axis: shape (..., 1)
        centred = self.sub(a, self.mean(self.reshape(a, lifted), -1))
        var = self.mean(self.reshape(self.mul(centred, centred), lifted), -1)
        out = self.div(centred, self.sqrt(self.add(var, self.ar.asarray(eps))))
        if weight is not None:
            out = self.mul(out, weight)
        return out if bias is None else self.add(out, bias)

    # what the primitives share -------------------------------------------------------------------
    def _needs(self, op: str, method: str) -> Callable[..., Any]:
        """The arithmetic's ``method`` (``ExtendedArithmetic``), or one line naming ``op`` where it has none."""
        fn = getattr(self.ar, method, None)
        if fn is None:
            raise ValueError(
                f"{op}: the {self.ar.name} arithmetic has no {method} (ExtendedArithmetic.{method})"
            )
        return fn

    def _inexact(self, op: str, why: str) -> None:
        """One line naming ``op`` and the ball engine where the arithmetic is exact (``ExtendedArithmetic.exact``)."""
        if getattr(self.ar, "exact", False):
            raise ValueError(f"{op}: {why}; the {self.ar.name} arithmetic cannot run it; {BALL_ENGINE}")

    @staticmethod
    def _mask(A: Array, mask: Any) -> np.ndarray:
        """The constant boolean mask broadcast to ``A``'s shape, or one line: not boolean, not broadcasting, a
        row with every entry left out."""
        keep = np.asarray(mask)
        shape = tuple(A.shape)
        if keep.dtype != np.bool_:
            raise ValueError(
                f"softmax: mask must be boolean (True: kept, False: left out), got dtype {keep.dtype}"
            )
        try:
            if np.broadcast_shapes(keep.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"softmax: mask of shape {keep.shape} does not broadcast to the scores' {shape}"
            ) from None
        keep = np.array(np.broadcast_to(keep, shape))  # writable: torch takes it as a tensor
        empty = ~keep.any(axis=-1)
        if empty.any():
            row = tuple(int(i) for i in np.argwhere(empty)[0])
            raise ValueError(
                f"softmax: the mask leaves out every entry of row {row} (a softmax over no entries)"
            )
        return keep

    @staticmethod
    def _axes(ndim: int, axes: Sequence[int]) -> list[int]:
        order = [int(x) % ndim if -ndim <= int(x) < ndim else -1 for x in axes]
        if sorted(order) != list(range(ndim)):
            raise ValueError(f"permute: axes={list(axes)} is not a permutation of the {ndim} axes")
        return order

    def _expand(self, g: Array, shape: Any, ax: int) -> Array:
        """``g`` (``shape`` without axis ``ax``) repeated along that axis (the VJP of a sum over it)."""
        shape = tuple(shape)
        return g.reshape(shape[:ax] + (1,) + shape[ax + 1 :]) + self.ar.zeros(shape)

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


def _permuted(A: Array, axes: Sequence[int]) -> Array:
    """``A`` with axis i of the result axis ``axes[i]`` of ``A``, by swaps of two axes (numpy and torch spell
    ``swapaxes`` alike, and their permutations differently)."""
    current = list(range(len(axes)))
    for i, axis in enumerate(axes):
        j = current.index(axis)
        if j != i:
            A = A.swapaxes(i, j)
            current[i], current[j] = current[j], current[i]
    return A


__all__ = ["Operand", "Tape", "Var"]
