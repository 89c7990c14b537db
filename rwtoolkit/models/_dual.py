"""Forward-mode differentiation over any arithmetic, and Hessian-vector products by forward over reverse.

:class:`DualArithmetic` ``(base, n)`` is an :class:`~rwtoolkit.models.ExtendedArithmetic` whose arrays
(:class:`Dual`) carry a ``value`` (an array of ``base``) and a ``tangent`` (an array of ``base`` with one more,
leading, axis of length n: n directions at once). Every operation is written with ``base``'s methods and its
arrays' own operators only, so the duals run over float64 (:data:`~rwtoolkit.models.FLOAT64`), arb balls
(``rwtoolkit.engines.balls``), float balls, or any other arithmetic of the protocol; a constant (``asarray``,
``zeros``, a numpy array, a python number, an array of ``base``) has tangent 0 (stored as None).

The tape (``rwtoolkit.models.Tape``) differentiates in reverse with the same operations, so running
``rwtoolkit.models.evaluate(..., gradient=True)`` in a :class:`DualArithmetic` whose parameters' tangents are
directions v₁..v_n gives the gradient ∇L(θ) in the values and the Hessian-vector products H v₁..H v_n in the
tangents: :func:`hessian_vector_products` and :func:`hessian`, from the model's one definition, with no second
derivative written anywhere. Over a ball arithmetic the results are enclosures: the tangent of each operation is
its exact derivative (the product rule, the chain rule through exp, log, √, erf, softmax), evaluated in balls.
Any computation written in the arithmetic runs in duals as well: ``rwtoolkit.models.gradient_steps`` from
parameters with tangents v (the population from ``rwtoolkit.models.batch`` in the same :class:`DualArithmetic`)
carries the Jacobian of the update map applied to v, (I − ηH) v after one GD step.

Derivatives of the primitives (x a value, ẋ its tangent): (x y)˙ = ẋ y + x ẏ, (x / y)˙ = (ẋ − (x/y) ẏ) / y,
(A @ B)˙ = Ȧ B + A Ḃ, exp(x)˙ = exp(x) ẋ, log(x)˙ = ẋ / x, √x˙ = ẋ / (2 √x), erf(x)˙ = (2/√π) e^(−x²) ẋ,
softmax(x)˙ = s ⊙ (ẋ − Σ s ẋ), log_softmax(x)˙ = ẋ − Σ s ẋ; ``positive`` (a ReLU's mask) is a constant (its
derivative is 0 wherever the base decides the sign; where it cannot, the base's own refusal propagates).

>>> import numpy as np
>>> from rwtoolkit.models import FLOAT64
>>> ar = DualArithmetic(FLOAT64, 2)
>>> x = ar.variable(np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
>>> y = x * x + 3 * x
>>> y.value.tolist(), y.tangent.tolist()
([4.0, 10.0], [[5.0, 0.0], [0.0, 7.0]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.models._arith import Arithmetic, Array
from rwtoolkit.models._descent import Batch, evaluate
from rwtoolkit.models._losses import ArithmeticLoss, CrossEntropy, ElementLoss, Objective, PredictionLoss
from rwtoolkit.models._model import Inputs, Model


def _shape(x: Any) -> tuple[int, ...]:
    """The shape of an array of an arithmetic; () for an element (an arb, a python number)."""
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(int(s) for s in shape)


class Dual:
    """An array of a :class:`DualArithmetic`: ``value`` (an array of the base arithmetic) and ``tangent`` (an
    array of the base with the leading axis of the n directions, shape (n,) + value's shape; None: zero).

    numpy defers to it (``__array_ufunc__ = None``), so numpy arrays and base arrays combine with it on either
    side of ``+ - * / @``, broadcast as numpy does (the tangent's leading axis is never broadcast against the
    value's axes).
    """

    __slots__ = ("value", "tangent", "ar")
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, value: Array, tangent: Array | None, ar: DualArithmetic) -> None:
        self.value, self.tangent, self.ar = value, tangent, ar

    # shape ----------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return _shape(self.value)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d dual array")
        return shape[0]

    def __repr__(self) -> str:
        return f"Dual(value={self.value!r}, tangent={self.tangent!r})"

    # helpers ----------------------------------------------------------------------------------------
    def _lifted(self, ndim: int) -> Array | None:
        """The tangent with 1-axes inserted after the directions' axis, so that it has 1 + ``ndim`` axes and
        broadcasts against values of ``ndim`` axes as the value does."""
        t = self.tangent
        if t is None:
            return None
        shape = self.shape
        if len(shape) == ndim:
            return t
        return t.reshape((self.ar.n,) + (1,) * (ndim - len(shape)) + shape)

    def _make(self, value: Array, tangent: Array | None) -> Dual:
        """A result: ``tangent`` (None: zero) broadcast to (n,) + value's shape."""
        if tangent is not None:
            full = (self.ar.n,) + _shape(value)
            if _shape(tangent) != full:
                tangent = tangent + self.ar.base.zeros(full)
        return Dual(value, tangent, self.ar)

    # arithmetic -----------------------------------------------------------------------------------------
    def __neg__(self) -> Dual:
        return Dual(-self.value, None if self.tangent is None else -self.tangent, self.ar)

    def __pos__(self) -> Dual:
        return self

    def __add__(self, other: Any) -> Dual:
        o = self.ar.lift(other)
        value = self.value + o.value
        ndim = len(_shape(value))
        return self._make(value, _plus(self._lifted(ndim), o._lifted(ndim)))

    def __radd__(self, other: Any) -> Dual:
        return self.ar.lift(other) + self

    def __sub__(self, other: Any) -> Dual:
        o = self.ar.lift(other)
        value = self.value - o.value
        ndim = len(_shape(value))
        tb = o._lifted(ndim)
        return self._make(value, _minus(self._lifted(ndim), tb))

    def __rsub__(self, other: Any) -> Dual:
        return self.ar.lift(other) - self

    def __mul__(self, other: Any) -> Dual:
        o = self.ar.lift(other)
        value = self.value * o.value
        ndim = len(_shape(value))
        ta, tb = self._lifted(ndim), o._lifted(ndim)
        return self._make(
            value, _fresh_sum(None if ta is None else ta * o.value, None if tb is None else tb * self.value)
        )

    def __rmul__(self, other: Any) -> Dual:
        return self.ar.lift(other) * self

    def __truediv__(self, other: Any) -> Dual:
        o = self.ar.lift(other)
        value = self.value / o.value
        ndim = len(_shape(value))
        ta, tb = self._lifted(ndim), o._lifted(ndim)
        if ta is None and tb is None:
            return Dual(value, None, self.ar)
        numerator = _minus(ta, None if tb is None else tb * value)
        return self._make(value, numerator / o.value)

    def __rtruediv__(self, other: Any) -> Dual:
        return self.ar.lift(other) / self

    def __matmul__(self, other: Any) -> Dual:
        return self.ar.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Dual:
        return self.ar.matmul(other, self)

    # structure -----------------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Dual:
        """The same entries in ``shape`` (a tuple or the sizes; one −1 allowed, resolved by the value)."""
        target = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)
        value = self.value.reshape(target)
        if self.tangent is None:
            return Dual(value, None, self.ar)
        return Dual(value, self.tangent.reshape((self.ar.n,) + _shape(value)), self.ar)

    def swapaxes(self, i: int, j: int) -> Dual:
        """Axes i and j swapped (a non-negative axis of the tangent is one further on; a negative one is not)."""
        value = self.value.swapaxes(i, j)
        if self.tangent is None:
            return Dual(value, None, self.ar)
        return Dual(value, self.tangent.swapaxes(_shifted(i), _shifted(j)), self.ar)

    def transpose(self, *axes: Any) -> Dual:
        """numpy's transpose: axis k of the result is axis ``axes[k]`` (no axes: reversed), by swaps of two
        axes (every array library spells ``swapaxes`` alike)."""
        ndim = self.ndim
        order = list(axes[0]) if len(axes) == 1 and not isinstance(axes[0], int) else list(axes)
        if not order:
            order = list(range(ndim))[::-1]
        order = [int(a) % ndim for a in order]
        if sorted(order) != list(range(ndim)):
            raise ValueError(f"transpose: axes={list(axes)} is not a permutation of the {ndim} axes")
        out, current = self, list(range(ndim))
        for k, axis in enumerate(order):
            j = current.index(axis)
            if j != k:
                out = out.swapaxes(k, j)
                current[k], current[j] = current[j], current[k]
        return out

    permute = transpose

    @property
    def T(self) -> Dual:
        return self.transpose()

    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Dual:
        """The sum over ``axis`` (None: every axis), through the base's ``sum``."""
        if axis is None:
            axis = tuple(range(self.ndim))
        return self.ar.sum(self, axis, keepdims)

    def __getitem__(self, index: Any) -> Dual:
        value = self.value[index]
        if self.tangent is None:
            return Dual(value, None, self.ar)
        key = index if isinstance(index, tuple) else (index,)
        tangent = self.tangent[(slice(None),) + key]
        if _advanced_first(key):  # their axes come first, the directions' axis after them: move it
            tangent = _to_front(tangent, _advanced_ndim(key))
        return Dual(value, tangent, self.ar)

    def __setitem__(self, index: Any, other: Any) -> None:
        o = self.ar.lift(other)
        key = index if isinstance(index, tuple) else (index,)
        if _advanced_first(key):
            raise ValueError(
                "dual arrays: assignment through advanced indices separated by a slice is not supported"
            )
        self.value[index] = o.value
        if o.tangent is None and self.tangent is None:
            return
        n = self.ar.n
        if self.tangent is None:
            self.tangent = self.ar.base.zeros((n,) + self.shape)
        slot = _shape(self.value[index])
        if o.tangent is None:
            self.tangent[(slice(None),) + key] = self.ar.base.zeros((n,) + slot)
        else:
            self.tangent[(slice(None),) + key] = o._lifted(len(slot))


def _plus(a: Array | None, b: Array | None) -> Array | None:
    """a + b, where None is 0."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _minus(a: Array | None, b: Array | None) -> Array | None:
    """a − b, where None is 0."""
    if b is None:
        return a
    if a is None:
        return -b
    return a - b


def _fresh_sum(a: Array | None, b: Array | None) -> Array | None:
    """a + b of two arrays that nothing else holds (products just made), into ``a`` where their shapes agree:
    ``+=`` (numpy adds in place, saving an allocation of the tangents' size; an array without ``__iadd__``
    makes a new sum)."""
    if a is None or b is None:
        return _plus(a, b)
    if _shape(a) == _shape(b):
        a += b
        return a
    return a + b


def _shifted(axis: int) -> int:
    """An axis of a value as the axis of its tangent: a non-negative one moves one on, a negative one stays."""
    return axis + 1 if axis >= 0 else axis


def _is_advanced(k: Any) -> bool:
    return not (k is None or k is Ellipsis or isinstance(k, slice))


def _advanced_first(key: tuple[Any, ...]) -> bool:
    """Whether numpy puts the advanced indices' axes first: an array among them, and a slice, an Ellipsis or a
    new axis between two of them (integers count as advanced next to an array)."""
    if not any(_is_advanced(k) and not isinstance(k, (int, np.integer)) for k in key):
        return False
    where = [i for i, k in enumerate(key) if _is_advanced(k)]
    return where[-1] - where[0] + 1 != len(where)


def _advanced_ndim(key: tuple[Any, ...]) -> int:
    """The number of axes the advanced indices of ``key`` make (their broadcast shape's)."""
    return len(np.broadcast_shapes(*(np.shape(k) for k in key if _is_advanced(k))))


def _to_front(t: Array, axis: int) -> Array:
    """``t`` with ``axis`` moved to the front, the others in order, by swaps of neighbours."""
    for k in range(axis, 0, -1):
        t = t.swapaxes(k, k - 1)
    return t


class DualArithmetic:
    """Forward-mode duals over the arithmetic ``base``, with ``n`` directions (the module text).

    ``exact`` is the base's; ``erf``, ``pi``, ``masked_softmax``, ``log_softmax`` and ``concat`` are refused in
    one line where the base has none (as ``rwtoolkit.models.Tape`` refuses the primitive that needs them), and
    every refusal of the base (a logarithm the exact arithmetic has not, a ReLU input a ball cannot decide) is
    the base's own.

    >>> import numpy as np
    >>> from rwtoolkit.models import FLOAT64
    >>> ar = DualArithmetic(FLOAT64, 1)
    >>> x = ar.variable(np.array([0.0]), np.array([[1.0]]))
    >>> ar.exp(x).tangent.tolist(), ar.to_float(ar.exp(x)).tolist()
    ([[1.0]], [1.0])
    """

    def __init__(self, base: Arithmetic, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n={n!r} must be an integer >= 1 (the number of tangent directions)")
        self.base, self.n = base, n
        self.name = f"dual({base.name})"
        self.exact = bool(getattr(base, "exact", False))
        probe = base.zeros(())  # a numpy array of this dtype is already an array of the base (float64)
        self._numpy_dtype = probe.dtype if isinstance(probe, np.ndarray) else None

    # making duals -------------------------------------------------------------------------------------
    def variable(self, value: Array, tangent: Array) -> Dual:
        """A dual of ``value`` (an array of the base) with ``tangent`` (an array of the base, shape (n,) + the
        value's)."""
        if _shape(tangent) != (self.n,) + _shape(value):
            raise ValueError(
                f"tangent of shape {_shape(tangent)} for a value of shape {_shape(value)}: "
                f"it must be {(self.n,) + _shape(value)} ({self.n} directions first)"
            )
        return Dual(value, tangent, self)

    def lift(self, x: Any) -> Dual:
        """``x`` as a dual: itself, or a constant (tangent 0) of a base array, a base element or a python
        number kept as it is, a numpy array of numbers taken into the base by ``asarray``."""
        if isinstance(x, Dual):
            return x
        if isinstance(x, np.ndarray) and x.dtype.kind in "biuf" and x.dtype != self._numpy_dtype:
            return Dual(self.base.asarray(x), None, self)
        return Dual(x, None, self)

    # the protocol ---------------------------------------------------------------------------------------
    def asarray(self, values: Any) -> Dual:
        return Dual(self.base.asarray(values), None, self)

    def zeros(self, shape: Sequence[int]) -> Dual:
        return Dual(self.base.zeros(shape), None, self)

    def exp(self, a: Any) -> Dual:
        a = self.lift(a)
        e = self.base.exp(a.value)
        return Dual(e, None if a.tangent is None else a.tangent * e, self)

    def log(self, a: Any) -> Dual:
        a = self.lift(a)
        return Dual(self.base.log(a.value), None if a.tangent is None else a.tangent / a.value, self)

    def sqrt(self, a: Any) -> Dual:
        a = self.lift(a)
        r = self.base.sqrt(a.value)
        return Dual(r, None if a.tangent is None else a.tangent / (2 * r), self)

    def erf(self, a: Any) -> Dual:
        """erf, with erf′(x) = 2 e^(−x²) / √π."""
        a = self.lift(a)
        value = self._base_op("erf")(a.value)
        if a.tangent is None:
            return Dual(value, None, self)
        root_pi = self.base.sqrt(self.base.asarray(1) * self._base_op("pi")())
        slope = 2 * self.base.exp(-(a.value * a.value)) / root_pi
        return Dual(value, a.tangent * slope, self)

    def pi(self) -> Any:
        """π as an element of the base (a constant)."""
        return self._base_op("pi")()

    def softmax(self, a: Any) -> Dual:
        a = self.lift(a)
        s = self.base.softmax(a.value)
        return Dual(s, self._softmax_tangent(s, a.tangent), self)

    def masked_softmax(self, a: Any, mask: np.ndarray) -> Dual:
        """The base's masked softmax; its tangent s ⊙ (ẋ − Σ s ẋ) is 0 at the left-out entries (s is)."""
        a = self.lift(a)
        s = self._base_op("masked_softmax")(a.value, mask)
        return Dual(s, self._softmax_tangent(s, a.tangent), self)

    def log_softmax(self, a: Any) -> Dual:
        a = self.lift(a)
        out = self._base_op("log_softmax")(a.value)
        if a.tangent is None:
            return Dual(out, None, self)
        s = self.base.softmax(a.value)
        return Dual(out, a.tangent - self.base.sum(a.tangent * s, -1, keepdims=True), self)

    def _softmax_tangent(self, s: Array, t: Array | None) -> Array | None:
        if t is None:
            return None
        return s * (t - self.base.sum(t * s, -1, keepdims=True))

    def sum(self, a: Any, axis: int | tuple[int, ...], keepdims: bool = False) -> Dual:
        a = self.lift(a)
        value = self.base.sum(a.value, axis, keepdims)
        if a.tangent is None:
            return Dual(value, None, self)
        axes = tuple(_shifted(x) for x in axis) if isinstance(axis, tuple) else _shifted(axis)
        return Dual(value, self.base.sum(a.tangent, axes, keepdims), self)

    def concat(self, arrays: Sequence[Any], axis: int) -> Dual:
        join = self._base_op("concat")
        parts = [self.lift(x) for x in arrays]
        value = join([p.value for p in parts], axis)
        if all(p.tangent is None for p in parts):
            return Dual(value, None, self)
        tangents = [self.base.zeros((self.n,) + p.shape) if p.tangent is None else p.tangent for p in parts]
        return Dual(value, join(tangents, _shifted(axis)), self)

    def matmul(self, a: Any, b: Any) -> Dual:
        """``a @ b`` with numpy's rules; a 1-D operand is promoted to a matrix (a row for ``a``, a column for
        ``b``) for the tangent's product too, so that the directions' axis is never taken for a matrix axis."""
        A, B = self.lift(a), self.lift(b)
        sa, sb = A.shape, B.shape
        if not sa or not sb:
            raise ValueError("matmul: a 0-d operand (use *)")
        A2 = A if len(sa) > 1 else A.reshape((1,) + sa)
        B2 = B if len(sb) > 1 else B.reshape(sb + (1,))
        value2 = A2.value @ B2.value
        shape2 = _shape(value2)
        out = shape2[:-2] + (shape2[-2:-1] if len(sa) > 1 else ()) + (shape2[-1:] if len(sb) > 1 else ())
        ndim = len(shape2)
        ta, tb = A2._lifted(ndim), B2._lifted(ndim)
        tangent = _fresh_sum(None if ta is None else ta @ B2.value, None if tb is None else A2.value @ tb)
        value = value2.reshape(out)
        if tangent is None:
            return Dual(value, None, self)
        return Dual(value, tangent.reshape((self.n,) + out), self)

    def apply(self, fn: Callable[[Any], Any], a: Any) -> Dual:
        """``fn`` on a constant's value; a value with a tangent is refused (an arbitrary function has no
        derivative here)."""
        a = self.lift(a)
        if a.tangent is not None:
            raise ValueError(f"the {self.name} arithmetic cannot differentiate an arbitrary function (apply)")
        return Dual(self.base.apply(fn, a.value), None, self)

    def sign(self, x: Any) -> int | None:
        return self.base.sign(x.value if isinstance(x, Dual) else x)

    def positive(self, a: Any) -> Dual:
        """The base's mask of the entries > 0, a constant (a ReLU's derivative is 0 off its kink)."""
        return Dual(self.base.positive(self.lift(a).value), None, self)

    def to_float(self, a: Any) -> np.ndarray:
        return self.base.to_float(self.lift(a).value)

    def predict(self, f: Any) -> np.ndarray | None:
        return self.base.predict(self.lift(f).value)

    def _base_op(self, method: str) -> Callable[..., Any]:
        fn = getattr(self.base, method, None)
        if fn is None:
            raise ValueError(
                f"the {self.base.name} arithmetic has no {method} (ExtendedArithmetic.{method}): "
                f"the {self.name} arithmetic cannot run it"
            )
        return fn


# parameters as one vector ---------------------------------------------------------------------------------


def flatten(params: Mapping[str, Array], arithmetic: Arithmetic | None = None) -> Array:
    """The parameters as one vector: each ravelled (C order), joined in ``params``' order (the flat order of
    :func:`hessian` and :func:`hessian_vector_products`). ``arithmetic``'s ``concat`` joins them (None: numpy's,
    for numpy arrays of any dtype).

    >>> import numpy as np
    >>> flatten({"a": np.array([[1, 2], [3, 4]]), "b": np.array([5])}).tolist()
    [1, 2, 3, 4, 5]
    """
    parts = [p.reshape((-1,)) for p in params.values()]
    if arithmetic is None:
        return np.concatenate(parts)
    join = getattr(arithmetic, "concat", None)
    if join is None:
        raise ValueError(
            f"flatten: the {arithmetic.name} arithmetic has no concat (ExtendedArithmetic.concat)"
        )
    return join(parts, 0)


def unflatten(vector: Array, like: Mapping[str, Any]) -> dict[str, Array]:
    """The inverse of :func:`flatten`: ``vector`` cut into arrays of the shapes of ``like`` (arrays, or shapes),
    in ``like``'s order; one line unless the sizes add up to the vector's length.

    >>> import numpy as np
    >>> unflatten(np.arange(5), {"a": (2, 2), "b": (1,)})["a"].tolist()
    [[0, 1], [2, 3]]
    """
    shapes = {name: _shape(x) if hasattr(x, "shape") else tuple(x) for name, x in like.items()}
    total = sum(math.prod(s) for s in shapes.values())
    if _shape(vector) != (total,):
        raise ValueError(
            f"unflatten: a vector of shape {_shape(vector)} for parameters of {total} entries in all "
            f"({', '.join(f'{k} {s}' for k, s in shapes.items())})"
        )
    out, start = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        out[name] = vector[start : start + size].reshape(shape)
        start += size
    return out


# Hessian-vector products ------------------------------------------------------------------------------


def _numbers(base: Arithmetic, x: Any) -> Array:
    """Direction entries in ``base``: a numpy array of numbers (ints, floats, Fractions in an object array)
    or nested lists through ``asarray``; an array of ``base`` itself as it is (an object array whose entries are
    not python numbers, or a non-numpy array)."""
    if isinstance(x, (list, tuple)):
        return base.asarray(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "biuf":
            probe = base.zeros(())
            return x if isinstance(probe, np.ndarray) and probe.dtype == x.dtype else base.asarray(x)
        if x.dtype == object and all(isinstance(v, (int, Fraction)) for v in x.flat):
            return base.asarray(x)
    return x


def _dual_batch(ar: DualArithmetic, data: Batch) -> Batch:
    """The population ``data`` (in the base arithmetic) with its arrays as constants of ``ar``."""
    inputs = data.inputs
    lifted = Inputs(X=ar.lift(inputs.X), Xt=ar.lift(inputs.Xt), xN=ar.lift(inputs.xN), tokens=inputs.tokens)
    return Batch(inputs=lifted, labels=data.labels, weights=ar.lift(data.weights))


def _dual_loss(ar: DualArithmetic, loss: ElementLoss | Objective) -> ElementLoss | Objective:
    """``loss`` reading ``ar``: a built-in loss bound to another arithmetic (alone or in a ``PredictionLoss``)
    rebound, a cross-entropy's own logarithm (the exact engine's) applied to the values with the tangent ẋ / x;
    any other as it is."""
    if isinstance(loss, ArithmeticLoss):
        return ArithmeticLoss(loss.name, loss.eps, ar)
    if isinstance(loss, PredictionLoss) and isinstance(loss.loss, ArithmeticLoss):
        return PredictionLoss(ArithmeticLoss(loss.loss.name, loss.loss.eps, ar))
    own = getattr(loss, "_log", None)
    if isinstance(loss, CrossEntropy) and own is not None:

        def log(x: Dual) -> Dual:
            return Dual(own(x.value), None if x.tangent is None else x.tangent / x.value, ar)

        return CrossEntropy(loss.name, log=log)
    return loss


def _tangent_rows(ar: DualArithmetic, params: Mapping[str, Array], directions: Any) -> dict[str, Array]:
    """Each parameter's tangent (k,) + its shape from ``directions`` (the forms of
    :func:`hessian_vector_products`); one line for a direction of the wrong size or shape."""
    base, k = ar.base, ar.n
    shapes = {name: _shape(v) for name, v in params.items()}
    if isinstance(directions, (list, tuple)):
        out = {}
        for name, shape in shapes.items():
            rows = []
            for i, d in enumerate(directions):
                if name not in d:
                    raise ValueError(f"directions[{i}] has no entry {name!r} (a parameter)")
                v = _numbers(base, d[name])
                if _shape(v) != shape:
                    raise ValueError(
                        f"directions[{i}][{name!r}] has shape {_shape(v)}, the parameter {shape}"
                    )
                rows.append(v.reshape((1,) + shape))
            out[name] = ar._base_op("concat")(rows, 0) if len(rows) > 1 else rows[0]
        return out
    D = _numbers(base, directions)
    total = sum(math.prod(s) for s in shapes.values())
    if _shape(D) != (k, total):
        raise ValueError(
            f"directions of shape {_shape(D)}: one row per direction over the {total} parameter entries "
            f"(flatten's order), i.e. shape ({k}, {total})"
        )
    out, start = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        out[name] = D[:, start : start + size].reshape((k,) + shape)
        start += size
    return out


def hessian_vector_products(
    model: Model,
    arithmetic: Arithmetic,
    params: Mapping[str, Array],
    batch: Batch,
    loss: ElementLoss | Objective,
    directions: Any,
) -> Any:
    """H v for each direction v, H the Hessian of the population objective ``loss`` at ``params`` (arrays of
    ``arithmetic`` by name), ``batch`` the population in ``arithmetic`` (``rwtoolkit.models.batch``).

    One ``rwtoolkit.models.evaluate(..., gradient=True)`` in ``DualArithmetic(arithmetic, k)`` with the
    parameters' tangents set to the k directions: the gradient's tangents are H v₁..H v_k (forward over
    reverse, the module text). ``directions`` is either

    - a list of k dicts name -> array of the parameters' shapes: the result is a list of k dicts name -> H v;
    - one array (k, P) over the flat parameter vector (:func:`flatten`'s order: ``params``' order, each
      ravelled in C order): the result is the array (k, P) whose row i is (H vᵢ)ᵀ.

    Directions may be numpy arrays of numbers (floats, ints, or exact ``Fraction``s in an object array: taken
    into ``arithmetic`` by its ``asarray``) or arrays of ``arithmetic``. Time and memory: about k times one
    evaluation with its gradient (every value the tape keeps carries k tangents).

    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from rwtoolkit.models import FLOAT64, CrossEntropy, get_model, batch, rational_positions
    >>> from rwtoolkit.tasks import binary_markov_task
    >>> pop = binary_markov_task("1/3", "3/5", 3).population()
    >>> P = FLOAT64.asarray(rational_positions(pop.N, Fraction(1)))
    >>> data = batch(FLOAT64, pop.tokens, pop.labels, pop.float_probs(), pop.K, P)
    >>> model = get_model("examples/nanogpt_attention.py:one_layer")
    >>> params = dict(model.own_start(FLOAT64, data.inputs.sizes, "own"))
    >>> Hv = hessian_vector_products(model, FLOAT64, params, data, CrossEntropy("lm"), np.eye(2, 88))
    >>> Hv.shape, bool(abs(Hv[0, 1] - Hv[1, 0]) < 1e-15)  # the first two columns of H; H is symmetric
    ((2, 88), True)
    """
    k = len(directions) if isinstance(directions, (list, tuple)) else int(_shape(directions)[0])
    ar = DualArithmetic(arithmetic, k)
    tangents = _tangent_rows(ar, params, directions)
    duals = {name: ar.variable(value, tangents[name]) for name, value in params.items()}
    state = evaluate(model, ar, duals, _dual_batch(ar, batch), _dual_loss(ar, loss), gradient=True)
    assert state.gradient is not None
    products = {}
    for name, g in state.gradient.items():
        d = ar.lift(g)
        products[name] = arithmetic.zeros((k,) + _shape(params[name])) if d.tangent is None else d.tangent
    if isinstance(directions, (list, tuple)):
        return [{name: products[name][i] for name in params} for i in range(k)]
    return ar._base_op("concat")([products[name].reshape((k, -1)) for name in params], 1)


def hessian(
    model: Model,
    arithmetic: Arithmetic,
    params: Mapping[str, Array],
    batch: Batch,
    loss: ElementLoss | Objective,
    chunk: int | None = None,
) -> Array:
    """The Hessian H (P, P) of the population objective ``loss`` at ``params``, an array of ``arithmetic`` in
    :func:`flatten`'s order (``params``' order, each parameter ravelled): column j is H e_j, computed by
    :func:`hessian_vector_products` on the unit vectors, ``chunk`` of them per evaluation (None: all P at once).

    Memory: one evaluation holds ``chunk`` tangents of every value the tape keeps, about ``chunk`` + 1 times the
    memory of one evaluation with its gradient (plus the P × P result); a smaller ``chunk`` trades it for more
    evaluations (P / chunk of them, each about ``chunk`` + 1 times one evaluation's time). Measured on
    examples/nanogpt_attention.py's two_layer on ``icl_markov_task(2, 7, 1)`` (P = 168, 128 sequences), one
    thread, on a shared machine: all 168 at once 0.43-0.49 s of CPU and 350 MB of peak memory in float64, 1.8-1.9 s
    and 750 MB in float balls; ``chunk=42`` 0.61-0.67 s and 86 MB, 1.9-2.4 s and 190 MB. Over balls each entry is an enclosure of the exact Hessian at
    the parameters (at every point of them, for balls of positive radius).
    """
    total = sum(math.prod(_shape(v)) for v in params.values())
    if chunk is None:
        chunk = max(total, 1)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk={chunk!r} must be an integer >= 1 (unit vectors per evaluation)")
    if total == 0:
        return arithmetic.zeros((0, 0))
    eye = np.eye(total, dtype=np.int64)
    blocks = [
        hessian_vector_products(
            model, arithmetic, params, batch, loss, arithmetic.asarray(eye[lo : min(lo + chunk, total)])
        )
        for lo in range(0, total, chunk)
    ]
    rows = blocks[0] if len(blocks) == 1 else DualArithmetic(arithmetic, 1)._base_op("concat")(blocks, 0)
    return rows.swapaxes(0, 1)  # row j of ``rows`` is H e_j, the column j of H


__all__ = ["Dual", "DualArithmetic", "flatten", "hessian", "hessian_vector_products", "unflatten"]
