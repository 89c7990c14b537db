"""The traced program: a model traced from PyTorch or JAX in one neutral form, run on the tape.

A tracer (``rwtoolkit.models.traced.trace_torch``, the JAX one) maps each operation of the user's forward pass to a
:class:`Node` of a neutral op of :data:`OP_TABLE`; :meth:`TracedProgram.run` interprets the nodes with the
primitives of :class:`~rwtoolkit.models.Tape`, so the traced model runs, and is differentiated, in every arithmetic
(float64, torch, exact rationals and SymPy, arb balls).

Value numbering: ``0 .. P-1`` the parameters in order, ``P`` the token ids ``(n, L)`` int64 (a constant, never
differentiated), ``P+1 .. P+C`` the constants, then one value per node in order; ``output`` is the logits
``(n, L, S)``. The batch size n is free: no shape of a node names it (a reshape's batch-dependent size is −1).

Constants. A float constant of the trace (the 1/√d of the scores, a layer norm's ε, a constant table) enters the
arithmetic as the exact rational the float holds (``fractions.Fraction(x)``: 1/√2 traced in float64 is the dyadic
rational 6369051672525773 / 2⁵³, not the irrational 1/√2), so an exact run is the exact value of the program the
float run rounds. Integer and boolean constants (ids, masks) stay numpy arrays; operations on them alone (a
reshape of a mask, the one-hot of the tokens) are evaluated on them as they are.

Masks. ``masked_fill`` with value −∞ means "left out of the softmax": the interpreter carries the kept entries
(``~mask``) to the next ``softmax`` and calls ``tape.softmax(x, mask=keep)``, whose left-out entries are exactly 0
in every arithmetic. Between the two only ``reshape``, ``permute``, ``transpose``, ``masked_fill`` and a
``scale`` by a positive constant may act on the scores; anything else reading them is refused in one line.

>>> import numpy as np
>>> from rwtoolkit.models import FLOAT64, Tape
>>> program = TracedProgram(
...     parameters={"E": (2, 2)}, initial={"E": np.eye(2)}, constants=[np.array(0.5)],
...     nodes=[Node("embedding", (0, 1), {}, "m.py:3"), Node("mul", (3, 2), {}, "m.py:4")],
...     output=4, axes={"E": ("token", None)})
>>> program.run(Tape(FLOAT64), {"E": np.eye(2)}, np.array([[0, 1]])).value.tolist()
[[[0.5, 0.0], [0.0, 0.5]]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.models._tape import Tape, Var

#: Where the op table is documented for users (every refusal of an op names it).
GUIDE = "docs/guide/bring-your-model.md"


@dataclass(frozen=True)
class Node:
    """One operation of a traced program: a neutral ``op`` of :data:`OP_TABLE` on earlier values ``inputs``
    (indices in the program's numbering), its static arguments ``attrs`` (plain python: ints, floats, tuples,
    None), and ``source``, the user's ``path/to/file.py:LINE`` it came from (for refusals and errors)."""

    op: str
    inputs: tuple[int, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<unknown>"


def unknown_op(framework: str, name: str, source: str) -> ValueError:
    """The one line refusing an op outside the table (every tracer raises it, and the interpreter).

    >>> str(unknown_op("torch", "sort", "model.py:12"))
    "torch op 'sort' at model.py:12 is not in the op table (docs/guide/bring-your-model.md lists it)"
    """
    return ValueError(f"{framework} op '{name}' at {source} is not in the op table ({GUIDE} lists it)")


@dataclass
class TracedProgram:
    """A model traced into the neutral ops of :data:`OP_TABLE` (module docstring: numbering, constants, masks).

    ``parameters``: name -> shape, the trained parameters in order (a framework's names, dots kept);
    ``initial``: the user's own start as float64 arrays (in an exact arithmetic, the dyadic rationals they hold);
    ``constants``: float64 / int64 / bool arrays captured by the trace; ``nodes``; ``output``: the value holding the
    logits (n, L, S); ``axes``: per parameter, what each axis indexes ("token", "position", "head") or None;
    ``framework``: who traced it ("torch", "jax"; named in refusals).

    Construction checks the program's form (ops in the table, their attributes, inputs numbering earlier values,
    the names of ``initial`` and ``axes``) and refuses in one line, so a tracer's mistake is found where it is made.
    """

    parameters: dict[str, tuple[int, ...]]
    initial: dict[str, np.ndarray]
    constants: list[np.ndarray]
    nodes: list[Node]
    output: int
    axes: dict[str, tuple[str | None, ...]]
    framework: str = "traced"

    def __post_init__(self) -> None:
        names = list(self.parameters)
        for what, keys in (("initial", self.initial), ("axes", self.axes)):
            if list(keys) != names:
                raise ValueError(
                    f"traced program: {what} names {list(keys)} differ from the parameters {names}"
                )
        for name, shape in self.parameters.items():
            if tuple(np.shape(self.initial[name])) != tuple(shape):
                raise ValueError(
                    f"traced program: initial[{name!r}] has shape {np.shape(self.initial[name])}, "
                    f"the parameter {tuple(shape)}"
                )
            if len(self.axes[name]) != len(shape):
                raise ValueError(
                    f"traced program: axes[{name!r}] names {len(self.axes[name])} axes of {len(shape)}"
                )
        first = len(self.parameters) + 1 + len(self.constants)
        for k, node in enumerate(self.nodes):
            op = OP_TABLE.get(node.op)
            if op is None:
                raise unknown_op(self.framework, node.op, node.source)
            bad = [i for i in node.inputs if not 0 <= i < first + k]
            if bad:
                raise ValueError(
                    f"traced program: {node.op} at {node.source} reads values {bad} not made before it"
                )
            op.check(node)
        if not 0 <= self.output < first + len(self.nodes):
            raise ValueError(f"traced program: output {self.output} is not a value of the program")

    @property
    def tokens(self) -> int:
        """The number of the token ids' value (P)."""
        return len(self.parameters)

    def run(self, tape: Tape, params: Mapping[str, Var | Any], tokens: np.ndarray) -> Var:
        """The logits (n, L, S) of the token ids ``tokens`` (n, L) with parameters ``params`` (tape values or
        arrays of ``tape``'s arithmetic, by name), in the tape's arithmetic; differentiate with ``tape.gradient``."""
        ids = np.asarray(tokens)
        if ids.ndim != 2 or ids.dtype.kind not in "iu":
            raise ValueError(
                f"traced program: tokens must be integer ids of shape (n, L), got {ids.dtype} {ids.shape}"
            )
        missing = [name for name in self.parameters if name not in params]
        if missing:
            raise ValueError(f"traced program: no value for the parameters {missing}")
        run = _Run(tape, self.framework)
        values: list[Any] = [params[name] for name in self.parameters]
        values.append(_Const(ids.astype(np.int64)))
        values.extend(_Const(np.asarray(c)) for c in self.constants)
        for node in self.nodes:
            try:
                values.append(OP_TABLE[node.op].run(run, node, [values[i] for i in node.inputs]))
            except (_Refused, ValueError) as refused:  # the op's or the tape's one line, with the user's line
                why = str(refused).removeprefix(f"{node.op}: ")
                raise ValueError(f"{node.op} at {node.source}: {why}") from None
        out = values[self.output]
        if isinstance(out, _Masked):
            raise ValueError(
                f"traced program: the output is masked_fill(-inf) scores ({out.source}), not logits"
            )
        result = out if isinstance(out, Var) else tape.input(run.operand(out))
        if len(result.shape) != 3 or result.shape[:2] != ids.shape:
            raise ValueError(
                f"traced program: the output has shape {result.shape}, not logits (n, L, S) = {ids.shape} + (S,)"
            )
        return result


# the interpreter -----------------------------------------------------------------------------------------


class _Refused(Exception):
    """An op's refusal; the interpreter prefixes the op and its source."""


@dataclass(frozen=True)
class _Const:
    """A constant numpy array (float64, int64 or bool) not yet taken into the arithmetic."""

    array: np.ndarray


@dataclass(frozen=True)
class _Masked:
    """Scores ``x`` with the entries where ``keep`` is False left out of the next softmax (masked_fill −∞)."""

    x: Any
    keep: np.ndarray
    source: str


class _Run:
    """One run of a program: the tape, and how a value enters its arithmetic."""

    def __init__(self, tape: Tape, framework: str) -> None:
        self.tape, self.ar, self.framework = tape, tape.ar, framework

    def number(self, x: float | int) -> Any:
        """A python number as a 0-d array of the arithmetic, a float as the exact rational it holds."""
        return self.ar.asarray(_rational(x))

    def operand(self, v: Any) -> Any:
        """A value as a tape operand (a Var or an array of the arithmetic)."""
        if isinstance(v, _Const):
            a = v.array
            if a.dtype.kind == "f":
                if not np.isfinite(a).all():
                    raise _Refused("a constant holds inf or NaN outside a masked_fill(-inf) before a softmax")
                return self.ar.asarray(np.vectorize(_rational, otypes=[object])(a) if a.size else a)
            return self.ar.asarray(a.astype(np.int64))
        if isinstance(v, _Masked):
            raise _Refused(
                f"reads the masked_fill(-inf) scores of {v.source} before a softmax (only reshape, permute, "
                "transpose and a positive scale may act on them)"
            )
        return v

    @staticmethod
    def static(v: Any, what: str) -> np.ndarray:
        """A constant (ids, a mask) as the numpy array it is, or one line: it depends on the parameters."""
        if isinstance(v, _Const):
            return v.array
        raise _Refused(
            f"{what} must be a constant (ids or a mask known before the parameters), not a computed value"
        )

    @staticmethod
    def shape(v: Any) -> tuple[int, ...]:
        if isinstance(v, _Const):
            return tuple(v.array.shape)
        if isinstance(v, _Masked):
            return tuple(v.keep.shape)
        if isinstance(v, Var):
            return v.shape
        return tuple(v.shape)


def _rational(x: Any) -> Any:
    """An int as it is, a float as the exact Fraction it holds."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Fraction):
        return x
    return Fraction(float(x))


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise _Refused(f"axis {axis} out of range for {ndim} axes")
    return axis % ndim


def _reshape_sizes(shape: Sequence[int], old: tuple[int, ...]) -> tuple[int, ...]:
    """A reshape's target with −1 resolved against the input's size (numpy's rule; one −1 at most)."""
    shape = tuple(int(s) for s in shape)
    total = math.prod(old)
    if shape.count(-1) > 1:
        raise _Refused(f"reshape to {shape}: more than one -1")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or total % known:
            raise _Refused(f"cannot reshape {old} to {shape}")
        shape = tuple(total // known if s == -1 else s for s in shape)
    if math.prod(shape) != total:
        raise _Refused(f"cannot reshape {old} to {shape}")
    return shape


def _structural(
    run: _Run, v: Any, numpy_fn: Callable[[np.ndarray], np.ndarray], tape_fn: Callable[[Any], Any]
) -> Any:
    """A shape-only operation on a constant (numpy), on masked scores (both the scores and the kept entries), or
    on a value of the arithmetic (the tape)."""
    if isinstance(v, _Const):
        return _Const(np.asarray(numpy_fn(v.array)))
    if isinstance(v, _Masked):
        return _Masked(tape_fn(v.x), np.asarray(numpy_fn(v.keep)), v.source)
    return tape_fn(v)


def _op_matmul(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.matmul(run.operand(v[0]), run.operand(v[1]))


def _op_add(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.add(run.operand(v[0]), run.operand(v[1]))


def _op_sub(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.sub(run.operand(v[0]), run.operand(v[1]))


def _positive_constant(run: _Run, v: Any) -> Any | None:
    """A constant scalar > 0 as an array of the arithmetic, else None."""
    if (
        isinstance(v, _Const)
        and v.array.size == 1
        and v.array.dtype.kind in "iuf"
        and float(v.array.reshape(())) > 0
    ):
        return run.number(v.array.reshape(()).item())
    return None


def _op_mul(run: _Run, node: Node, v: list[Any]) -> Any:
    for a, b in ((v[0], v[1]), (v[1], v[0])):
        if isinstance(a, _Masked) and (c := _positive_constant(run, b)) is not None:
            return _Masked(run.tape.scale(run.operand(a.x), c), a.keep, a.source)
    return run.tape.mul(run.operand(v[0]), run.operand(v[1]))


def _op_div(run: _Run, node: Node, v: list[Any]) -> Any:
    if isinstance(v[0], _Masked) and (c := _positive_constant(run, v[1])) is not None:
        return _Masked(run.tape.div(run.operand(v[0].x), c), v[0].keep, v[0].source)
    return run.tape.div(run.operand(v[0]), run.operand(v[1]))


def _op_scale(run: _Run, node: Node, v: list[Any]) -> Any:
    value = node.attrs["value"]
    if isinstance(v[0], _Masked):
        if not value > 0:
            raise _Refused(
                f"scales masked_fill(-inf) scores by {value} (only a positive scale keeps -inf -inf)"
            )
        return _Masked(run.tape.scale(run.operand(v[0].x), run.number(value)), v[0].keep, v[0].source)
    return run.tape.scale(run.operand(v[0]), run.number(value))


def _op_neg(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.scale(run.operand(v[0]), run.number(-1))


def _op_exp(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.exp(run.operand(v[0]))


def _op_log(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.log(run.operand(v[0]))


def _op_sqrt(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.sqrt(run.operand(v[0]))


def _op_rsqrt(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.div(run.number(1), run.tape.sqrt(run.operand(v[0])))


def _op_pow(run: _Run, node: Node, v: list[Any]) -> Any:
    e = node.attrs["exponent"]
    x = run.operand(v[0])
    if e in (0.5, -0.5):
        root = run.tape.sqrt(x)
        return root if e > 0 else run.tape.div(run.number(1), root)
    if float(e) != int(e):
        raise _Refused(f"exponent {e}: only an integer or ±1/2")
    k = abs(int(e))
    if k == 0:
        return run.tape.add(run.tape.scale(x, run.number(0)), run.number(1))
    out = x
    for _ in range(k - 1):
        out = run.tape.mul(out, x)
    return out if e > 0 else run.tape.div(run.number(1), out)


def _op_relu(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.relu(run.operand(v[0]))


def _op_gelu(run: _Run, node: Node, v: list[Any]) -> Any:
    return run.tape.gelu(run.operand(v[0]))


def _last_axis(run: _Run, v: Any, axis: int, fn: Callable[[Any, np.ndarray | None], Any]) -> Any:
    """``fn`` over the last axis of ``v``, moving ``axis`` there and back when it is another."""
    ndim = len(run.shape(v))
    ax = _axis(axis, ndim)
    x, keep = (v.x, v.keep) if isinstance(v, _Masked) else (v, None)
    x = run.operand(x)
    if ax == ndim - 1:
        return fn(x, keep)
    order = [*range(ax), *range(ax + 1, ndim), ax]
    back = [*range(ax), ndim - 1, *range(ax, ndim - 1)]
    moved = fn(run.tape.permute(x, order), None if keep is None else np.transpose(keep, order))
    return run.tape.permute(moved, back)


def _op_softmax(run: _Run, node: Node, v: list[Any]) -> Any:
    return _last_axis(run, v[0], node.attrs.get("axis", -1), lambda x, keep: run.tape.softmax(x, mask=keep))


def _op_log_softmax(run: _Run, node: Node, v: list[Any]) -> Any:
    def fn(x: Any, keep: np.ndarray | None) -> Any:
        if keep is not None:
            raise _Refused("log_softmax of masked_fill(-inf) scores (the tape's log_softmax takes no mask)")
        return run.tape.log_softmax(x)

    return _last_axis(run, v[0], node.attrs.get("axis", -1), fn)


def _op_layer_norm(run: _Run, node: Node, v: list[Any]) -> Any:
    normalized = tuple(int(s) for s in node.attrs["normalized_shape"])
    x = run.operand(v[0])
    shape = run.shape(x)
    k = len(normalized)
    if k == 0 or shape[-k:] != normalized:
        raise _Refused(f"normalized_shape {normalized} is not the last axes of {shape}")
    rest = list(v[1:])
    weight = run.operand(rest.pop(0)) if node.attrs.get("weight", False) else None
    bias = run.operand(rest.pop(0)) if node.attrs.get("bias", False) else None
    size = math.prod(normalized)
    if k > 1:
        x = run.tape.reshape(x, shape[:-k] + (size,))
        weight = None if weight is None else run.tape.reshape(weight, (size,))
        bias = None if bias is None else run.tape.reshape(bias, (size,))
    out = run.tape.layer_norm(x, _rational(node.attrs["eps"]), weight, bias)
    return out if k == 1 else run.tape.reshape(out, shape)


def _reduce(run: _Run, node: Node, v: list[Any], fn: Callable[[Any, int], Any]) -> Any:
    x = run.operand(v[0])
    shape = run.shape(x)
    axis = node.attrs.get("axis")
    axes = range(len(shape)) if axis is None else ([axis] if isinstance(axis, int) else axis)
    chosen = sorted({_axis(int(a), len(shape)) for a in axes}, reverse=True)
    out = x
    for a in chosen:
        out = fn(out, a)
    if node.attrs.get("keepdim", False):
        out = run.tape.reshape(out, tuple(1 if d in chosen else s for d, s in enumerate(shape)))
    return out if isinstance(out, Var) else run.tape.input(out)


def _op_sum(run: _Run, node: Node, v: list[Any]) -> Any:
    return _reduce(run, node, v, run.tape.sum)


def _op_mean(run: _Run, node: Node, v: list[Any]) -> Any:
    return _reduce(run, node, v, run.tape.mean)


def _op_reshape(run: _Run, node: Node, v: list[Any]) -> Any:
    shape = _reshape_sizes(node.attrs["shape"], run.shape(v[0]))
    return _structural(run, v[0], lambda a: a.reshape(shape), lambda x: run.tape.reshape(x, shape))


def _op_permute(run: _Run, node: Node, v: list[Any]) -> Any:
    perm = tuple(int(p) for p in node.attrs["perm"])
    return _structural(run, v[0], lambda a: np.transpose(a, perm), lambda x: run.tape.permute(x, perm))


def _op_transpose(run: _Run, node: Node, v: list[Any]) -> Any:
    ndim = len(run.shape(v[0]))
    a, b = _axis(node.attrs["dim0"], ndim), _axis(node.attrs["dim1"], ndim)
    perm = list(range(ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return _structural(run, v[0], lambda x: np.transpose(x, perm), lambda x: run.tape.permute(x, perm))


def _op_expand(run: _Run, node: Node, v: list[Any]) -> Any:
    old = run.shape(v[0])
    target = [int(s) for s in node.attrs["shape"]]
    lead = len(target) - len(old)
    if lead < 0:
        raise _Refused(f"expand of {old} to {tuple(target)}: fewer axes")
    shape = tuple(old[d - lead] if s == -1 and d >= lead else s for d, s in enumerate(target))
    if -1 in shape:
        raise _Refused(f"expand to {tuple(target)}: -1 on a new axis")
    if isinstance(v[0], _Const):
        return _Const(np.broadcast_to(v[0].array, shape).copy())
    return run.tape.add(run.operand(v[0]), run.ar.zeros(shape))


def _op_concat(run: _Run, node: Node, v: list[Any]) -> Any:
    axis = int(node.attrs["axis"])
    if all(isinstance(x, _Const) for x in v):
        return _Const(np.concatenate([x.array for x in v], axis=axis))
    return run.tape.concat([run.operand(x) for x in v], axis)


def _take(run: _Run, v: Any, axis: int, index: np.ndarray) -> Any:
    """``v`` at the constant positions ``index`` (1-D ints) of ``axis`` (a gather along it)."""
    shape = run.shape(v)
    ax = _axis(axis, len(shape))
    if isinstance(v, _Const):
        return _Const(np.take(v.array, index, axis=ax))
    if isinstance(v, _Masked):
        return _Masked(_take(run, v.x, ax, index), np.take(v.keep, index, axis=ax), v.source)
    if index.size == shape[ax] and (index == np.arange(shape[ax])).all():
        return v
    where = index.reshape(tuple(index.size if d == ax else 1 for d in range(len(shape))))
    return run.tape.gather(run.operand(v), where, ax)


def _op_slice(run: _Run, node: Node, v: list[Any]) -> Any:
    shape = run.shape(v[0])
    ax = _axis(int(node.attrs["axis"]), len(shape))
    a = node.attrs
    index = np.arange(*slice(a.get("start"), a.get("stop"), a.get("step")).indices(shape[ax]), dtype=np.int64)
    return _take(run, v[0], ax, index)


def _op_select(run: _Run, node: Node, v: list[Any]) -> Any:
    shape = run.shape(v[0])
    ax = _axis(int(node.attrs["axis"]), len(shape))
    i = int(node.attrs["index"])
    if not -shape[ax] <= i < shape[ax]:
        raise _Refused(f"index {i} out of range for size {shape[ax]}")
    taken = _take(run, v[0], ax, np.array([i % shape[ax]], dtype=np.int64))
    out = shape[:ax] + shape[ax + 1 :]
    return _structural(run, taken, lambda a: a.reshape(out), lambda x: run.tape.reshape(x, out))


def _op_embedding(run: _Run, node: Node, v: list[Any]) -> Any:
    ids = run.static(v[1], "embedding's ids").astype(np.int64)
    table = v[0]
    rows = run.shape(table)[0]
    if ids.size and not (0 <= ids.min() and ids.max() < rows):
        raise _Refused(f"ids {ids.min()}..{ids.max()} outside the table's {rows} rows")
    if isinstance(table, _Const):
        return _Const(table.array[ids])
    rest = run.shape(table)[1:]
    taken = run.tape.gather(run.operand(table), ids.reshape((-1,) + (1,) * len(rest)), 0)
    return run.tape.reshape(taken, ids.shape + rest)


def _op_gather(run: _Run, node: Node, v: list[Any]) -> Any:
    index = run.static(v[1], "gather's indices").astype(np.int64)
    ax = int(node.attrs["axis"])
    if isinstance(v[0], _Const):
        return _Const(np.take_along_axis(v[0].array, index, axis=ax))
    return run.tape.gather(run.operand(v[0]), index, ax)


def _op_one_hot(run: _Run, node: Node, v: list[Any]) -> Any:
    ids = run.static(v[0], "one_hot's ids").astype(np.int64)
    k = int(node.attrs["num_classes"])
    if ids.size and not (0 <= ids.min() and ids.max() < k):
        raise _Refused(f"ids {ids.min()}..{ids.max()} outside num_classes={k}")
    return _Const((ids[..., None] == np.arange(k)).astype(np.int64))


def _op_masked_fill(run: _Run, node: Node, v: list[Any]) -> Any:
    mask = run.static(v[1], "masked_fill's mask")
    if mask.dtype != np.bool_:
        raise _Refused(f"mask of dtype {mask.dtype}, not boolean")
    value = float(node.attrs["value"])
    shape = run.shape(v[0])
    try:
        fill = np.broadcast_to(mask, shape)
    except ValueError:
        raise _Refused(f"mask of shape {mask.shape} does not broadcast to {shape}") from None
    if value == -math.inf:
        if isinstance(v[0], _Masked):
            return _Masked(v[0].x, v[0].keep & ~fill, v[0].source)
        return _Masked(v[0], np.array(~fill), node.source)
    if not math.isfinite(value):
        raise _Refused(f"value {value}: only -inf (left out of the softmax) or a finite number")
    x = run.operand(v[0])
    kept = run.tape.scale(x, run.ar.asarray((~fill).astype(np.int64)))
    filled = fill.astype(np.int64).astype(object) * Fraction(value)  # the exact rational the float holds
    return run.tape.add(kept, run.ar.asarray(filled))


def _op_where(run: _Run, node: Node, v: list[Any]) -> Any:
    cond = run.static(v[0], "where's condition")
    if cond.dtype != np.bool_:
        raise _Refused(f"condition of dtype {cond.dtype}, not boolean")

    def minus_infinity(x: Any) -> bool:
        return isinstance(x, _Const) and x.array.dtype.kind == "f" and bool((x.array == -math.inf).all())

    shape = np.broadcast_shapes(cond.shape, run.shape(v[1]), run.shape(v[2]))
    if minus_infinity(v[2]) and not minus_infinity(v[1]):
        x = run.tape.add(run.operand(v[1]), run.ar.zeros(shape))
        return _Masked(x, np.broadcast_to(cond, shape).copy(), node.source)
    if minus_infinity(v[1]) and not minus_infinity(v[2]):
        x = run.tape.add(run.operand(v[2]), run.ar.zeros(shape))
        return _Masked(x, np.broadcast_to(~cond, shape).copy(), node.source)
    on = run.ar.asarray(cond.astype(np.int64))
    off = run.ar.asarray((~cond).astype(np.int64))
    return run.tape.add(run.tape.scale(run.operand(v[1]), on), run.tape.scale(run.operand(v[2]), off))


#: The marker of a required attribute in :class:`Op`.
REQUIRED: Any = object()


@dataclass(frozen=True)
class Op:
    """A neutral op: ``doc`` (one line), its ``arity`` (inputs; None: one or more), ``attrs`` (name -> default,
    :data:`REQUIRED` where it has none) and ``run``, the interpreter function calling the tape's primitives."""

    doc: str
    arity: int | None
    attrs: Mapping[str, Any]
    run: Callable[[_Run, Node, list[Any]], Any]

    def check(self, node: Node) -> None:
        """One line where ``node`` has the wrong number of inputs or an unknown or missing attribute."""
        n = len(node.inputs)
        if (self.arity is None and n < 1) or (self.arity is not None and not self._arity_ok(node, n)):
            raise ValueError(f"traced program: {node.op} at {node.source} takes {self.arity} inputs, got {n}")
        unknown = sorted(set(node.attrs) - set(self.attrs))
        missing = sorted(k for k, d in self.attrs.items() if d is REQUIRED and k not in node.attrs)
        if unknown or missing:
            raise ValueError(
                f"traced program: {node.op} at {node.source} has unknown attributes {unknown} / lacks {missing} "
                f"(it takes {sorted(self.attrs)})"
            )

    def _arity_ok(self, node: Node, n: int) -> bool:
        if node.op == "layer_norm":  # x, then weight and bias where the attributes say so
            return n == 1 + bool(node.attrs.get("weight", False)) + bool(node.attrs.get("bias", False))
        return n == self.arity


#: The neutral ops a tracer emits and :meth:`TracedProgram.run` interprets (docs/guide/bring-your-model.md).
OP_TABLE: dict[str, Op] = {
    "matmul": Op(
        "a @ b, numpy's rules (1-D promoted, leading axes broadcast): tape.matmul", 2, {}, _op_matmul
    ),
    "add": Op("a + b elementwise, broadcast: tape.add", 2, {}, _op_add),
    "sub": Op("a − b elementwise, broadcast: tape.sub", 2, {}, _op_sub),
    "mul": Op(
        "a ⊙ b elementwise, broadcast: tape.mul (a positive constant scalar keeps masked scores)",
        2,
        {},
        _op_mul,
    ),
    "div": Op(
        "a / b elementwise, broadcast: tape.div (a positive constant scalar keeps masked scores)",
        2,
        {},
        _op_div,
    ),
    "scale": Op(
        "x times the constant scalar `value` (a float enters as its exact rational): tape.scale",
        1,
        {"value": REQUIRED},
        _op_scale,
    ),
    "neg": Op("−x: tape.scale by −1", 1, {}, _op_neg),
    "exp": Op("exp(x) elementwise: tape.exp", 1, {}, _op_exp),
    "log": Op("log(x) elementwise, x > 0: tape.log", 1, {}, _op_log),
    "sqrt": Op("√x elementwise: tape.sqrt", 1, {}, _op_sqrt),
    "rsqrt": Op("1/√x elementwise: tape.sqrt and tape.div", 1, {}, _op_rsqrt),
    "pow": Op(
        "x ** `exponent`, an integer (products, a quotient) or ±1/2 (tape.sqrt)",
        1,
        {"exponent": REQUIRED},
        _op_pow,
    ),
    "relu": Op("max(x, 0), the sign decided by the arithmetic: tape.relu", 1, {}, _op_relu),
    "gelu": Op(
        "GELU, the erf form: tape.gelu (refused by an exact arithmetic, which names the ball engine)",
        1,
        {},
        _op_gelu,
    ),
    "softmax": Op(
        "softmax over `axis`; masked_fill(-inf) before it: tape.softmax(x, mask=kept)",
        1,
        {"axis": -1},
        _op_softmax,
    ),
    "log_softmax": Op("log-softmax over `axis`: tape.log_softmax", 1, {"axis": -1}, _op_log_softmax),
    "layer_norm": Op(
        "layer norm over the trailing `normalized_shape` with `eps`, inputs x[, weight][, bias] as "
        "`weight`/`bias` say: tape.layer_norm (refused by an exact arithmetic)",
        1,
        {"normalized_shape": REQUIRED, "eps": REQUIRED, "weight": False, "bias": False},
        _op_layer_norm,
    ),
    "sum": Op(
        "the sum over `axis` (an int, a tuple, None: all), `keepdim`: tape.sum",
        1,
        {"axis": None, "keepdim": False},
        _op_sum,
    ),
    "mean": Op(
        "the mean over `axis` (an int, a tuple, None: all), `keepdim`: tape.mean",
        1,
        {"axis": None, "keepdim": False},
        _op_mean,
    ),
    "reshape": Op(
        "the entries in `shape` (ints; one −1, the batch-dependent size): tape.reshape",
        1,
        {"shape": REQUIRED},
        _op_reshape,
    ),
    "permute": Op(
        "axis i of the result is axis `perm[i]` of x: tape.permute", 1, {"perm": REQUIRED}, _op_permute
    ),
    "transpose": Op(
        "axes `dim0` and `dim1` swapped: tape.permute", 1, {"dim0": REQUIRED, "dim1": REQUIRED}, _op_transpose
    ),
    "expand": Op(
        "x broadcast to `shape` (−1: the size kept): tape.add of zeros", 1, {"shape": REQUIRED}, _op_expand
    ),
    "concat": Op("the inputs joined along `axis`: tape.concat", None, {"axis": REQUIRED}, _op_concat),
    "slice": Op(
        "x[start:stop:step] along `axis` (None: the default): tape.gather at those positions",
        1,
        {"axis": REQUIRED, "start": None, "stop": None, "step": None},
        _op_slice,
    ),
    "select": Op(
        "x at `index` along `axis`, the axis dropped: tape.gather and tape.reshape",
        1,
        {"axis": REQUIRED, "index": REQUIRED},
        _op_select,
    ),
    "embedding": Op(
        "rows of the table (input 0) at the constant integer ids (input 1): tape.gather", 2, {}, _op_embedding
    ),
    "gather": Op(
        "x along `axis` at constant integer indices (input 1; take_along_axis, torch.gather): tape.gather",
        2,
        {"axis": REQUIRED},
        _op_gather,
    ),
    "one_hot": Op(
        "the one-hot int64 array (…, `num_classes`) of constant integer ids",
        1,
        {"num_classes": REQUIRED},
        _op_one_hot,
    ),
    "masked_fill": Op(
        "x with `value` where the constant boolean mask (input 1) is True; −inf: left out of the next "
        "softmax (tape.softmax's mask)",
        2,
        {"value": REQUIRED},
        _op_masked_fill,
    ),
    "where": Op(
        "a where the constant boolean condition (input 0) is True, else b (a −inf side: left out of the "
        "next softmax)",
        3,
        {},
        _op_where,
    ),
}


__all__ = ["GUIDE", "OP_TABLE", "REQUIRED", "Node", "Op", "TracedProgram", "unknown_op"]
