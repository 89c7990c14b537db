"""The arithmetic-neutral layer: the few array operations a model's definition and its gradient use.

A model is written once against :class:`Arithmetic` (docs/guide/models.md). Each engine supplies one:
the exact engine SymPy elements in numpy object arrays (``rwtoolkit.engines.exact``), the certified engine python-flint
``arb`` balls in object arrays (``rwtoolkit.engines.balls``), the float engines numpy float64 (:data:`FLOAT64`, here)
and torch tensors (``rwtoolkit.engines.numeric``). Matrix products, indexing, reshapes and elementwise ``+ - * /`` are
the arrays' own operators (numpy and torch agree on them); everything whose spelling differs, and the
operations whose meaning depends on the arithmetic (``exp``, ``log`` and ``sqrt``, and ``sign`` and
``positive`` for exact decisions), is a method here.

:class:`ExtendedArithmetic` adds what the standard architectures' primitives need (MATH §14: GELU's ``erf`` and
``pi``, the masked softmax of a causal mask, ``log_softmax``, ``concat``) and whether the elements are ``exact``.
:class:`ObjectArithmetic` and :class:`FloatArithmetic` have it; an arithmetic without one of these operations has
``rwtoolkit.models.Tape`` refuse the primitive that needs it in one line naming the primitive and the operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

#: An array of the arithmetic: a numpy array (object or float64) or a torch tensor.
Array = Any


class Arithmetic(Protocol):
    """The operations a model definition may use beyond an array's own operators."""

    name: str

    def asarray(self, values: Any) -> Array:
        """An array of this arithmetic from nested lists or a numpy array of exact rationals or floats."""
        ...

    def zeros(self, shape: Sequence[int]) -> Array: ...

    def exp(self, a: Array) -> Array: ...

    def log(self, a: Array) -> Array:
        """The elementwise natural logarithm of entries > 0 (the log-loss, ``rwtoolkit.models.ArithmeticLoss``)."""
        ...

    def sqrt(self, a: Array) -> Array:
        """The elementwise square root of entries ≥ 0 (exact where the arithmetic is: √(9/16) = 3/4)."""
        ...

    def softmax(self, a: Array) -> Array:
        """Softmax over the last axis."""
        ...

    def sum(self, a: Array, axis: int | tuple[int, ...], keepdims: bool = False) -> Array: ...

    def apply(self, fn: Callable[[Any], Any], a: Array) -> Array:
        """``fn`` applied elementwise (for object arrays) or to the whole array (numeric arrays)."""
        ...

    def sign(self, x: Any) -> int | None:
        """The sign of one element (-1, 0, 1), or None where this arithmetic cannot decide it."""
        ...

    def positive(self, a: Array) -> Array:
        """1 where an entry is > 0 and 0 elsewhere, as an array of this arithmetic (``Tape.relu``'s mask);
        one line naming the entry where this arithmetic cannot decide a sign."""
        ...

    def to_float(self, a: Array) -> np.ndarray:
        """Nearest float64 values (for read-outs and comparisons across arithmetics)."""
        ...

    def predict(self, f: Array) -> np.ndarray | None:
        """The smallest index among the maximal entries of each row (docs/notation.md), or None if undecided."""
        ...


class ExtendedArithmetic(Arithmetic, Protocol):
    """:class:`Arithmetic` with the operations of the standard architectures' primitives (``Tape.gelu``,
    ``Tape.softmax(a, mask)``, ``Tape.log_softmax``, ``Tape.concat``, ``Tape.layer_norm``).

    The tape looks each one up when a primitive needs it: an arithmetic without it runs every other primitive.
    """

    #: True where the elements are exact values (rationals, SymPy expressions): a primitive whose values are
    #: irrational at rational inputs (GELU's erf, layer norm's 1/√(var + ε)) is refused there, and the
    #: ball engine is named as the alternative.
    exact: bool

    def erf(self, a: Array) -> Array:
        """The elementwise error function erf(x) = (2/√π) ∫₀ˣ e^(−t²) dt (GELU, the erf form)."""
        ...

    def pi(self) -> Any:
        """π as an element of this arithmetic (erf′(x) = (2/√π) e^(−x²) in GELU's VJP)."""
        ...

    def masked_softmax(self, a: Array, mask: np.ndarray) -> Array:
        """Softmax over the last axis of the entries where the boolean ``mask`` (``a``'s shape) is True;
        exactly 0 where it is False, i.e. ``softmax(masked_fill(a, ~mask, −∞))``. Every row keeps an entry."""
        ...

    def log_softmax(self, a: Array) -> Array:
        """log softmax over the last axis, a − log Σ exp(a) (stably where the arithmetic rounds)."""
        ...

    def concat(self, arrays: Sequence[Array], axis: int) -> Array:
        """The arrays joined along ``axis`` (their other sizes equal)."""
        ...


