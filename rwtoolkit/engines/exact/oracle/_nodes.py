"""Exact values as a table of nodes: every distinct subexpression written once, children first.

The exact engine builds its values as SymPy expressions that share subtrees: the denominator
D = 1 + Σ_j e_j of an input's attention enters each S_j, f and gradient term of that input, and every
named exponential atom e = exp(a) (``rwtoolkit.engines.exact.arithmetic._atoms``) stands for an exponent a that is itself
built from the previous step's state. Printed as strings, each shared subtree is repeated wherever it
is used and each atom's exponent is written out in full inside every exp(...), so a file grows with
the length of the expanded expressions (exponentially in the step). A node table writes each distinct
subexpression once and refers to it by its index, so a file grows with the number of distinct values.

A node is one JSON value:

* ``"3/10"``, ``"-7"``: a rational number (a string, numerator/denominator in lowest terms);
* ``["sym", name]``: a real symbol of the task (p, eta, eps, mu, ...);
* ``["+", i, j, ...]``, ``["*", i, j, ...]``, ``["^", base, exponent]``: sum, product, power;
* ``["exp", i]``, ``["log", i]``: exp and log of node i;
* ``["atom", i]``: a named exponential atom of the engine (``rwtoolkit.engines.exact.arithmetic._atoms``), exp of node i:
  each atom is one node, its exponent defined once, at its own index;
* ``["fn", name, i, ...]``: an undefined function (``ell`` and ``dell``, the abstract loss);
* ``["piecewise", e1, c1, e2, c2, ...]``, ``[">", a, b]`` (and ``">="``, ``"<"``, ``"<="``,
  ``"=="``, ``"!="``), ``["and", ...]``, ``["or", ...]``, ``["not", a]``, ``["true"]``,
  ``["false"]``: the indicators of an accuracy whose comparisons are not decided.

Indices point to earlier nodes only, so one pass in order rebuilds every value. The table is the
form the engine holds, so the expression trees read back are the engine's (compare values, not
strings, across arithmetic paths: docs/guide/exact.md#arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.core.relational import Relational
from sympy.functions.elementary.piecewise import ExprCondPair

from rwtoolkit.engines.exact.arithmetic._atoms import definition, exp_atom
from rwtoolkit.engines.exact.arithmetic._dag import Node as DagNode
from rwtoolkit.engines.exact.arithmetic._dag import dag_entry, missing_entries
from rwtoolkit.tasks import symbol

#: A node of the table (see the module docstring).
Node = str | list

_RELATIONS: dict[type, str] = {
    sp.StrictGreaterThan: ">",
    sp.GreaterThan: ">=",
    sp.StrictLessThan: "<",
    sp.LessThan: "<=",
    sp.Equality: "==",
    sp.Unequality: "!=",
}
_RELATION_CLASSES = {op: cls for cls, op in _RELATIONS.items()}


class NodeTable:
    """Interns SymPy expressions as nodes, children before parents; the same subexpression once.

    >>> table = NodeTable()
    >>> x = sp.Rational(1, 3)
    >>> table.add(x + sp.exp(x)), table.nodes
    (2, ['1/3', ['exp', 0], ['+', 0, 1]])
    >>> table.add(2 * sp.exp(x)), table.nodes[3:]
    (4, ['2', ['*', 3, 1]])
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        # the key of each node, for ``truncate``: its expression, or (kind, entry) of a DAG program's entry
        self._exprs: list[sp.Basic | tuple[str, int]] = []
        self._index: dict[sp.Basic, int] = {}
        self._entries: dict[tuple[str, int], int] = {}  # ("n", entry) and ("inv", entry) -> node index
        self._of_entry: dict[int, int] = {}  # DAG entry -> node index
        self._mapped: list[
            tuple[int, int]
        ] = []  # (entry, table length once mapped), in order, for ``truncate``

    def __len__(self) -> int:
        return len(self.nodes)

    def add(self, expr: object) -> int:
        """The index of ``expr``'s node, adding it and every subexpression not yet in the table. A value of
        the exact engine's ``DAG`` arithmetic enters straight from its program (``add_entry``), without SymPy."""
        if isinstance(expr, DagNode):
            return self._add_program(expr)
        expr = sp.sympify(expr)
        hit = self._index.get(expr)
        if hit is not None:
            return hit
        # Iterative post-order walk: late steps nest thousands of levels (no recursion limit to hit).
        stack: list[tuple[sp.Basic, bool]] = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            if node in self._index:
                continue
            children = _children(node)
            if not ready:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(children) if c not in self._index)
                continue
            self._index[node] = len(self.nodes)
            self.nodes.append(_node(node, [self._index[c] for c in children]))
            self._exprs.append(node)
        return self._index[expr]

    def _append(self, key: tuple[str, int], node: Node) -> int:
        index = len(self.nodes)
        self.nodes.append(node)
        self._exprs.append(key)
        self._entries[key] = index
        if key[0] == "n":
            self._map(key[1], index)
        return index

    def _map(self, entry: int, index: int) -> None:
        self._of_entry[entry] = index
        self._mapped.append((entry, len(self.nodes)))

    def _add_program(self, root: DagNode) -> int:
        """The node of a ``DAG`` value: each program entry it reads and the table lacks, children first, as
        a node of this table's forms (x / y as x · y^-1, −x as −1 · x, √x as x^(1/2), exp(x) as the atom of x,
        a leaf as its rational): read back with ``atoms="named"``, the SymPy expression ``DAG``'s
        ``sympy_value`` builds."""
        for j in missing_entries(root, self._of_entry):
            op, a, b, leaf = dag_entry(j)
            if op == "leaf":
                assert leaf is not None
                self._map(j, self.add(sp.Rational(int(leaf.p), int(leaf.q))))
                continue
            ia = self._of_entry[a]
            if op in ("+", "*"):
                node: Node = [op, ia, self._of_entry[b]]
            elif op == "/":
                ib = self._of_entry[b]
                inverse = self._entries.get(("inv", b))
                if inverse is None:
                    inverse = self._append(("inv", b), ["^", ib, self.add(sp.S.NegativeOne)])
                node = ["*", ia, inverse]
            elif op == "neg":
                node = ["*", self.add(sp.S.NegativeOne), ia]
            elif op == "sqrt":
                node = ["^", ia, self.add(sp.S.Half)]
            elif op == "exp":  # the engine's exponential: an atom, as the SymPy arithmetic names it
                node = ["atom", ia]
            else:  # log
                node = [op, ia]
            self._append(("n", j), node)
        return self._of_entry[root.i]

    def add_nested(self, value: object) -> object:
        """``add`` applied to a scalar, a list (nested) or a Matrix (as a list of rows)."""
        if isinstance(value, sp.MatrixBase):
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            return [self.add_nested(v) for v in value]
        return self.add(value)

    def truncate(self, size: int) -> None:
        """Drop every node from index ``size`` on (a scratch extension of the table ends)."""
        for expr in self._exprs[size:]:
            if isinstance(expr, tuple):
                del self._entries[expr]
            else:
                del self._index[expr]
        mapped = self._mapped  # the program's entries mapped since the table was this long (a leaf's rational
        while mapped and mapped[-1][1] > size:  # may be an older node: forgetting it costs one look-up)
            del self._of_entry[mapped.pop()[0]]
        del self._exprs[size:]
        del self.nodes[size:]


