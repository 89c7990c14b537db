"""Exact values as a straight-line program: python-flint rationals, or nodes of one hash-consed DAG.

The exact engine's SymPy arithmetic (``_models.EXACT``) rebuilds every sum and product as a SymPy tree: each
operation sorts and flattens its terms (``Add.flatten``) and asks the assumption system whether a factor is
finite or zero, so the cost of one operation grows with the sizes of its operands. A model whose values are
exponentials of its whole state from the first step on (a sequence model from a non-zero start: every
attention score is a new exponential) spends minutes a step there. ``DAG`` is the same exact arithmetic
without the trees: an element is

* an ``fmpq`` (a rational; every operation whose operands are all rational is folded in fmpq arithmetic), or
* a ``Node``: one entry of a process-wide straight-line program, ``+``, ``*``, ``/``, negation, ``exp``,
  ``log`` or ``sqrt`` of earlier entries and rational leaves. Entries are hash-consed (the same operation of
  the same operands is one entry; the operands of ``+`` and ``*`` in a fixed order), and the identities
  0·x = 0, 1·x = x, 0 + x = x, x − x = 0, x/1 = x, x/x = 1, −(−x) = x, exp(0) = 1, log(1) = 0 are applied
  (x the same entry); nothing else is simplified, so every operation costs O(1).

Nothing is rounded: a node *is* the real number its program computes. Signs (a ReLU, an argmax, an accuracy)
are decided by certified evaluation of the program in python-flint's ``arb`` balls at rising precision
(``PRECISIONS``; each node evaluated once per precision, iteratively: programs are thousands of entries
deep), and a sign whose ball still contains 0 at the top precision is undecided (None: the callers' existing
"undecided" path), never guessed. Floats and certified bounds come from the same balls. SymPy expressions
are built only on request (``sympy_value``), and the oracle writer reads the program as its node table
(``rwtoolkit.engines.exact.oracle._nodes``) without SymPy.

>>> x = DAG.exp(DAG.asarray(["1/3"]))[0]
>>> y = (x + 1) * (x + 1) - 2 * x - x * x - 1     # (e^(1/3) + 1)^2 - 2 e^(1/3) - e^(2/3) - 1 = 0, not folded
>>> isinstance(y, Node), DAG.sign(x - fmpq(7, 5)), dag_sign(y)
(True, -1, None)
>>> DAG.to_float(DAG.asarray([x])).tolist(), 0 * x, (x - x), (x / 1) is x
([1.3956124250860895], 0, 0, True)
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from flint import arb, ctx, fmpq

from rwtoolkit.models import BALL_ENGINE, ObjectArithmetic

#: Operations of the program: a rational leaf, and the operations of its entries.
LEAF, ADD, MUL, DIV, NEG, EXP, LOG, SQRT = range(8)
#: The names of the operations (``program_size``, reprs).
OP_NAMES = ("leaf", "+", "*", "/", "neg", "exp", "log", "sqrt")
#: Working precisions (bits) of the certified evaluation, tried in turn by a decision.
PRECISIONS = (128, 512, 2048, 8192)

# The program: entry i is (_OP[i], _A[i], _B[i]) with operands earlier entries (-1: none), or the rational
# _LEAF[i] of a leaf. _KEY hash-conses entries, _NODE holds the one Node object of each entry.
_OP: list[int] = []
_A: list[int] = []
_B: list[int] = []
_LEAF: dict[int, fmpq] = {}
_KEY: dict[tuple, int] = {}
_NODE: list[Node] = []
#: precision -> entry -> its ball (every entry evaluated at most once per precision).
_BALLS: dict[int, dict[int, arb]] = {}


class Node:
    """One entry of the program: a real number built exactly from rationals by + * / neg exp log sqrt.

    Two nodes are equal as objects exactly when they are the same entry (the same expression); equality of
    values is decided by ``dag_sign`` of their difference. Arithmetic with ints, ``fmpq``, ``Fraction`` and
    other nodes gives elements of ``DAG`` (an ``fmpq`` where the result folds to a rational)."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"<dag {OP_NAMES[_OP[self.i]]} #{self.i}>"

    def __hash__(self) -> int:
        return self.i

    def __eq__(self, other: object) -> bool:
        return self is other

    def __add__(self, other: Any) -> Any:
        return dag_add(self, other)

    __radd__ = __add__  # one entry for x + y and y + x (the operands in a fixed order)

    def __mul__(self, other: Any) -> Any:
        return dag_mul(self, other)

    __rmul__ = __mul__

    def __sub__(self, other: Any) -> Any:
        return dag_add(self, dag_neg(other))

    def __rsub__(self, other: Any) -> Any:
        return dag_add(other, dag_neg(self))

    def __truediv__(self, other: Any) -> Any:
        return dag_div(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return dag_div(other, self)

    def __neg__(self) -> Any:
        return dag_neg(self)

    def __pos__(self) -> Node:
        return self

    def __float__(self) -> float:
        return dag_float(self)

    def _sympy_(self) -> sp.Expr:
        return sympy_value(self)


Element = fmpq | Node


def _rational(x: Any) -> fmpq | None:
    """``x`` as an fmpq where it is a rational of a type the arithmetic takes, else None (a node)."""
    kind = type(x)  # the common types first: this runs for every operand
    if kind is Node:
        return None
    if kind is fmpq:
        return x
    if kind is int:
        return fmpq(x)
    if isinstance(x, fmpq):
        return x
    if isinstance(x, (int, np.integer)):
        return fmpq(int(x))
    if isinstance(x, Fraction):
        return fmpq(x.numerator, x.denominator)
    if isinstance(x, Node):
        return None
    raise TypeError(f"the dag arithmetic takes rationals and its nodes, not {type(x).__name__}")


def _entry(op: int, a: int, b: int) -> Node:
    key = (op, a, b)
    i = _KEY.get(key)
    if i is None:
        i = len(_OP)
        _OP.append(op)
        _A.append(a)
        _B.append(b)
        _NODE.append(Node(i))
        _KEY[key] = i
    return _NODE[i]


def _leaf(q: fmpq) -> int:
    key = (LEAF, int(q.p), int(q.q))
    i = _KEY.get(key)
    if i is None:
        i = len(_OP)
        _OP.append(LEAF)
        _A.append(-1)
        _B.append(-1)
        _LEAF[i] = q
        _NODE.append(Node(i))
        _KEY[key] = i
    return i


def _index(x: Any, rational: fmpq | None) -> int:
    """The entry of an operand: a node's own, a rational's leaf."""
    return x.i if rational is None else _leaf(rational)


def dag_add(x: Any, y: Any) -> Element:
    """x + y: folded where both are rational, y where x = 0 (and x where y = 0), 0 for x + (−x)."""
    if type(x) is Node and type(y) is Node:  # the common case: no rational to fold
        a, b = x.i, y.i
        if (_OP[a] == NEG and _A[a] == b) or (_OP[b] == NEG and _A[b] == a):
            return fmpq(0)
        return _entry(ADD, a, b) if a < b else _entry(ADD, b, a)
    p, q = _rational(x), _rational(y)
    if p is not None and q is not None:
        return p + q
    if p is not None and p == 0:
        return y
    if q is not None and q == 0:
        return x
    a, b = _index(x, p), _index(y, q)
    return _entry(ADD, a, b) if a < b else _entry(ADD, b, a)


def dag_mul(x: Any, y: Any) -> Element:
    """x · y: folded where both are rational, 0 where one is 0, the other where one is 1."""
    if type(x) is Node and type(y) is Node:
        a, b = x.i, y.i
        return _entry(MUL, a, b) if a < b else _entry(MUL, b, a)
    p, q = _rational(x), _rational(y)
    if p is not None and q is not None:
        return p * q
    if p is not None:
        if p == 0:
            return p
        if p == 1:
            return y
    if q is not None:
        if q == 0:
            return q
        if q == 1:
            return x
    a, b = _index(x, p), _index(y, q)
    return _entry(MUL, a, b) if a < b else _entry(MUL, b, a)


def dag_div(x: Any, y: Any) -> Element:
    """x / y: folded where both are rational, x where y = 1, 0 where x = 0, 1 where x is y (a softmax over one
    kept entry), x · (1/q) for a rational y = q."""
    p, q = _rational(x), _rational(y)
    if q is not None:
        if q == 0:
            raise ZeroDivisionError("division by an exact 0")
        return p / q if p is not None else dag_mul(x, 1 / q)
    if p is not None and p == 0:
        return p
    if x is y:
        return fmpq(1)
    return _entry(DIV, _index(x, p), y.i)


def dag_neg(x: Any) -> Element:
    """−x: folded for a rational, y for x = −y."""
    p = _rational(x)
    if p is not None:
        return -p
    if _OP[x.i] == NEG:
        return _NODE[_A[x.i]]
    return _entry(NEG, x.i, -1)


def dag_exp(x: Any) -> Element:
    """exp(x): 1 for x = 0, else a node (e^q is irrational for every rational q ≠ 0)."""
    p = _rational(x)
    if p is not None and p == 0:
        return fmpq(1)
    return _entry(EXP, _index(x, p), -1)


def dag_log(x: Any) -> Element:
    """log(x) of an x > 0: 0 for x = 1, else a node (log q is irrational for every rational q ≠ 1)."""
    p = _rational(x)
    if p is not None:
        if p <= 0:
            raise ValueError(f"log of the rational {p} <= 0")
        if p == 1:
            return fmpq(0)
    return _entry(LOG, _index(x, p), -1)


def dag_sqrt(x: Any) -> Element:
    """√x of an x ≥ 0: an fmpq where x is the square of a rational, else a node."""
    p = _rational(x)
    if p is not None:
        if p < 0:
            raise ValueError(f"square root of the rational {p} < 0")
        num, den = int(p.p), int(p.q)
        rn, rd = math.isqrt(num), math.isqrt(den)
        if rn * rn == num and rd * rd == den:
            return fmpq(rn, rd)
    return _entry(SQRT, _index(x, p), -1)


def dag_element(value: Any) -> Element:
    """An element of ``DAG``: an fmpq for a rational (int, Fraction, fmpq, a SymPy or string rational), a node
    as it is; one line for anything else (a symbol: the SymPy arithmetic ``EXACT`` takes it)."""
    if isinstance(value, (fmpq, Node)):
        return value
    if isinstance(value, (int, np.integer)):
        return fmpq(int(value))
    if isinstance(value, Fraction):
        return fmpq(value.numerator, value.denominator)
    expr = sp.sympify(value)
    if not expr.is_Rational:
        raise ValueError(
            f"the dag arithmetic takes rationals, not {value!r} (the SymPy arithmetic EXACT does)"
        )
    return fmpq(int(expr.p), int(expr.q))


# Certified evaluation ------------------------------------------------------------------------------------
def _evaluate(i: int, prec: int) -> arb:
    """The ball of entry i at ``prec`` bits, every entry it reads evaluated once (children first, no recursion)."""
    balls = _BALLS.setdefault(prec, {})
    hit = balls.get(i)
    if hit is not None:
        return hit
    old = ctx.prec
    ctx.prec = prec
    try:
        stack = [i]
        while stack:
            j = stack[-1]
            if j in balls:
                stack.pop()
                continue
            op, a, b = _OP[j], _A[j], _B[j]
            pending = [c for c in (a, b) if c >= 0 and c not in balls]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if op == LEAF:
                balls[j] = arb(_LEAF[j])
            elif op == ADD:
                balls[j] = balls[a] + balls[b]
            elif op == MUL:
                balls[j] = balls[a] * balls[b]
            elif op == DIV:
                balls[j] = balls[a] / balls[b]
            elif op == NEG:
                balls[j] = -balls[a]
            elif op == EXP:
                balls[j] = balls[a].exp()
            elif op == LOG:
                balls[j] = balls[a].log()
            else:
                balls[j] = balls[a].sqrt()
    finally:
        ctx.prec = old
    return balls[i]


def dag_ball(x: Element, prec: int = PRECISIONS[0]) -> arb:
    """A certified ball (``prec`` bits of working precision) containing the exact value of ``x``."""
    if isinstance(x, Node):
        return _evaluate(x.i, prec)
    old = ctx.prec
    ctx.prec = prec
    try:
        return arb(x)
    finally:
        ctx.prec = old


def dag_sign(x: Any) -> int | None:
    """The exact sign of ``x`` (−1, 0, 1): a rational's own, a node's from a ball at rising ``PRECISIONS`` that
    excludes 0; None where the ball at the top precision still contains 0 (undecided, never guessed)."""
    p = _rational(x)
    if p is not None:
        return (p > 0) - (p < 0)
    for prec in PRECISIONS:
        ball = _evaluate(x.i, prec)
        if ball > 0:
            return 1
        if ball < 0:
            return -1
    return None


def dag_float(x: Any) -> float:
    """The double nearest the exact value of ``x``: a rational's, or a node's from a ball whose ends round to one
    double (rising ``PRECISIONS``; at the top precision the double nearest its midpoint). One line where no
    ball is finite (a division by a ball around 0)."""
    p = _rational(x)
    if p is not None:
        return int(p.p) / int(p.q)
    for prec in PRECISIONS:
        ball = _evaluate(x.i, prec)
        if not ball.is_finite():
            continue
        old = ctx.prec
        ctx.prec = prec  # the ends exactly as the ball holds them, then each rounded to the nearest double
        try:
            lo, hi = float(ball.lower()), float(ball.upper())
        finally:
            ctx.prec = old
        if lo == hi:
            return lo
    if ball.is_finite():
        return float(ball.mid())
    raise ValueError(f"no float value of {x!r}: its ball is not finite at {PRECISIONS[-1]} bits")


# The program read back -----------------------------------------------------------------------------------
def dag_parts(x: Node) -> tuple[str, tuple[Element, ...]]:
    """(operation name, operands) of a node; a leaf's operand is its rational."""
    i = x.i
    op = _OP[i]
    if op == LEAF:
        return "leaf", (_LEAF[i],)
    operands = tuple(_NODE[c] if _OP[c] != LEAF else _LEAF[c] for c in (_A[i], _B[i]) if c >= 0)
    return OP_NAMES[op], operands


def dag_entry(i: int) -> tuple[str, int, int, fmpq | None]:
    """Entry i of the program: (operation name, operand entries (-1: none), the rational of a leaf or None)."""
    return OP_NAMES[_OP[i]], _A[i], _B[i], _LEAF.get(i)


def missing_entries(root: Node, known: Container[int]) -> list[int]:
    """The entries ``root`` reads, itself included, that are not in ``known``, children first (a walk that
    stops at every known entry: adding one value to a table costs its new entries only)."""
    if root.i in known:
        return []
    seen = {root.i}
    stack = [root.i]
    while stack:
        j = stack.pop()
        for c in (_A[j], _B[j]):
            if c >= 0 and c not in seen and c not in known:
                seen.add(c)
                stack.append(c)
    return sorted(seen)


def program_size() -> int:
    """Entries of the process's program so far (every node and rational leaf ever built)."""
    return len(_OP)


def ancestors(roots: Iterable[Element]) -> list[int]:
    """The entries the nodes among ``roots`` read, themselves included, in program order (children first)."""
    seen: set[int] = set()
    stack = [r.i for r in roots if isinstance(r, Node)]
    while stack:
        j = stack.pop()
        if j in seen:
            continue
        seen.add(j)
        stack.extend(c for c in (_A[j], _B[j]) if c >= 0 and c not in seen)
    return sorted(seen)


_SYMPY: dict[tuple[int, bool], sp.Expr] = {}
_SYMPY_BUILT: dict[bool, set[int]] = {}


def sympy_value(x: Any, evaluate: bool = False) -> sp.Expr:
    """The SymPy expression of an element (built once per node, children first): rationals as Rationals, each
    exp(a) as the SymPy engine's named atom of a (``_atoms.exp_atom``), log and sqrt as SymPy's. With
    ``evaluate`` SymPy's automatic simplification applies at every node (its canonical sums and products, a log
    over atoms left unevaluated: as the SymPy arithmetic builds them; slow on large programs), else the tree is
    the program's own."""
    from rwtoolkit.engines.exact.arithmetic._atoms import exp_atom, has_atoms

    p = _rational(x)
    if p is not None:
        return sp.Rational(int(p.p), int(p.q))
    built = _SYMPY_BUILT.setdefault(evaluate, set())
    for j in missing_entries(x, built):
        key = (j, evaluate)
        op = _OP[j]
        if op == LEAF:
            q = _LEAF[j]
            out: sp.Expr = sp.Rational(int(q.p), int(q.q))
        else:
            a = _SYMPY[(_A[j], evaluate)]
            if op == ADD:
                out = sp.Add(a, _SYMPY[(_B[j], evaluate)], evaluate=evaluate)
            elif op == MUL:
                out = sp.Mul(a, _SYMPY[(_B[j], evaluate)], evaluate=evaluate)
            elif op == DIV:
                inverse = sp.Pow(_SYMPY[(_B[j], evaluate)], -1, evaluate=evaluate)
                out = sp.Mul(a, inverse, evaluate=evaluate)
            elif op == NEG:
                out = sp.Mul(sp.S.NegativeOne, a, evaluate=evaluate)
            elif op == EXP:
                out = exp_atom(a)
            elif (
                op == LOG
            ):  # as the SymPy arithmetic takes it (``_models.exact_log``): unevaluated over atoms
                out = sp.log(a, evaluate=evaluate and not has_atoms(a))
            else:
                out = sp.sqrt(a) if evaluate else sp.Pow(a, sp.S.Half, evaluate=False)
        hash(out)  # children's hashes are cached: hashing a deep tree later needs no recursion
        _SYMPY[key] = out
        built.add(j)
    return _SYMPY[(x.i, evaluate)]


def _log_element(x: Any) -> Element:
    return dag_log(x)


def dag_log_array(a: np.ndarray) -> np.ndarray:
    """The elementwise natural logarithm of positive elements (the cross-entropy's value; ``exact_log``'s
    counterpart: the arithmetic itself has none, so a forward pass holds no logarithm, as in ``EXACT``)."""
    return DAG.apply(_log_element, a)


#: The exact arithmetic of rationals and program nodes (see the module text); a model runs in it as in
#: ``EXACT`` (the same values, decided the same way), without building SymPy trees.
DAG = ObjectArithmetic(
    "exact", dag_element, exp=dag_exp, sign=dag_sign, to_float=dag_float, sqrt=dag_sqrt, instead=BALL_ENGINE
)
