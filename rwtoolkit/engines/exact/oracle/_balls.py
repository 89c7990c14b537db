"""Certified doubles of a node table: each node evaluated once in ball arithmetic (python-flint's arb).

A value written with its double d also gets a bound e with |d - x| <= e for its exact value x: the
node is enclosed in a ball [m ± r] at a working precision, d is the double nearest m, and
e = |d - m| + r rounded up to a double. Every node is evaluated once, children first, so the cost is
linear in the size of the table. The precision starts at 128 bits and doubles (up to 4096) until
every requested ball is relatively narrower than 2^-60 or contains only one double's neighbourhood
of 0; a bound that is still wider at 4096 bits is written as it is (still certified). A node whose
value is not a number (a symbol, the abstract loss, a Piecewise whose condition no ball decides) has
no double: None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from flint import arb, ctx, fmpq

from rwtoolkit.engines.exact.oracle._nodes import Node

START_BITS = 128
MAX_BITS = 4096
#: A ball is narrow enough when its radius is below 2^-60 of its midpoint (beyond double precision).
_RELATIVE = arb(2) ** -60
#: ... or below this absolute size (values that are exactly 0 as expressions, such as differences).
_ABSOLUTE = arb(2) ** -1074


class BallTable:
    """Ball enclosures of the nodes of a table, computed in order and extended as the table grows.

    >>> from rwtoolkit.engines.exact.oracle._nodes import NodeTable
    >>> import sympy as sp
    >>> table = NodeTable()
    >>> i = table.add(sp.exp(sp.Rational(1, 3)) - sp.Rational(1, 3))
    >>> d, e = BallTable(table.nodes).doubles([i])[0]
    >>> d, e < 1e-16
    (1.0622790917527563, True)
    """

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = nodes
        self.bits = START_BITS
        self._balls: list[arb | None | bool] = []

    def _extend(self) -> None:
        old = ctx.prec
        ctx.prec = self.bits
        try:
            balls = self._balls
            for index in range(len(balls), len(self.nodes)):
                balls.append(_evaluate(self.nodes[index], balls))
        finally:
            ctx.prec = old

    def truncate(self, size: int) -> None:
        """Forget the balls from index ``size`` on (the table was truncated)."""
        del self._balls[size:]

    def doubles(self, ids: Iterable[int]) -> list[tuple[float, float] | None]:
        """(d, e) per node id: the double nearest the ball's midpoint and a certified bound |d - x| <= e."""
        ids = list(ids)
        while True:
            self._extend()
            balls = [self._balls[i] for i in ids]
            if self.bits >= MAX_BITS or all(_narrow(b) for b in balls if isinstance(b, arb)):
                break
            self.bits *= 2
            self._balls = []
        return [_double(b) if isinstance(b, arb) else None for b in balls]


def _narrow(ball: arb) -> bool:
    if not ball.is_finite():
        return False
    rad = ball.rad()
    return bool(rad <= _ABSOLUTE or rad <= _RELATIVE * abs(ball.mid()))


def _double(ball: arb) -> tuple[float, float] | None:
    """The double nearest the midpoint and an upper bound of its distance to every point of the ball."""
    if not ball.is_finite():
        return None
    d = float(ball.mid())
    if not math.isfinite(d):
        return None
    bound = (arb(d) - ball).abs_upper()
    e = float(bound)
    while arb(e) < bound:  # float() rounds to nearest: step up until the double is an upper bound
        e = math.nextafter(e, math.inf)
    return d, e


def _evaluate(node: Node, balls: list) -> arb | None | bool:
    """The ball of one node (None: not a number; True/False: a decided condition)."""
    if isinstance(node, str):
        return arb(fmpq(*map(int, node.split("/")))) if "/" in node else arb(int(node))
    op = node[0]
    if op in ("sym", "fn"):
        return None
    args = [balls[i] for i in node[1:]]
    if op in ("true", "false"):
        return op == "true"
    if op in ("and", "or", "not"):
        if any(a is None for a in args):
            return None
        if op == "not":
            return not args[0]
        return all(args) if op == "and" else any(args)
    if op == "piecewise":
        for value, cond in zip(args[::2], args[1::2]):
            if cond is None:
                return None
            if cond:
                return value
        return None
    if any(not isinstance(a, arb) for a in args):
        return None
    if op == "+":
        total = args[0]
        for a in args[1:]:
            total = total + a
        return total
    if op == "*":
        prod = args[0]
        for a in args[1:]:
            prod = prod * a
        return prod
    if op == "^":
        base, exponent = args
        if exponent.is_exact() and exponent.is_integer():
            return base ** int(exponent.unique_fmpz())
        return base**exponent if base > 0 else None
    if op in ("exp", "atom"):
        return args[0].exp()
    if op == "log":
        return args[0].log() if args[0] > 0 else None
    if op in (">", ">=", "<", "<=", "==", "!="):
        diff = args[0] - args[1]
        positive, negative, zero = diff > 0, diff < 0, diff.is_exact() and diff.is_zero()
        if op == ">":
            return True if positive else (False if negative or zero else None)
        if op == ">=":
            return True if positive or zero else (False if negative else None)
        if op == "<":
            return True if negative else (False if positive or zero else None)
        if op == "<=":
            return True if negative or zero else (False if positive else None)
        if op == "==":
            return True if zero else (False if positive or negative else None)
        return False if zero else (True if positive or negative else None)
    raise ValueError(f"unknown node kind {op!r}")