def _children(node: sp.Basic) -> Sequence[sp.Basic]:
    exponent = definition(node)
    if exponent is not None:  # a named atom exp(a): its one child is the exponent
        return (exponent,)
    if isinstance(node, sp.Piecewise):
        return [part for pair in node.args for part in pair.args]
    if node is sp.E:
        return (sp.S.One,)
    if node.is_Rational or node.is_Symbol or node in (sp.true, sp.false):
        return ()
    return node.args


def _node(expr: sp.Basic, ids: list[int]) -> Node:
    """The table entry of ``expr`` whose children have indices ``ids``."""
    if definition(expr) is not None:
        return ["atom", ids[0]]
    if isinstance(expr, sp.exp) or expr is sp.E:
        return ["exp", ids[0]]
    if expr.is_Rational:
        return str(expr)
    if expr.is_Symbol:
        if isinstance(expr, sp.Dummy):
            raise ValueError(f"the value holds the placeholder symbol {expr}, which has no name to write")
        return ["sym", expr.name]
    if expr.is_Add:
        return ["+", *ids]
    if expr.is_Mul:
        return ["*", *ids]
    if expr.is_Pow:
        return ["^", *ids]
    if isinstance(expr, sp.log):
        return ["log", *ids]
    if isinstance(expr, AppliedUndef):
        return ["fn", type(expr).__name__, *ids]
    if isinstance(expr, sp.Piecewise):
        return ["piecewise", *ids]
    if isinstance(expr, Relational) and type(expr) in _RELATIONS:
        return [_RELATIONS[type(expr)], *ids]
    if isinstance(expr, sp.And):
        return ["and", *ids]
    if isinstance(expr, sp.Or):
        return ["or", *ids]
    if isinstance(expr, sp.Not):
        return ["not", *ids]
    if expr is sp.true:
        return ["true"]
    if expr is sp.false:
        return ["false"]
    raise ValueError(f"an exact value of type {type(expr).__name__} has no node form: {expr}")