#: What runs a computation an exact arithmetic refuses (GELU's erf, a layer norm's root, a logarithm, Adam's √v):
#: the end of each such one-line refusal.
BALL_ENGINE = 'use the ball engine (rw certify --model, or rwtoolkit.engines.select(model, "balls"))'


class ObjectArithmetic:
    """Elements of any Python number type in numpy object arrays (exact rationals, SymPy, arb balls).

    ``convert`` makes an element from a rational or int; ``exp``, ``log``, ``sqrt``, ``erf`` and ``sign`` act on
    one element (``exp``, ``log``, ``sqrt`` or ``erf`` None: the arithmetic has none, and what needs it is refused in
    one line, with ``instead``: what runs it); ``pi`` gives π as an element (at the working precision of a ball arithmetic). ``exact`` says whether the
    elements are exact values (:class:`ExtendedArithmetic`); by default they are exactly where no ``erf`` is given
    (an arithmetic that evaluates erf, a transcendental function, holds enclosures or approximations).

    >>> from fractions import Fraction
    >>> ar = ObjectArithmetic("fractions", Fraction, exp=None, sign=lambda x: (x > 0) - (x < 0))
    >>> (ar.asarray([[1, 2]]) @ ar.asarray([[3], [4]])).tolist()
    [[Fraction(11, 1)]]
    """

    def __init__(
        self,
        name: str,
        convert: Callable[[Any], Any],
        exp: Callable[[Any], Any] | None,
        sign: Callable[[Any], int | None],
        to_float: Callable[[Any], float] = float,
        sqrt: Callable[[Any], Any] | None = None,
        log: Callable[[Any], Any] | None = None,
        erf: Callable[[Any], Any] | None = None,
        pi: Callable[[], Any] | None = None,
        exact: bool | None = None,
        instead: str = "",
    ) -> None:
        self.name = name
        #: What runs what this arithmetic lacks, appended to the one line that refuses it ("" for nothing).
        self.instead = f"; {instead}" if instead else ""
        self._convert, self._exp, self._sign, self._float = convert, exp, sign, to_float
        self._sqrt, self._log, self._erf, self._pi = sqrt, log, erf, pi
        self.exact = erf is None if exact is None else exact

    def asarray(self, values: Any) -> np.ndarray:
        raw = np.asarray(values, dtype=object)
        out = np.empty(raw.shape, dtype=object)
        for index, value in np.ndenumerate(raw):
            out[index] = self._convert(value)
        return out

    def zeros(self, shape: Sequence[int]) -> np.ndarray:
        zero = self._convert(0)
        out = np.empty(tuple(shape), dtype=object)
        out.fill(zero)
        return out

    def exp(self, a: np.ndarray) -> np.ndarray:
        if self._exp is None:
            raise ValueError(f"the {self.name} arithmetic has no exponential{self.instead}")
        return self.apply(self._exp, a)

    def log(self, a: np.ndarray) -> np.ndarray:
        if self._log is None:
            raise ValueError(f"the {self.name} arithmetic has no logarithm{self.instead}")
        return self.apply(self._log, a)

    def sqrt(self, a: np.ndarray) -> np.ndarray:
        if self._sqrt is None:
            raise ValueError(f"the {self.name} arithmetic has no square root{self.instead}")
        return self.apply(self._sqrt, a)

    def erf(self, a: np.ndarray) -> np.ndarray:
        if self._erf is None:
            raise ValueError(f"the {self.name} arithmetic has no erf{self.instead}")
        return self.apply(self._erf, a)

    def pi(self) -> Any:
        if self._pi is None:
            raise ValueError(f"the {self.name} arithmetic has no π{self.instead}")
        return self._pi()

    def softmax(self, a: np.ndarray) -> np.ndarray:
        e = self.exp(a)
        return e / e.sum(axis=-1, keepdims=True)

    def masked_softmax(self, a: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """exp of the kept entries only (a left-out entry's logit is never exponentiated) over their sum;
        the left-out entries are this arithmetic's exact 0."""
        if self._exp is None:
            raise ValueError(f"the {self.name} arithmetic has no exponential{self.instead}")
        keep = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(a))
        zero = self._convert(0)
        e = np.empty(np.shape(a), dtype=object)
        for index, value in np.ndenumerate(np.asarray(a, dtype=object)):
            e[index] = self._exp(value) if keep[index] else zero
        out = e / e.sum(axis=-1, keepdims=True)
        out[~keep] = zero
        return out

    def log_softmax(self, a: np.ndarray) -> np.ndarray:
        if (
            self._log is None
        ):  # the exact arithmetic: a cross-entropy's gradient needs no logarithm (MATH §14)
            raise ValueError(f"log_softmax: the {self.name} arithmetic has no logarithm{self.instead}")
        return a - self.log(self.exp(a).sum(axis=-1, keepdims=True))

    def concat(self, arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
        return np.concatenate([np.asarray(x, dtype=object) for x in arrays], axis=axis)

    def sum(self, a: np.ndarray, axis: int | tuple[int, ...], keepdims: bool = False) -> np.ndarray:
        return np.sum(a, axis=axis, keepdims=keepdims)

    def apply(self, fn: Callable[[Any], Any], a: np.ndarray) -> np.ndarray:
        out = np.empty(np.shape(a), dtype=object)
        for index, value in np.ndenumerate(np.asarray(a, dtype=object)):
            out[index] = fn(value)
        return out

    def sign(self, x: Any) -> int | None:
        return self._sign(x)

    def positive(self, a: np.ndarray) -> np.ndarray:
        one, zero = self._convert(1), self._convert(0)

        def step(x: Any) -> Any:
            s = self._sign(x)
            if s is None:
                raise ValueError(f"the {self.name} arithmetic cannot decide whether {x} > 0 (a ReLU's input)")
            return one if s > 0 else zero

        return self.apply(step, a)

    def to_float(self, a: np.ndarray) -> np.ndarray:
        return np.vectorize(self._float, otypes=[np.float64])(np.asarray(a, dtype=object))

    def predict(self, f: np.ndarray) -> np.ndarray | None:
        out = np.empty(f.shape[0], dtype=np.int64)
        for n, row in enumerate(f):
            best = 0
            for k in range(1, len(row)):
                s = self._sign(row[k] - row[best])
                if s is None:
                    return None
                if s > 0:
                    best = k
            out[n] = best
        return out


class FloatArithmetic:
    """numpy float64 arrays (a stable softmax; ``sign`` is the float's sign).

    >>> FLOAT64.softmax(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    name = "float64"
    exact = False

    def asarray(self, values: Any) -> np.ndarray:
        return np.array(np.asarray(values, dtype=object).astype(float), dtype=np.float64)

    def zeros(self, shape: Sequence[int]) -> np.ndarray:
        return np.zeros(tuple(shape))

    def exp(self, a: np.ndarray) -> np.ndarray:
        return np.exp(a)

    def log(self, a: np.ndarray) -> np.ndarray:
        return np.log(a)

    def sqrt(self, a: np.ndarray) -> np.ndarray:
        return np.sqrt(a)

    def erf(self, a: np.ndarray) -> np.ndarray:
        return np.vectorize(math.erf, otypes=[np.float64])(a)

    def pi(self) -> float:
        return math.pi

    def softmax(self, a: np.ndarray) -> np.ndarray:
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def masked_softmax(self, a: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The softmax of ``a`` with −∞ where ``mask`` is False, shifted by the largest kept entry (stable)."""
        shifted = np.where(mask, a, -np.inf)
        e = np.exp(shifted - shifted.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def log_softmax(self, a: np.ndarray) -> np.ndarray:
        shifted = a - a.max(axis=-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))

    def concat(self, arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
        return np.concatenate(arrays, axis=axis)

    def sum(self, a: np.ndarray, axis: int | tuple[int, ...], keepdims: bool = False) -> np.ndarray:
        return np.sum(a, axis=axis, keepdims=keepdims)

    def apply(self, fn: Callable[[Any], Any], a: np.ndarray) -> np.ndarray:
        return fn(a)

    def sign(self, x: Any) -> int | None:
        return int(np.sign(x))

    def positive(self, a: np.ndarray) -> np.ndarray:
        return (a > 0).astype(np.float64)

    def to_float(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=np.float64)

    def predict(self, f: np.ndarray) -> np.ndarray:
        return np.argmax(f, axis=-1)  # the first maximal entry: the smallest index


#: The numpy float64 arithmetic.
FLOAT64 = FloatArithmetic()
