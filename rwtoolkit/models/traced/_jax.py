"""Tracing a plain JAX function onto the tape through its jaxpr (issue 41, item 2; docs/guide/bring-your-model.md).

:func:`trace_jax` traces ``apply(params, tokens)`` with :func:`jax.make_jaxpr` at token ids of shape (n, L) with
a *symbolic* batch size n (``jax.export.symbolic_shape``), so no shape of the program bakes in an example n, and
maps the jaxpr's equations one by one to the neutral ops of :data:`~rwtoolkit.models.traced.OP_TABLE`:

* calls (``jit``/``pjit``, ``closed_call``, ``custom_jvp_call``, ``custom_vjp_call``, ``remat``) are inlined (the
  primal function: the tape differentiates the forward pass itself);
* ``dot_general`` (``@``, ``jnp.einsum``, ``jnp.matmul``) becomes permutes, reshapes and one ``matmul``;
* elementwise ``add sub mul div neg exp log sqrt rsqrt integer_pow``, ``max(x, 0)`` (ReLU), ``reduce_sum``,
  ``broadcast_in_dim`` (carried as a size-1 axis until an op needs the full shape), ``reshape``, ``squeeze``,
  ``transpose``, ``concatenate``, ``slice``, ``dynamic_slice`` at constant starts, ``convert_element_type``;
* ``jax.nn.softmax`` / ``log_softmax`` are recognised by their pattern, x − stop_gradient(max x) → exp → / sum
  (→ log), and become ``softmax`` / ``log_softmax``; ``reduce_max`` anywhere else is refused;
* ``jax.nn.gelu(approximate=False)`` (½x·erfc(−x/√2)) becomes ``gelu``;
* ``select_n`` at a constant condition (``jnp.where(mask, s, -jnp.inf)``) becomes ``masked_fill`` (−∞: left out of
  the next softmax) or ``where``;
* ``gather`` of a table's rows at the token ids (``E[tokens]``, ``jnp.take(E, tokens, axis=0)``) becomes
  ``embedding``, at constant ids (``P[jnp.arange(L)]``) ``embedding`` with the ids a constant;
  ``jax.nn.one_hot(tokens, S)`` (``eq`` against an ``iota``, then ``convert_element_type``) becomes ``one_hot``;
* everything that depends on no parameter and no token (``iota``, ``jnp.tril``, comparisons, ``sqrt`` of a
  constant) is evaluated once, by JAX itself, and enters as a constant (a float as the exact rational it holds).

The integer arithmetic JAX writes around token ids (the wrap of negative indices, casts) is evaluated on the id
values 0 .. S−1. Anything else is refused in one line naming the primitive and the user's line
(``unknown_op``), before any work on the tape. The tracer computes in float64 (``jax_enable_x64`` while it
traces); the user's parameters enter as float64 (``initial``).
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rwtoolkit.models.traced._program import Node, TracedProgram, unknown_op

#: Primitives that only call a jaxpr (inlined: the primal function, never its custom derivative rule).
_CALLS = frozenset(
    {
        "pjit",
        "jit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "remat",
        "checkpoint",
    }
)

#: Elementwise primitives (evaluated on the id values 0 .. S−1 when they act on token ids).
_ELEMENTWISE = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "rem",
        "max",
        "min",
        "neg",
        "abs",
        "sign",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "and",
        "or",
        "not",
        "xor",
        "select_n",
        "clamp",
        "convert_element_type",
        "integer_pow",
        "copy",
        "copy_p",
    }
)

#: Constant primitives that stay right when the batch axis is evaluated at size 1 (the others are refused
#: where a constant has a batch axis).
_BATCH_SAFE = _ELEMENTWISE | {
    "broadcast_in_dim",
    "transpose",
    "squeeze",
    "stop_gradient",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "erfc",
    "erf",
    "pow",
    "square",
}

#: Neutral ops whose result's axes are their operands' (broadcast from the end): the axis roles pass through.
_SAME_AXES = frozenset(
    {"add", "sub", "mul", "div", "scale", "neg", "exp", "log", "sqrt", "rsqrt", "pow", "relu", "gelu"}
    | {"softmax", "log_softmax", "expand", "masked_fill", "where"}
)

#: A hint appended to the refusal of a primitive the user may have reached for by a common spelling.
_HINTS = {
    "tanh": " (jax.nn.gelu's default is the tanh form: jax.nn.gelu(x, approximate=False) is the erf form)",
    "stop_gradient": " (the tape differentiates the forward pass as written: stop_gradient is kept only as "
    "jax.nn.softmax's stabiliser)",
}


# values of the trace ----------------------------------------------------------------------------------------


class _Value:
    """A jaxpr value during the trace; ``shape`` is its (symbolic) jaxpr shape."""

    shape: tuple[Any, ...]


class _K(_Value):
    """A constant: ``array`` holds the value with every batch axis at size 1."""

    def __init__(self, array: np.ndarray, shape: tuple[Any, ...]) -> None:
        self.array, self.shape = array, shape


class _P(_Value):
    """A value of the program: ``ref`` (an item of the builder) and ``actual``, its array's shape, which has
    size 1 on the axes ``broadcast_in_dim`` added or widened and no op has needed in full yet."""

    def __init__(self, ref: int, shape: tuple[Any, ...], actual: tuple[Any, ...]) -> None:
        self.ref, self.shape, self.actual = ref, shape, actual


class _Ids(_Value):
    """The token ids mapped elementwise by ``table`` (the value at each id 0 .. S−1); ``shape`` is (n, L) with
    axes of size 1 inserted."""

    def __init__(self, table: np.ndarray, shape: tuple[Any, ...]) -> None:
        self.table, self.shape = table, shape


class _OneHot(_Value):
    """ids == iota(classes) along the last axis (``jax.nn.one_hot`` before its cast)."""

    def __init__(self, classes: int, shape: tuple[Any, ...]) -> None:
        self.classes, self.shape = classes, shape


class _Mark(_Value):
    """A step of the softmax pattern on ``src`` along ``axis`` (``kind``: max, shifted, exp, den, logden), or of
    GELU's erf form (``twophi``: erfc(−x/√2)); ``source``: where it began (its refusal names it)."""

    def __init__(
        self, kind: str, src: _P, axis: int, shape: tuple[Any, ...], source: str, what: str = "reduce_max"
    ) -> None:
        self.kind, self.src, self.axis, self.shape, self.source, self.what = (
            kind,
            src,
            axis,
            shape,
            source,
            what,
        )