def decode_nodes(nodes: Sequence[Node], atoms: str = "exp") -> list[sp.Basic]:
    """Every node of a table as a SymPy object, in order (shared subexpressions stay shared).

    ``atoms="exp"`` gives plain SymPy (``exp(a)`` for every exponential); ``atoms="named"`` gives the
    exact engine's named atoms for the ``atom`` nodes (``rwtoolkit.engines.exact.arithmetic._atoms.exp_atom``: the same objects
    the engine computes with in this process).
    Trees are rebuilt as written, without SymPy's re-evaluation (same values). A node that is not one
    of the forms above, or that refers to anything but an earlier node, raises ``ValueError`` naming it.

    >>> decode_nodes(['1/3', ['exp', 0], ['+', 0, 1]])[-1]
    1/3 + exp(1/3)
    """
    if atoms not in ("exp", "named"):
        raise ValueError(f"atoms={atoms!r} must be 'exp' or 'named'")

    def plain_exp(a: sp.Basic) -> sp.Basic:
        return sp.exp(a, evaluate=False)

    make_atom: Callable[[sp.Basic], sp.Basic] = exp_atom if atoms == "named" else plain_exp
    out: list[sp.Basic] = []
    for index, node in enumerate(nodes):
        try:
            out.append(_decode(node, out, make_atom, plain_exp))
        except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise ValueError(f"node {index} ({node!r}) is not a valid node: {err}") from None
    return out


def _decode(
    node: Node,
    done: list[sp.Basic],
    make_atom: Callable[[sp.Basic], sp.Basic],
    make_exp: Callable[[sp.Basic], sp.Basic],
) -> sp.Basic:
    if isinstance(node, str):
        return sp.Rational(node)
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise ValueError("expected a rational string or a list [kind, ...]")
    op, *rest = node
    if op == "sym":
        if len(rest) != 1 or not isinstance(rest[0], str):
            raise ValueError("a symbol is ['sym', name]")
        return symbol(rest[0])
    if op == "fn":
        if not rest or not isinstance(rest[0], str):
            raise ValueError("a function is ['fn', name, argument, ...]")
        return sp.Function(rest[0])(*(_earlier(done, i) for i in rest[1:]))
    args = [_earlier(done, i) for i in rest]
    if op == "+":
        return sp.Add._from_args(args)
    if op == "*":
        return sp.Mul._from_args(args)
    if op == "^":
        return sp.Pow(*args, evaluate=False)
    if op == "atom":
        return make_atom(args[0])
    if op == "exp":
        return make_exp(args[0])
    if op == "log":
        return sp.log(args[0], evaluate=False)
    if op == "piecewise":
        pairs = [sp.Basic.__new__(ExprCondPair, e, c) for e, c in zip(args[::2], args[1::2])]
        return sp.Basic.__new__(sp.Piecewise, *pairs)
    if op in _RELATION_CLASSES:
        return _RELATION_CLASSES[op](*args, evaluate=False)
    if op in ("and", "or"):
        return sp.Basic.__new__(sp.And if op == "and" else sp.Or, *args)
    if op == "not":
        return sp.Basic.__new__(sp.Not, args[0])
    if op == "true":
        return sp.true
    if op == "false":
        return sp.false
    raise ValueError(f"unknown node kind {op!r}")


def _earlier(done: list[sp.Basic], index: object) -> sp.Basic:
    """The decoded node ``index``, which must come before the node being decoded."""
    if type(index) is not int or not 0 <= index < len(done):
        raise ValueError(f"refers to {index!r}, not an earlier node (0..{len(done) - 1})")
    return done[index]


def nested_map(value: object, fn: Callable[[int], object]) -> object:
    """``fn`` applied to every index of a nested list of node indices (the layout of a value).

    >>> nested_map([[0, 1], [2, 3]], lambda i: i * 10)
    [[0, 10], [20, 30]]
    """
    if isinstance(value, list):
        return [nested_map(v, fn) for v in value]
    return fn(value)  # type: ignore[arg-type]