class _Refusal(ValueError):
    """A refusal raised while tracing (one line)."""


def _int(d: Any) -> int | None:
    """A dimension as an int, None where it is symbolic."""
    try:
        return operator.index(d)
    except TypeError:
        return None


def _is_one(d: Any) -> bool:
    return _int(d) == 1


def _same(a: Any, b: Any) -> bool:
    ia, ib = _int(a), _int(b)
    if ia is not None or ib is not None:
        return ia == ib
    return bool(a == b)


def _same_shape(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _source(eqn: Any) -> str:
    """The user's ``path:LINE`` of a jaxpr equation (the first frame outside JAX)."""
    from jax._src import source_info_util

    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None:
        return "<unknown>"
    path = frame.file_name
    try:
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            path = relative
    except ValueError:
        pass
    return f"{path}:{frame.start_line}"


# the builder ------------------------------------------------------------------------------------------------


class _Builder:
    """Walks a jaxpr and builds the program's items: parameters, the token ids, constants and nodes."""

    def __init__(self, names: Sequence[str], S: int, L: int, batch: Any) -> None:
        self.S, self.L, self.batch = S, L, batch
        # an item: ("param", name) | ("tokens",) | ("const", array) | ("node", op, inputs, attrs, source)
        self.items: list[tuple[Any, ...]] = [("param", name) for name in names]
        self.tokens_ref = len(self.items)
        self.items.append(("tokens",))
        self._consts: dict[tuple[Any, ...], int] = {}
        self.prov: dict[int, tuple[Any, ...]] = {}  # how a node came to be (GELU's pattern reads it)
        self.actuals: dict[int, tuple[Any, ...]] = {}  # each node's actual shape
        self.source = "<unknown>"
        self.primitive = "?"

    # items ---------------------------------------------------------------------------------------------
    def node(self, op: str, inputs: Sequence[int], attrs: Mapping[str, Any], shape: Any, actual: Any) -> _P:
        self.items.append(("node", op, tuple(inputs), dict(attrs), self.source))
        self.actuals[len(self.items) - 1] = tuple(actual)
        return _P(len(self.items) - 1, tuple(shape), tuple(actual))

    def const(self, array: np.ndarray) -> int:
        a = np.asarray(array)
        if a.dtype.kind == "f":
            a = a.astype(np.float64)
        elif a.dtype.kind in "iu":
            a = a.astype(np.int64)
        elif a.dtype != np.bool_:
            raise self.refuse(f"a constant of dtype {a.dtype}")
        key = (a.dtype.str, a.shape, a.tobytes())
        if key not in self._consts:
            self.items.append(("const", a))
            self._consts[key] = len(self.items) - 1
        return self._consts[key]

    def refuse(self, why: str) -> _Refusal:
        return _Refusal(f"jax op '{self.primitive}' at {self.source}: {why}")

    def unknown(self) -> ValueError:
        error = unknown_op("jax", self.primitive, self.source)
        return _Refusal(str(error) + _HINTS.get(self.primitive, ""))

    # operands ----------------------------------------------------------------------------------------
    def operand(self, v: _Value) -> _P:
        """``v`` as a value of the program (a constant registered), or one line why it cannot be one."""
        if isinstance(v, _P):
            return v
        if isinstance(v, _K):
            return _P(self.const(v.array), v.shape, tuple(v.array.shape))
        if isinstance(v, _Ids):
            if (v.table == v.table[0]).all():
                return self.operand(self.ids_constant(v))
            raise self.refuse("the token ids are used as numbers (only as ids: x[ids], jax.nn.one_hot)")
        if isinstance(v, _OneHot):
            raise self.refuse("a boolean one-hot is used before its cast (jax.nn.one_hot casts it)")
        if not isinstance(v, _Mark):
            raise TypeError(f"trace_jax: an operand of unknown kind {type(v).__name__}")
        raise self.mark_refusal(v)

    def mark_refusal(self, m: _Mark) -> _Refusal:
        if m.what == "erfc":
            return _Refusal(
                f"jax op 'erfc' at {m.source} is not in the op table (only as GELU's erf form, "
                "jax.nn.gelu(x, approximate=False))"
            )
        return _Refusal(
            f"jax op 'reduce_max' at {m.source} is not in the op table (only as the softmax stabiliser: "
            "x - stop_gradient(max x) -> exp -> / sum, as jax.nn.softmax and jax.nn.log_softmax write it)"
        )

    def ids_constant(self, v: _Ids) -> _K:
        actual = tuple(1 if _int(d) is None else int(d) for d in v.shape)
        return _K(np.full(actual, v.table[0]), v.shape)

    def batch_free(self, shape: Sequence[Any]) -> tuple[int, ...]:
        """A shape as a node's attribute: ints, −1 for the one batch-dependent size."""
        out = [_int(d) for d in shape]
        if sum(d is None for d in out) > 1:
            raise self.refuse(f"the shape {tuple(shape)} has more than one size depending on the batch size")
        return tuple(-1 if d is None else d for d in out)

    def full(self, v: _P, axes: Sequence[int] | None = None) -> _P:
        """``v`` with its array at its full shape on ``axes`` (all: None), an ``expand`` where needed."""
        chosen = range(len(v.shape)) if axes is None else axes
        lazy = [a for a in chosen if not _same(v.actual[a], v.shape[a])]
        if not lazy:
            return v
        target = []
        for a, size in enumerate(v.shape):
            if a in lazy:
                if _int(size) is None:
                    raise self.refuse("a value broadcast along the batch axis is needed in full")
                target.append(int(size))
            else:
                target.append(-1)
        actual = tuple(v.shape[a] if a in lazy else v.actual[a] for a in range(len(v.shape)))
        return self.node("expand", [v.ref], {"shape": tuple(target)}, v.shape, actual)

    def reshape(self, v: _P, actual: Sequence[Any], shape: Sequence[Any] | None = None) -> _P:
        """``v``'s array reshaped to ``actual`` (no node where it has that shape)."""
        if _same_shape(v.actual, actual):
            return _P(v.ref, tuple(v.shape if shape is None else shape), tuple(v.actual))
        return self.node(
            "reshape",
            [v.ref],
            {"shape": self.batch_free(actual)},
            v.shape if shape is None else shape,
            actual,
        )

    def permute(self, v: _P, perm: Sequence[int]) -> _P:
        perm = tuple(int(p) for p in perm)
        shape = tuple(v.shape[p] for p in perm)
        actual = tuple(v.actual[p] for p in perm)
        if perm == tuple(range(len(perm))):
            return v
        return self.node("permute", [v.ref], {"perm": perm}, shape, actual)


def _broadcast(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, ...]:
    """numpy's broadcast of two actual shapes (a rank-0 one broadcasts to the other)."""
    if len(a) == 0:
        return tuple(b)
    if len(b) == 0:
        return tuple(a)
    return tuple(y if _is_one(x) else x for x, y in zip(a, b, strict=True))


# the walk ---------------------------------------------------------------------------------------------------


class _Tracer:
    """The equations of a jaxpr mapped to the builder's items (one method per primitive family)."""

    def __init__(self, builder: _Builder) -> None:
        self.b = builder
        self.outer = "<unknown>"

    def walk(self, jaxpr: Any, consts: Sequence[Any], args: Sequence[_Value]) -> list[_Value]:
        from jax.extend.core import Literal

        env: dict[Any, _Value] = {}

        def read(var: Any) -> _Value:
            if isinstance(var, Literal):
                return _K(np.asarray(var.val), ())
            return env[var]

        for var, c in zip(jaxpr.constvars, consts, strict=True):
            env[var] = _K(np.asarray(c), tuple(var.aval.shape))
        for var, a in zip(jaxpr.invars, args, strict=True):
            env[var] = a
        for eqn in jaxpr.eqns:
            outs = self.equation(eqn, [read(v) for v in eqn.invars])
            for var, out in zip(eqn.outvars, outs, strict=True):
                env[var] = out
        return [read(v) for v in jaxpr.outvars]

    def equation(self, eqn: Any, ins: list[_Value]) -> list[_Value]:
        name = eqn.primitive.name
        source = _source(eqn)
        self.b.primitive, self.b.source = name, self.outer if source == "<unknown>" else source
        inner = _inner(eqn)
        if inner is not None:
            jaxpr, consts = inner
            outer, self.outer = self.outer, self.b.source  # an inner line JAX's own: the call's line
            try:
                return self.walk(jaxpr, consts, ins)
            finally:
                self.outer = outer
        out_shapes = [tuple(v.aval.shape) for v in eqn.outvars]
        if all(isinstance(x, _K) for x in ins):
            return self.fold(eqn, ins, out_shapes)
        if name in _ELEMENTWISE and all(
            isinstance(x, _Ids) or (isinstance(x, _K) and _uniform(x)) for x in ins
        ):
            return [self.ids_elementwise(eqn, ins, out_shapes[0])]
        if name == "split":
            return self.split(eqn, ins, out_shapes)
        handler: Callable[[Any, list[_Value], tuple[Any, ...]], _Value] | None = getattr(
            self, "p_" + name, None
        )
        if handler is None or eqn.primitive.multiple_results:
            raise self.b.unknown()
        return [handler(eqn, ins, out_shapes[0])]

    # constants and ids -------------------------------------------------------------------------------
    def fold(self, eqn: Any, ins: list[_Value], out_shapes: list[tuple[Any, ...]]) -> list[_Value]:
        """An equation on constants alone, evaluated by JAX (the batch axis at size 1)."""
        name = eqn.primitive.name
        shapes = [x.shape for x in ins] + out_shapes
        batched = any(_int(d) is None for s in shapes for d in s)
        if batched and name not in _BATCH_SAFE:
            raise self.b.refuse("a constant computed along the batch axis (it depends on no parameter)")
        for s in out_shapes:
            for d in s:
                if _int(d) is None and not _same(d, self.b.batch):
                    raise self.b.refuse(f"a constant of shape {s} (a size {d} depending on the batch size)")
        params = _at_batch_one(eqn.params, self.b.batch)
        arrays = [_array(x) for x in ins]
        result = eqn.primitive.bind(*arrays, **params)
        results = result if eqn.primitive.multiple_results else [result]
        return [_K(np.asarray(r), s) for r, s in zip(results, out_shapes, strict=True)]

    def ids_elementwise(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        """An elementwise op on token ids and constant scalars: evaluated on the ids 0 .. S−1."""
        for x in ins:
            if isinstance(x, _Ids) and not _same_shape(x.shape, shape):
                raise self.b.refuse(f"token ids of shape {x.shape} broadcast to {shape}")
        args = [x.table if isinstance(x, _Ids) else _array(x).reshape(-1)[0] for x in ins]
        table = np.asarray(eqn.primitive.bind(*args, **eqn.params))
        return _Ids(table, shape)

    def ids_shape(self, v: _Ids, shape: tuple[Any, ...]) -> _Ids:
        """Token ids given ``shape``, an op that only inserts or removes axes of size 1."""
        if not _same_shape([d for d in v.shape if not _is_one(d)], [d for d in shape if not _is_one(d)]):
            raise self.b.refuse(f"token ids of shape {v.shape} rearranged to {shape} (only x[ids] is read)")
        return _Ids(v.table, shape)

    def tokens(self, v: _Ids) -> None:
        """One line unless ``v`` is the token ids themselves (each id mapped to itself)."""
        if v.table.shape != (self.b.S,) or not (v.table == np.arange(self.b.S)).all():
            raise self.b.refuse("ids computed from the tokens (only the token ids themselves index a table)")

    # arithmetic ----------------------------------------------------------------------------------------
    def binary(self, op: str, a: _Value, b: _Value, shape: tuple[Any, ...]) -> _P:
        pa, pb = self.b.operand(a), self.b.operand(b)
        return self.b.node(op, [pa.ref, pb.ref], {}, shape, _broadcast(pa.actual, pb.actual))

    def p_add(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return self.binary("add", ins[0], ins[1], shape)

    def p_sub(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        a, b = ins
        if isinstance(b, _Mark) and b.kind == "max" and isinstance(a, _P) and a.ref == b.src.ref:
            return _Mark("shifted", b.src, b.axis, shape, b.source)
        if isinstance(a, _Mark) and isinstance(b, _Mark) and (a.kind, b.kind) == ("shifted", "logden"):
            if a.src.ref == b.src.ref:
                return self.softmax("log_softmax", a)
        return self.binary("sub", a, b, shape)

    def p_mul(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        for x, y in (ins, ins[::-1]):
            if isinstance(y, _Mark) and y.kind == "twophi" and isinstance(x, _P):
                half = self.b.prov.get(x.ref)
                if half is not None and half[0] == "scaled" and half[1] == y.src.ref and half[2] == 0.5:
                    src = y.src
                    return self.b.node("gelu", [src.ref], {}, shape, src.actual)
        out = self.binary("mul", ins[0], ins[1], shape)
        for x, y in (ins, ins[::-1]):
            if isinstance(x, _P) and isinstance(y, _K) and y.array.size == 1:
                self.b.prov[out.ref] = ("scaled", x.ref, float(y.array.reshape(())))
        return out

    def p_div(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        a, b = ins
        if isinstance(a, _Mark) and isinstance(b, _Mark) and (a.kind, b.kind) == ("exp", "den"):
            if a.src.ref == b.src.ref:
                return self.softmax("softmax", a)
        return self.binary("div", a, b, shape)

    def unary(self, op: str, x: _Value, shape: tuple[Any, ...], **attrs: Any) -> _P:
        p = self.b.operand(x)
        return self.b.node(op, [p.ref], attrs, shape, p.actual)

    def p_neg(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        out = self.unary("neg", ins[0], shape)
        self.b.prov[out.ref] = ("neg", self.b.operand(ins[0]).ref)
        return out

    def p_exp(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        if isinstance(x, _Mark) and x.kind == "shifted":
            return _Mark("exp", x.src, x.axis, shape, x.source)
        return self.unary("exp", x, shape)

    def p_log(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        if isinstance(x, _Mark) and x.kind == "den":
            return _Mark("logden", x.src, x.axis, shape, x.source)
        return self.unary("log", x, shape)

    def p_sqrt(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return self.unary("sqrt", ins[0], shape)

    def p_rsqrt(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return self.unary("rsqrt", ins[0], shape)

    def p_integer_pow(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return self.unary("pow", ins[0], shape, exponent=int(eqn.params["y"]))

    def p_square(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return self.unary("pow", ins[0], shape, exponent=2)

    def p_pow(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x, e = ins
        if not (isinstance(e, _K) and _uniform(e)):
            raise self.b.refuse("x ** y with an exponent that is not a constant")
        value = float(np.asarray(e.array).reshape(-1)[0])
        exponent: float | int = int(value) if value == int(value) else value
        return self.unary("pow", x, shape, exponent=exponent)

    def p_max(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        for x, y in (ins, ins[::-1]):
            if isinstance(x, _Mark) and x.kind == "max" and isinstance(y, _K) and _uniform(y):
                if float(np.asarray(y.array).reshape(-1)[0]) == -math.inf:
                    return x
            if isinstance(x, _P) and isinstance(y, _K) and _uniform(y):
                if float(np.asarray(y.array).reshape(-1)[0]) == 0:
                    return self.b.node("relu", [x.ref], {}, shape, x.actual)
        raise self.b.refuse("is not in the op table (only max(x, 0), ReLU, and the softmax stabiliser)")

    def p_erfc(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        if isinstance(x, _P):
            scaled = self.b.prov.get(x.ref)
            if scaled is not None and scaled[0] == "scaled" and scaled[2] == 0.7071067811865476:
                negated = self.b.prov.get(scaled[1])
                if negated is not None and negated[0] == "neg":
                    ref = negated[1]
                    src = _P(ref, shape, self.b.actuals.get(ref, shape))
                    return _Mark("twophi", src, -1, shape, self.b.source, "erfc")
        raise self.b.unknown()

    def p_copy(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        return ins[0]

    p_copy_p = p_copy

    def p_stop_gradient(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        if isinstance(ins[0], _Mark) and ins[0].kind == "max":
            return ins[0]
        raise self.b.unknown()

    def p_convert_element_type(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        kind = np.dtype(eqn.params["new_dtype"]).kind
        if isinstance(x, _OneHot) and kind == "f":
            hot = self.b.node(
                "one_hot",
                [self.b.tokens_ref],
                {"num_classes": x.classes},
                (self.b.batch, self.b.L, x.classes),
                (self.b.batch, self.b.L, x.classes),
            )
            return self.b.reshape(hot, shape, shape)
        if isinstance(x, (_P, _Mark)) and kind == "f":
            return x
        raise self.b.refuse(
            f"a value computed from the parameters cast to {np.dtype(eqn.params['new_dtype'])}"
        )

    # comparisons and selection ---------------------------------------------------------------------
    def p_eq(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        for ids, iota in (ins, ins[::-1]):
            if isinstance(ids, _Ids) and isinstance(iota, _K):
                self.tokens(ids)
                k = int(shape[-1])
                hot = np.asarray(iota.array)
                if (
                    _is_one(ids.shape[-1])
                    and hot.shape[:-1] == (1,) * (hot.ndim - 1)
                    and hot.shape[-1] == k
                    and (hot.reshape(-1) == np.arange(k)).all()
                ):
                    rest = [d for d in shape[:-1] if not _is_one(d)]
                    if _same_shape(rest, (self.b.batch, self.b.L)):
                        return _OneHot(k, shape)
        raise self.b.refuse("a comparison of computed values (only ids == iota, jax.nn.one_hot)")

    def p_select_n(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        pred, *cases = ins
        if isinstance(pred, _Ids) and (pred.table == pred.table[0]).all():
            pred = self.b.ids_constant(pred)
        if len(cases) != 2 or not isinstance(pred, _K) or pred.array.dtype != np.bool_:
            raise self.b.refuse("jnp.where with a condition computed from the parameters or the tokens")
        mask = np.asarray(pred.array)
        on_false, on_true = cases
        for fill, x, where in ((on_false, on_true, ~mask), (on_true, on_false, mask)):
            if isinstance(fill, _K) and _uniform(fill) and not isinstance(x, _K):
                px = self.b.operand(x)
                actual = _broadcast(px.actual, mask.shape)
                px = self.b.full(px, [a for a in range(len(shape)) if not _same(px.actual[a], actual[a])])
                value = float(np.asarray(fill.array).reshape(-1)[0])
                return self.b.node(
                    "masked_fill", [px.ref, self.b.const(where)], {"value": value}, shape, actual
                )
        pt, pf = self.b.operand(on_true), self.b.operand(on_false)
        actual = _broadcast(_broadcast(pt.actual, pf.actual), mask.shape)
        return self.b.node("where", [self.b.const(mask), pt.ref, pf.ref], {}, shape, actual)

    # reductions --------------------------------------------------------------------------------------
    def p_reduce_max(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        axes = tuple(eqn.params["axes"])
        if isinstance(x, _P) and len(axes) == 1:
            return _Mark("max", x, axes[0], shape, self.b.source)
        raise self.b.refuse("is not in the op table (only over one axis, as the softmax stabiliser)")

    def p_reduce_sum(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        axes = tuple(int(a) for a in eqn.params["axes"])
        if isinstance(x, _Mark) and x.kind == "exp" and axes == (x.axis,):
            return _Mark("den", x.src, x.axis, shape, x.source)
        p = self.b.full(self.b.operand(x), axes)
        actual = tuple(d for a, d in enumerate(p.actual) if a not in axes)
        return self.b.node("sum", [p.ref], {"axis": axes, "keepdim": False}, shape, actual)

    def softmax(self, op: str, m: _Mark) -> _P:
        src = self.b.full(m.src, [m.axis])
        return self.b.node(op, [src.ref], {"axis": m.axis}, src.shape, src.actual)

    # shapes ------------------------------------------------------------------------------------------
    def p_broadcast_in_dim(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        dims = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
        if isinstance(x, _Ids):
            return self.ids_shape(x, shape)
        if isinstance(x, _Mark) and x.kind in ("max", "den"):
            keep = list(x.src.shape)
            keep[x.axis] = 1
            if len(x.shape) == len(x.src.shape) - 1 and _same_shape(shape, keep):
                return _Mark(x.kind, x.src, x.axis, shape, x.source)
        p = self.b.operand(x)
        inserted = [1] * len(shape)
        for j, d in enumerate(dims):
            inserted[d] = p.actual[j]
        return self.b.reshape(p, inserted, shape)

    def p_reshape(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        if eqn.params.get("dimensions") is not None:
            raise self.b.refuse("a reshape with a transposition (dimensions=...)")
        if isinstance(x, _Ids):
            return self.ids_shape(x, shape)
        p = self.b.full(self.b.operand(x))
        return self.b.reshape(p, shape, shape)

    def p_squeeze(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        if isinstance(x, _Ids):
            return self.ids_shape(x, shape)
        p = self.b.operand(x)
        gone = {int(d) % len(p.shape) for d in eqn.params["dimensions"]}
        return self.b.reshape(p, [d for a, d in enumerate(p.actual) if a not in gone], shape)

    def p_transpose(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x = ins[0]
        perm = tuple(int(p) for p in eqn.params["permutation"])
        if isinstance(x, _Ids):
            return self.ids_shape(x, shape)
        return self.b.permute(self.b.operand(x), perm)

    def p_concatenate(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        axis = int(eqn.params["dimension"])
        parts = [self.b.full(self.b.operand(x), [axis]) for x in ins]
        actual = list(shape)
        for a in range(len(shape)):
            if a != axis and all(_is_one(p.actual[a]) for p in parts):
                actual[a] = 1
        parts = [
            self.b.full(p, [a for a in range(len(shape)) if not _same(p.actual[a], actual[a])]) for p in parts
        ]
        return self.b.node("concat", [p.ref for p in parts], {"axis": axis}, shape, actual)

    def sliced(self, p: _P, starts: Sequence[int], stops: Sequence[int | None], steps: Sequence[int]) -> _P:
        shape = list(p.shape)
        for a, (lo, hi, step) in enumerate(zip(starts, stops, steps, strict=True)):
            size = _int(p.shape[a])
            if size is None:
                if (lo, step) == (0, 1) and hi is None:
                    continue
                raise self.b.refuse("a slice along the batch axis")
            stop = size if hi is None else hi
            if (lo, stop, step) == (0, size, 1):
                continue
            shape[a] = len(range(lo, stop, step))
            if _is_one(p.actual[a]) and size != 1:  # broadcast: every position holds the same entries
                p = _P(p.ref, tuple(shape), p.actual)
                continue
            actual = list(p.actual)
            actual[a] = shape[a]
            p = self.b.node(
                "slice",
                [p.ref],
                {"axis": a, "start": lo, "stop": stop, "step": step},
                tuple(shape),
                tuple(actual),
            )
        return p

    def split(self, eqn: Any, ins: list[_Value], shapes: list[tuple[Any, ...]]) -> list[_Value]:
        """``jnp.split``: one slice per part along ``axis``."""
        p = self.b.operand(ins[0])
        axis = int(eqn.params["axis"])
        parts: list[_Value] = []
        start = 0
        for size in eqn.params["sizes"]:
            lo = [start if a == axis else 0 for a in range(len(p.shape))]
            hi = [start + int(size) if a == axis else _int(d) for a, d in enumerate(p.shape)]
            parts.append(self.sliced(p, lo, hi, [1] * len(lo)))
            start += int(size)
        return parts

    def p_slice(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        p = self.b.operand(ins[0])
        lo = [int(s) for s in eqn.params["start_indices"]]
        hi = [_int(s) for s in eqn.params["limit_indices"]]
        steps = eqn.params["strides"] or (1,) * len(lo)
        return self.sliced(p, lo, hi, [int(s) for s in steps])

    def p_dynamic_slice(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        x, *starts = ins
        if not all(isinstance(s, _K) for s in starts):
            raise self.b.refuse("a slice at positions computed from the parameters or the tokens")
        p = self.b.operand(x)
        sizes = [_int(s) for s in eqn.params["slice_sizes"]]
        lo: list[int] = []
        hi: list[int | None] = []
        for a, (s, k) in enumerate(zip(starts, sizes, strict=True)):
            dim = _int(p.shape[a])
            if dim is None or k is None:
                lo.append(0)
                hi.append(None)
                continue
            start = min(max(int(_array(s).reshape(())), 0), dim - k)
            lo.append(start)
            hi.append(start + k)
        return self.sliced(p, lo, hi, [1] * len(lo))

    # tables and products -----------------------------------------------------------------------------
    def p_gather(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        table, idx = ins
        dn = eqn.params["dimension_numbers"]
        if isinstance(idx, _K) and len(idx.shape) == 1 and not isinstance(table, (_Ids, _OneHot, _Mark)):
            return self.gather_slice(eqn, self.b.operand(table), np.asarray(idx.array), shape)
        rank = len(table.shape)
        rows = tuple(table.shape[1:])
        ok = (
            tuple(dn.start_index_map) == (0,)
            and tuple(dn.collapsed_slice_dims) == (0,)
            and not tuple(getattr(dn, "operand_batching_dims", ()))
            and _same_shape(eqn.params["slice_sizes"], (1, *rows))
            and _is_one(idx.shape[-1])
            and tuple(dn.offset_dims) == tuple(range(len(idx.shape) - 1, len(idx.shape) - 1 + rank - 1))
        )
        if not ok:
            raise self.b.refuse(
                "a gather other than rows of a table at integer ids (x[ids], jnp.take(x, ids, 0))"
            )
        t = self.b.operand(table)
        t = self.b.full(t, range(1, rank))
        if isinstance(idx, _Ids):
            self.tokens(idx)
            out_actual = (self.b.batch, self.b.L, *rows)
            out = self.b.node("embedding", [t.ref, self.b.tokens_ref], {}, out_actual, out_actual)
            return self.b.reshape(out, shape, shape)
        if isinstance(idx, _K):
            ids = np.asarray(idx.array)[..., 0].astype(np.int64)
            n_rows = _int(table.shape[0])
            if n_rows is None or (ids.size and not (0 <= ids.min() and ids.max() < n_rows)):
                raise self.b.refuse(f"ids {ids.min()}..{ids.max()} outside the table's rows")
            out = self.b.node("embedding", [t.ref, self.b.const(ids)], {}, shape, (*ids.shape, *t.actual[1:]))
            return out
        raise self.b.refuse("a gather at ids computed from the parameters")

    def gather_slice(self, eqn: Any, p: _P, starts: np.ndarray, shape: tuple[Any, ...]) -> _Value:
        """A gather at one constant start (how ``x[..., a:b]`` and ``x[:, i]`` trace at a symbolic batch
        size): a slice on each axis of ``start_index_map``, the collapsed axes dropped."""
        dn = eqn.params["dimension_numbers"]
        sizes = [_int(s) for s in eqn.params["slice_sizes"]]
        collapsed = tuple(int(a) for a in dn.collapsed_slice_dims)
        if tuple(getattr(dn, "operand_batching_dims", ())) or tuple(dn.offset_dims) != tuple(
            range(len(shape))
        ):
            raise self.b.refuse("a gather other than a slice at a constant position or rows at integer ids")
        lo: list[int] = []
        hi: list[int | None] = []
        for axis, size in enumerate(sizes):
            dim = _int(p.shape[axis])
            if dim is None or size is None:
                lo.append(0)
                hi.append(None)
                continue
            start = 0
            if axis in dn.start_index_map:
                start = int(starts[list(dn.start_index_map).index(axis)])
                if not 0 <= start <= dim - size:
                    raise self.b.refuse(
                        f"positions {start}..{start + size - 1} outside an axis of size {dim}"
                    )
            lo.append(start)
            hi.append(start + size)
        out = self.sliced(p, lo, hi, [1] * len(lo))
        kept = [d for a, d in enumerate(out.actual) if a not in collapsed]
        return self.b.reshape(out, kept, shape)

    def p_dot_general(self, eqn: Any, ins: list[_Value], shape: tuple[Any, ...]) -> _Value:
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        lc, rc, lb, rb = (tuple(int(a) for a in t) for t in (lc, rc, lb, rb))
        lhs, rhs = self.b.operand(ins[0]), self.b.operand(ins[1])
        lfree = [a for a in range(len(lhs.shape)) if a not in lc and a not in lb]
        rfree = [a for a in range(len(rhs.shape)) if a not in rc and a not in rb]
        lhs = self.b.full(lhs, lfree + list(lc))
        rhs = self.b.full(rhs, rfree + list(rc))
        if not lb and len(lc) == 1 and len(rfree) <= 1:
            # (free..., K) @ (K, N): numpy's matmul broadcasts the free axes as leading ones
            a = self.b.permute(lhs, lfree + list(lc))
            b = self.b.permute(rhs, list(rc) + rfree)
            actual = (*a.actual[:-1], *b.actual[1:])
            return self.b.node("matmul", [a.ref, b.ref], {}, shape, actual)
        a = self.b.permute(lhs, list(lb) + lfree + list(lc))
        b = self.b.permute(rhs, list(rb) + list(rc) + rfree)
        nb = len(lb)
        k = math.prod(int(lhs.shape[c]) if _int(lhs.shape[c]) is not None else 1 for c in lc)
        if any(_int(lhs.shape[c]) is None for c in lc):
            raise self.b.refuse("a contraction over the batch axis")
        m_dims, n_dims = a.actual[nb : nb + len(lfree)], b.actual[nb + len(rc) :]
        m = _product(m_dims)
        n = _product(n_dims)
        a = self.b.reshape(a, (*a.actual[:nb], m, k))
        b = self.b.reshape(b, (*b.actual[:nb], k, n))
        batch = _broadcast(a.actual[:nb], b.actual[:nb])
        out = self.b.node("matmul", [a.ref, b.ref], {}, (*batch, m, n), (*batch, m, n))
        return self.b.reshape(out, (*batch, *m_dims, *n_dims), shape)


def _array(v: _Value) -> np.ndarray:
    """A constant's array (the caller has checked that ``v`` is one)."""
    if not isinstance(v, _K):
        raise TypeError(f"trace_jax: {type(v).__name__} is not a constant")
    return np.asarray(v.array)


def _product(dims: Sequence[Any]) -> Any:
    out: Any = 1
    for d in dims:
        out = out * d
    return out


def _uniform(k: _K) -> bool:
    """A constant whose entries are all equal (a scalar broadcast)."""
    a = np.asarray(k.array)
    return a.size >= 1 and bool((a == a.reshape(-1)[0]).all() or (a.size == 1))


def _inner(eqn: Any) -> tuple[Any, Sequence[Any]] | None:
    """The jaxpr (and its constants) a call primitive runs, None for any other primitive."""
    if eqn.primitive.name not in _CALLS:
        return None
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        if inner is None:
            continue
        if hasattr(inner, "jaxpr"):  # a ClosedJaxpr
            return inner.jaxpr, inner.consts
        return inner, ()
    return None


def _at_batch_one(params: Any, batch: Any) -> Any:
    """An equation's parameters with the symbolic batch size at 1 (to evaluate a constant)."""
    if isinstance(params, dict):
        return {k: _at_batch_one(v, batch) for k, v in params.items()}
    if isinstance(params, tuple):
        return tuple(_at_batch_one(v, batch) for v in params)
    if type(params).__name__ == "_DimExpr":
        return 1
    return params


# the program ------------------------------------------------------------------------------------------------


def trace_jax(apply: Callable[..., Any], params: Mapping[str, Any], S: int, L: int) -> TracedProgram:
    """The :class:`~rwtoolkit.models.traced.TracedProgram` of ``apply(params, tokens) -> logits (n, L, S)``.

    ``params``: a flat dict name -> array (the names are the program's parameters, in the dict's order; their
    values, as float64, its ``initial``); ``S`` the alphabet size, ``L`` the sequence length. The function is
    traced once at a symbolic batch size (the program runs on tokens of any n) with 64-bit JAX; each equation
    of its jaxpr becomes neutral ops (module docstring). A primitive outside the table is refused in one line
    naming it and the user's line.

    >>> import jax.numpy as jnp, numpy as np
    >>> from rwtoolkit.models import FLOAT64, Tape
    >>> program = trace_jax(lambda p, t: p["E"][t] @ p["U"].T, {"E": np.eye(2), "U": 2 * np.eye(2)}, 2, 3)
    >>> [node.op for node in program.nodes], program.axes
    (['embedding', 'permute', 'matmul'], {'E': ('token', None), 'U': ('token', None)})
    >>> program.run(Tape(FLOAT64), program.initial, np.array([[0, 1, 1]])).value[0].tolist()
    [[2.0, 0.0], [0.0, 2.0], [0.0, 2.0]]
    """
    names = _check_arguments(apply, params, S, L)
    import jax
    from jax import export

    initial = {name: np.asarray(params[name], dtype=np.float64) for name in names}
    with _x64():
        import jax.numpy as jnp

        (batch,) = export.symbolic_shape("n")
        tokens = jax.ShapeDtypeStruct((batch, L), jnp.int64)
        inputs = {name: initial[name] for name in names}
        try:
            closed = jax.make_jaxpr(apply)(inputs, tokens)
        except Exception as error:  # the user's function: its failure in one line
            first = (str(error).strip().splitlines() or [""])[0]
            raise ValueError(
                f"trace_jax: apply(params, tokens) does not trace at token ids of shape (n, {L}) for a "
                f"symbolic batch size n: {type(error).__name__}: {first}"
            ) from None
        paths = jax.tree_util.tree_flatten_with_path(inputs)[0]
        order = [str(path[0].key) for path, _ in paths]
        builder = _Builder(names, S, L, batch)
        args: list[_Value] = [
            _P(names.index(name), initial[name].shape, initial[name].shape) for name in order
        ]
        args.append(_Ids(np.arange(S), (batch, L)))
        outs = _Tracer(builder).walk(closed.jaxpr, closed.consts, args)
    if len(outs) != 1:
        raise ValueError(f"trace_jax: apply returns {len(outs)} arrays, not the logits (n, {L}, {S})")
    out = outs[0]
    builder.primitive, builder.source = "output", "the output"
    if isinstance(out, _K) or (isinstance(out, _Ids)):
        raise ValueError("trace_jax: the logits depend on no parameter")
    result = builder.full(builder.operand(out))
    if not _same_shape(result.shape, (batch, L, S)):
        raise ValueError(f"trace_jax: apply returns shape {result.shape}, not the logits (n, {L}, {S})")
    return _program(builder, result.ref, names, initial)


def _check_arguments(apply: Any, params: Any, S: Any, L: Any) -> list[str]:
    """The parameter names, or one line naming the argument and what it must be."""
    if not callable(apply):
        raise ValueError(
            f"trace_jax: apply must be a function apply(params, tokens) -> logits, got {apply!r}"
        )
    for what, value in (("S", S), ("L", L)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"trace_jax: {what} must be an integer >= 1, got {value!r}")
    if not isinstance(params, Mapping) or not params:
        raise ValueError("trace_jax: params must be a non-empty flat dict name -> array")
    for name, value in params.items():
        if not isinstance(name, str):
            raise ValueError(f"trace_jax: params has the key {name!r}; the names must be strings")
        try:
            array = np.asarray(value)
        except Exception:
            array = np.asarray(None)
        if array.dtype.kind not in "iuf":
            raise ValueError(
                f"trace_jax: params[{name!r}] must be an array of numbers (a flat dict name -> array), "
                f"got {type(value).__name__}"
            )
    return list(params)


def _x64() -> Any:
    """A context with 64-bit JAX (``jax.enable_x64``; ``jax.experimental.enable_x64`` before JAX 0.5)."""
    import jax

    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # type: ignore[attr-defined]

    return enable_x64()


def _program(
    builder: _Builder, output: int, names: list[str], initial: dict[str, np.ndarray]
) -> TracedProgram:
    """The live items (those the output reads) numbered as :class:`TracedProgram` numbers its values."""
    items = builder.items
    live: set[int] = set()
    stack = [output]
    while stack:
        ref = stack.pop()
        if ref not in live:
            live.add(ref)
            if items[ref][0] == "node":
                stack.extend(items[ref][2])
    number = {i: i for i in range(len(names) + 1)}
    constants: list[np.ndarray] = []
    for ref, item in enumerate(items):
        if item[0] == "const" and ref in live:
            number[ref] = len(names) + 1 + len(constants)
            constants.append(item[1])
    nodes: list[Node] = []
    for ref, item in enumerate(items):
        if item[0] == "node" and ref in live:
            number[ref] = len(names) + 1 + len(constants) + len(nodes)
            _, op, inputs, attrs, source = item
            nodes.append(Node(op, tuple(number[i] for i in inputs), attrs, source))
    shapes = {name: tuple(initial[name].shape) for name in names}
    axes = _parameter_axes(shapes, constants, nodes, number[output], builder.L)
    return TracedProgram(shapes, initial, constants, nodes, number[output], axes, framework="jax")


def _parameter_axes(
    shapes: Mapping[str, tuple[int, ...]],
    constants: Sequence[np.ndarray],
    nodes: Sequence[Node],
    output: int,
    L: int,
) -> dict[str, tuple[str | None, ...]]:
    """What each parameter axis indexes, inferred from the program: the rows of a table looked up at the
    token ids (``embedding``), or met by the one-hot of the tokens in a ``matmul``, and the parameter axis that
    becomes the logits' last one are ``"token"``; the rows of a table looked up at the positions 0 .. L−1 are
    ``"position"``; every other axis None."""
    names = list(shapes)
    P = len(names)
    first = P + 1 + len(constants)
    roles: dict[str, list[str | None]] = {name: [None] * len(shape) for name, shape in shapes.items()}

    def node_of(v: int) -> Node | None:
        return nodes[v - first] if v >= first else None

    def origins(v: int, axis: int, depth: int = 0) -> list[tuple[str, int]]:
        """The parameter axes the axis ``axis`` (< 0: from the end) of value ``v`` is read from: through
        permutes, the last axis of a matrix product's right factor, and every operand of an elementwise op."""
        if v < P:
            return [(names[v], axis % len(shapes[names[v]]))]
        node = node_of(v)
        if node is None or depth > 64:
            return []
        if node.op == "permute":
            perm = node.attrs["perm"]
            return origins(node.inputs[0], perm[axis] - len(perm), depth + 1)
        if node.op == "matmul":
            return origins(node.inputs[1], -1, depth + 1) if axis == -1 else []
        if node.op in _SAME_AXES:
            return [o for i in node.inputs if i != P for o in origins(i, axis, depth + 1)]
        return []

    for node in nodes:
        table = node.inputs[0] if node.inputs else -1
        if node.op == "embedding" and table < P:
            ids = node.inputs[1]
            if ids == P:
                roles[names[table]][0] = "token"
            elif P < ids < first and np.array_equal(
                np.asarray(constants[ids - P - 1]).reshape(-1), np.arange(L)
            ):
                roles[names[table]][0] = "position"
        if node.op == "matmul":
            hot = node_of(node.inputs[0])
            if hot is not None and hot.op == "one_hot" and hot.inputs[0] == P:
                right = node_of(node.inputs[1])
                if node.inputs[1] < P or (right is not None and right.op == "permute"):
                    for name, axis in origins(node.inputs[1], -2):
                        roles[name][axis] = "token"
    for name, axis in origins(output, -1):
        roles[name][axis] = "token"
    return {name: tuple(r) for name, r in roles.items()}


__all__ = ["trace_jax"]
