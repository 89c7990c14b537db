"""Random walks on finite graphs (docs/theory.md#signal: "the same question for any finite task").

A walk task: s_1 drawn from a start law (uniform unless given), s_{i+1} ~ row s_i of a transition
matrix P; tokens s_1..s_{N-1}, label y = s_N, exactly as for circle walks (docs/theory.md#task). The exact
population enumerates every path of positive probability, so it is a ``FiniteTask``.
Graphs come from a directed edge list with probabilities, from shorthands that give the walk's
neighbours (undirected edges, adjacency lists, or a common graph by name, each step going to a
uniform or weight-proportional neighbour), a lazy circle, or the Cayley graph of a small group.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

import sympy as sp

from rwtoolkit.tasks._circle import check_int, circle_transition_matrix
from rwtoolkit.tasks._exact import check_in_unit_interval, check_symbol_names, exact, is_numeric, symbol
from rwtoolkit.tasks._finite import FiniteTask

#: Largest number of inputs a catalogue family enumerates into a FiniteTask (one SymPy probability
#: per input; beyond this the exact population takes minutes to build and to take expectations over).
MAX_FINITE_INPUTS = 2**15
#: Most nodes a graph family builds (the exact transition matrix has K² SymPy entries, and every
#: exact check downstream works with K×K matrices).
MAX_GRAPH_NODES = 256
#: Longest sequence (N) a catalogue task has: every exact engine keeps per-input arrays over the N positions.
MAX_SEQUENCE_LENGTH = 4096
#: Largest integer exponent an arithmetic expression of ``exact_expr`` may raise a number to, and most bits
#: of the power (the result is computed exactly: 2^2^2^2^2^2 has 2^65536 bits).
MAX_POWER_EXPONENT, MAX_POWER_BITS = 10_000, 100_000


def power_above(base: int, exponent: int, limit: int) -> bool:
    """Whether base^exponent > limit (base >= 2), decided without computing a power larger than needed:
    base^exponent >= 2^exponent, so an exponent beyond the bit length of ``limit`` is too large outright.

    >>> power_above(2, 15, 2**15), power_above(2, 16, 2**15), power_above(3, 10**10, 2**15)
    (False, True, True)
    """
    if exponent > limit.bit_length():
        return True
    return base**exponent > limit


def check_length(value: int, name: str = "N", tokens: int | None = None) -> int:
    """``value`` (already an integer; sequences of ``tokens`` tokens, default ``value``) within
    ``MAX_SEQUENCE_LENGTH``, else a one-line ValueError naming ``name``."""
    if (value if tokens is None else tokens) > MAX_SEQUENCE_LENGTH:
        raise ValueError(
            f"{name}={value} is out of range: a catalogue task has sequences of at most "
            f"{MAX_SEQUENCE_LENGTH} tokens"
        )
    return value


_EXPR_CHARS = re.compile(r"^[0-9A-Za-z_+\-*/^(). ]+$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\s*\.|\.\s*[A-Za-z_]")  # a dot may only sit inside a number


def exact_expr(value: object, name: str) -> sp.Expr:
    """An exact probability: a number as in ``rwtoolkit.tasks.exact``, or an arithmetic expression in real
    symbols such as ``"1-p"`` or ``"(1-q)*p/2"`` (only + - * / ^ and parentheses are allowed).

    >>> exact_expr("(1-q)*p", "prob"), exact_expr("0.3", "prob")
    (p*(1 - q), 3/10)
    """
    if not isinstance(value, str):
        return exact(value, name)
    text = value.strip()
    try:
        return exact(text, name)
    except ValueError:
        pass
    if not _EXPR_CHARS.match(text) or "__" in text or _ATTRIBUTE.search(text):
        raise ValueError(
            f"{name}={value!r} is not a number or an arithmetic expression in symbols "
            "(allowed: digits, names, + - * / ^ and parentheses)"
        )
    from sympy.parsing.sympy_parser import (
        convert_xor,
        parse_expr,
        rationalize,
        standard_transformations,
    )

    # Every identifier is bound to a real toolkit symbol, so the parser never reaches SymPy's
    # namespace (no functions, no constants): the result is a rational function of symbols.
    check_symbol_names(_IDENT.findall(text), name, value)
    local = {ident: symbol(ident) for ident in _IDENT.findall(text)}
    names = {"Integer": sp.Integer, "Float": sp.Float, "Rational": sp.Rational, "Symbol": sp.Symbol}
    transformations = standard_transformations + (convert_xor, rationalize)
    try:
        # first unevaluated, so that every power is sized before SymPy computes it (2^2^2^2^2^2)
        tree = parse_expr(
            text,
            local_dict=local,
            global_dict={**names, "Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow},
            transformations=transformations,
            evaluate=False,
        )
    except Exception:  # SymPy raises SyntaxError, TokenError, TypeError... for malformed text
        raise ValueError(f"{name}={value!r} is not a well-formed arithmetic expression") from None
    _check_powers(tree, name, value)
    try:
        expr = parse_expr(text, local_dict=local, global_dict=names, transformations=transformations)
    except Exception:
        raise ValueError(f"{name}={value!r} is not a well-formed arithmetic expression") from None
    if not isinstance(expr, sp.Expr) or expr.has(sp.Float):
        raise ValueError(f"{name}={value!r} is not an exact arithmetic expression")
    if expr.has(sp.zoo, sp.oo, sp.nan):  # 1/0, 0/0
        raise ValueError(f"{name}={value!r} divides by zero: give a finite number or expression")
    return expr


def _check_powers(tree: sp.Basic, name: str, value: object) -> None:
    """Refuse a power whose exponent exceeds ``MAX_POWER_EXPONENT`` or whose value would have more than
    ``MAX_POWER_BITS`` bits, innermost first (each base and exponent is then already known to be small)."""
    for node in sp.postorder_traversal(tree):
        if not isinstance(node, sp.Pow) or not node.exp.is_number:
            continue
        exponent = node.exp.doit()
        if not isinstance(exponent, sp.Rational):
            continue
        top = abs(int(exponent.p))
        base = node.base.doit() if node.base.is_number else None
        bits = None
        if isinstance(base, sp.Rational):
            bits = max(int(base.p).bit_length(), int(base.q).bit_length()) * top // int(exponent.q)
        if top > MAX_POWER_EXPONENT or (bits is not None and bits > MAX_POWER_BITS):
            raise ValueError(
                f"{name}={value!r} raises to the power {exponent}: above the limit of exponents up to "
                f"{MAX_POWER_EXPONENT} and powers of {MAX_POWER_BITS} bits"
            )


def _check_probability(value: sp.Expr, name: str) -> None:
    if is_numeric(value):
        check_in_unit_interval(value, name)


def walk_task(
    transition: sp.Matrix,
    N: int,
    names: Sequence[str] | None = None,
    start: Sequence[object] | None = None,
    name: str = "walk",
    limit: int = MAX_FINITE_INPUTS,
) -> FiniteTask:
    """The exact walk task of a K×K transition matrix P (row = current state), as a FiniteTask.

    Inputs are all paths s_1..s_N of positive probability start[s_1]·Π P[s_i, s_{i+1}]; tokens are
    s_1..s_{N-1} and the label is s_N (docs/theory.md#task with Π replaced by P). ``start`` defaults to uniform.

    >>> t = walk_task(sp.Matrix([[0, 1], [1, 0]]), 3)
    >>> t.tokens.tolist(), t.labels.tolist(), t.prob_values
    ([[0, 1], [1, 0]], [0, 1], (1/2, 1/2))
    """
    N = check_length(check_int(N, "N", 2))
    P = sp.Matrix(transition)
    K = P.rows
    if P.cols != K or K < 1:
        raise ValueError(f"transition matrix must be square, got {P.rows}x{P.cols}")
    label = (lambda i: names[i]) if names is not None else str
    for i in range(K):
        for j in range(K):
            _check_probability(P[i, j], f"transition[{label(i)} -> {label(j)}]")
        row = sp.simplify(sum(P.row(i)) - 1)
        if row != 0:
            raise ValueError(
                f"transition probabilities out of node {label(i)!r} sum to {sp.simplify(row + 1)}, not 1"
            )
    if start is None:
        start_p = [sp.Rational(1, K)] * K
    else:
        if len(start) != K:
            raise ValueError(f"start has {len(start)} entries, the graph has {K} nodes")
        start_p = [exact_expr(q, f"start[{i}]") for i, q in enumerate(start)]
        for i, q in enumerate(start_p):
            _check_probability(q, f"start[{label(i)}]")
        if sp.simplify(sp.Add(*start_p) - 1) != 0:
            raise ValueError(f"start probabilities sum to {sp.simplify(sp.Add(*start_p))}, not 1")

    def nonzero(value: sp.Expr) -> bool:
        return not (is_numeric(value) and value == 0)

    successors = [[j for j in range(K) if nonzero(P[i, j])] for i in range(K)]
    paths: list[tuple[list[int], sp.Expr]] = [([i], start_p[i]) for i in range(K) if nonzero(start_p[i])]
    for _ in range(N - 1):
        # Count before building, so a too-large request fails fast with the size it would need.
        count = sum(len(successors[path[-1]]) for path, _ in paths)
        if count > limit:
            raise ValueError(
                f"the walk task {name!r} with N={N} has at least {count} paths of positive "
                f"probability, above the limit of {limit} for exact enumeration; use a smaller N "
                "or fewer edges"
            )
        paths = [(path + [j], prob * P[path[-1], j]) for path, prob in paths for j in successors[path[-1]]]
    sequences = [path[:-1] for path, _ in paths]
    labels = [path[-1] for path, _ in paths]
    probs = [sp.expand(prob) for _, prob in paths]
    return FiniteTask(sequences, labels, probs, K=K, vocab=names, name=name)


def _node_names(nodes: int | Sequence[str]) -> list[str]:
    if isinstance(nodes, (list, tuple)):
        if len(nodes) > MAX_GRAPH_NODES:
            raise ValueError(f"nodes has {len(nodes)} names, above the limit of {MAX_GRAPH_NODES} nodes")
        names = [str(n) for n in nodes]
        if len(set(names)) != len(names):
            raise ValueError("nodes has repeated names")
        if not names:
            raise ValueError("nodes is empty: a graph needs at least one node")
        return names
    count = check_int(nodes, "nodes", 1)
    if count > MAX_GRAPH_NODES:
        raise ValueError(f"nodes={count} is out of range: a graph has at most {MAX_GRAPH_NODES} nodes")
    return [str(i) for i in range(count)]


def _lazy(P: sp.Matrix, laziness: object) -> sp.Matrix:
    """q·I + (1-q)·P: stay put with probability q, else move as P does."""
    q = exact_expr(laziness, "laziness")
    _check_probability(q, "laziness")
    if is_numeric(q) and q == 0:
        return P
    return (q * sp.eye(P.rows) + (1 - q) * P).applyfunc(sp.expand)


def _node(index: dict[str, int], names: list[str], end: object, where: str) -> int:
    """The id of node ``end`` (given by name or id), or a ValueError naming ``where``."""
    key = str(end) if not isinstance(end, bool) else None
    if key not in index:
        raise ValueError(f"{where}: node {end!r} is not one of the nodes {names}")
    return index[key]


def graph_walk(
    nodes: int | Sequence[str],
    edges: Sequence[Sequence[object]],
    N: int,
    laziness: object = 0,
    start: Sequence[object] | None = None,
) -> FiniteTask:
    """Walks on a directed graph given by ``edges`` = [(from, to, probability), ...].

    Nodes are ids 0..nodes-1 or the given names; the probabilities out of each node must sum to 1
    exactly. ``laziness`` q turns P into q·I + (1-q)·P.

    >>> t = graph_walk(3, [(0, 1, 1), (1, 2, "p"), (1, 0, "1-p"), (2, 0, 1)], N=3)
    >>> t.K, t.N, len(t.labels)
    (3, 3, 5)
    """
    names = _node_names(nodes)
    index = {n: i for i, n in enumerate(names)}
    K = len(names)
    P = sp.zeros(K, K)
    seen: set[tuple[int, ...]] = set()
    for e, edge in enumerate(edges):
        if not isinstance(edge, (list, tuple)) or len(edge) != 3:
            raise ValueError(f"edges[{e}]={edge!r} must be [from, to, probability]")
        ends = [_node(index, names, end, f"edges[{e}]") for end in edge[:2]]
        if tuple(ends) in seen:
            raise ValueError(f"edges[{e}]: edge {edge[0]!r} -> {edge[1]!r} is listed twice")
        seen.add(tuple(ends))
        prob = exact_expr(edge[2], f"edges[{e}] probability")
        _check_probability(prob, f"edges[{e}] probability")
        P[ends[0], ends[1]] = prob
    return walk_task(_lazy(P, laziness), N, names=names, start=start, name="graph")


def _neighbour_walk(
    names: list[str], weights: list[dict[int, sp.Expr]], N: int, laziness: object, start: object, name: str
) -> FiniteTask:
    """The walk that leaves node i for neighbour j with probability weights[i][j] / Σ_k weights[i][k]."""
    if len(names) > MAX_GRAPH_NODES:
        raise ValueError(f"the graph has {len(names)} nodes, above the limit of {MAX_GRAPH_NODES}")
    K = len(names)
    P = sp.zeros(K, K)
    for i, row in enumerate(weights):
        if not row:
            raise ValueError(f"node {names[i]!r} has no neighbours: a walk could not leave it")
        total = sp.Add(*row.values())
        for j, w in row.items():
            P[i, j] = sp.cancel(w / total)
    return walk_task(_lazy(P, laziness), N, names=names, start=start, name=name)  # type: ignore[arg-type]


def _weight(value: object, where: str) -> sp.Expr:
    """An exact number > 0 (symbolic weights would make the probabilities rational functions; the
    ``graph`` family's [from, to, probability] edges take symbolic probabilities)."""
    w = exact_expr(value, where)
    if not is_numeric(w):
        raise ValueError(
            f"{where}={value!r} must be a number > 0 (symbolic probabilities: use [from, to, probability] edges)"
        )
    if not w > 0:
        raise ValueError(f"{where}={w} is out of range: a weight must be > 0")
    return w


def undirected_graph_walk(
    nodes: int | Sequence[str],
    edges: Sequence[Sequence[object]],
    N: int,
    laziness: object = 0,
    start: Sequence[object] | None = None,
) -> FiniteTask:
    """The simple random walk on an undirected graph: ``edges`` = [(a, b), ...] or [(a, b, weight), ...].

    Each edge joins a and b both ways; a step goes to a neighbour chosen uniformly, or with
    probability weight / (total weight at the node) when weights (numbers > 0) are given; the
    probabilities are exact rationals.
    ``laziness`` q turns P into q·I + (1-q)·P.

    >>> t = undirected_graph_walk(["a", "b", "c"], [("a", "b"), ("b", "c")], N=2)
    >>> t.vocab, t.prob_values
    (('a', 'b', 'c'), (1/3, 1/6, 1/6, 1/3))
    """
    names = _node_names(nodes)
    return _neighbour_walk(names, _undirected_weights(names, edges), N, laziness, start, "undirected_graph")


def _undirected_weights(names: list[str], edges: Sequence[Sequence[object]]) -> list[dict[int, sp.Expr]]:
    """Each node's neighbours with their weights (1 when not given); an edge counts both ways."""
    index = {n: i for i, n in enumerate(names)}
    weights: list[dict[int, sp.Expr]] = [{} for _ in names]
    for e, edge in enumerate(edges):
        if not isinstance(edge, (list, tuple)) or len(edge) not in (2, 3):
            raise ValueError(f"edges[{e}]={edge!r} must be [a, b] or [a, b, weight]")
        a, b = (_node(index, names, end, f"edges[{e}]") for end in edge[:2])
        if a == b:
            raise ValueError(f"edges[{e}]: {edge[0]!r} joins a node to itself; use laziness to stay put")
        if b in weights[a]:
            raise ValueError(f"edges[{e}]: the edge {edge[0]!r} - {edge[1]!r} is listed twice")
        w = _weight(edge[2], f"edges[{e}] weight") if len(edge) == 3 else sp.Integer(1)
        weights[a][b] = weights[b][a] = w
    return weights


def adjacency_walk(
    adjacency: Mapping[str, Sequence[str] | Mapping[str, object]],
    N: int,
    laziness: object = 0,
    start: Sequence[object] | None = None,
) -> FiniteTask:
    """The walk given by neighbour lists: ``adjacency[node]`` is a list of neighbours (each step goes to
    one chosen uniformly) or a mapping {neighbour: weight} (chosen with probability weight / total).

    Nodes are the keys, in order. The lists are out-neighbours: list each node in the other's list
    for an undirected graph. ``laziness`` q turns P into q·I + (1-q)·P.

    >>> t = adjacency_walk({"a": ["b", "c"], "b": ["a"], "c": {"a": 1, "b": 3}}, N=2)
    >>> t.vocab, t.prob_values
    (('a', 'b', 'c'), (1/6, 1/6, 1/3, 1/12, 1/4))
    """
    if not isinstance(adjacency, Mapping) or not adjacency:
        raise ValueError("adjacency must be a non-empty mapping {node: [neighbours] or {neighbour: weight}}")
    if len(adjacency) > MAX_GRAPH_NODES:
        raise ValueError(f"adjacency has {len(adjacency)} nodes, above the limit of {MAX_GRAPH_NODES}")
    names = _node_names([str(n) for n in adjacency])
    index = {n: i for i, n in enumerate(names)}
    weights: list[dict[int, sp.Expr]] = []
    for node, neighbours in adjacency.items():
        where = f"adjacency[{str(node)!r}]"
        if isinstance(neighbours, Mapping):
            items = [(j, _weight(w, f"{where}[{j!r}]")) for j, w in neighbours.items()]
        elif isinstance(neighbours, (list, tuple)):
            items = [(j, sp.Integer(1)) for j in neighbours]
        else:
            raise ValueError(
                f"{where}={neighbours!r} must be a list of neighbours or a mapping {{neighbour: weight}}"
            )
        row: dict[int, sp.Expr] = {}
        for j, w in items:
            k = _node(index, names, j, where)
            if k in row:
                raise ValueError(f"{where}: neighbour {j!r} is listed twice")
            row[k] = w
        weights.append(row)
    return _neighbour_walk(names, weights, N, laziness, start, "adjacency_graph")


def _cycle(n: int) -> tuple[list[str], list[tuple[int, int]]]:
    return [str(i) for i in range(n)], [(i, (i + 1) % n) for i in range(n)]


def _complete(n: int) -> tuple[list[str], list[tuple[int, int]]]:
    return [str(i) for i in range(n)], list(itertools.combinations(range(n), 2))


def _complete_bipartite(a: int, b: int) -> tuple[list[str], list[tuple[int, int]]]:
    names = [f"a{i}" for i in range(a)] + [f"b{j}" for j in range(b)]
    return names, [(i, a + j) for i in range(a) for j in range(b)]


def _hypercube(d: int) -> tuple[list[str], list[tuple[int, int]]]:
    names = [format(v, f"0{d}b") for v in range(2**d)]
    return names, [(v, v ^ (1 << k)) for v in range(2**d) for k in range(d) if v < v ^ (1 << k)]


def _grid(rows: int, cols: int) -> tuple[list[str], list[tuple[int, int]]]:
    names = [f"{r},{c}" for r in range(rows) for c in range(cols)]
    right = [(r * cols + c, r * cols + c + 1) for r in range(rows) for c in range(cols - 1)]
    down = [(r * cols + c, (r + 1) * cols + c) for r in range(rows - 1) for c in range(cols)]
    return names, right + down


#: name -> (builder of (node names, undirected edges), the size parameters, the least value of each)
NAMED_GRAPHS: dict[str, tuple[object, tuple[str, ...], tuple[int, ...]]] = {
    "cycle": (_cycle, ("n",), (3,)),
    "complete": (_complete, ("n",), (2,)),
    "complete_bipartite": (_complete_bipartite, ("a", "b"), (1, 1)),
    "hypercube": (_hypercube, ("d",), (1,)),
    "grid": (_grid, ("rows", "cols"), (1, 1)),
}


def named_graph_walk(
    graph: str,
    size: int | Sequence[int],
    N: int,
    laziness: object = 0,
    start: Sequence[object] | None = None,
) -> FiniteTask:
    """The simple random walk (uniform neighbour) on a common graph, made lazy by ``laziness`` q.

    ``graph`` and ``size``: "cycle" n (nodes "0".."n-1"), "complete" n (K_n), "complete_bipartite"
    [a, b] (nodes a0.., b0..), "hypercube" d (bit strings "000".."111" joined when they differ in
    one bit), "grid" [rows, cols] (nodes "r,c", 4-neighbour, no wrap-around).

    >>> t = named_graph_walk("hypercube", 2, N=2, laziness="1/2")
    >>> t.vocab, t.prob_values[:3]
    (('00', '01', '10', '11'), (1/8, 1/16, 1/16))
    """
    if graph not in NAMED_GRAPHS:
        raise ValueError(f"graph={graph!r} is not one of {sorted(NAMED_GRAPHS)}")
    build, params, lows = NAMED_GRAPHS[graph]
    sizes = list(size) if isinstance(size, (list, tuple)) else [size]
    if len(sizes) != len(params):
        raise ValueError(
            f"size={size!r}: the {graph} graph takes {len(params)} size(s), [{', '.join(params)}]"
        )
    sizes = [check_int(v, f"size ({p})", low) for v, p, low in zip(sizes, params, lows)]
    if graph == "hypercube":  # 2^d nodes, d compared first: d may be 10^10
        count = 2 ** sizes[0] if sizes[0] <= 64 else None
    else:
        count = sizes[0] * sizes[1] if graph == "grid" else sum(sizes)
    if count is None or count > MAX_GRAPH_NODES:
        raise ValueError(
            f"size={size!r}: the {graph} graph has {count or f'2^{sizes[0]}'} nodes, above the limit of "
            f"{MAX_GRAPH_NODES}"
        )
    names, pairs = build(*sizes)  # type: ignore[operator]
    if len(names) < 2:
        raise ValueError(f"size={size!r}: the {graph} graph needs at least 2 nodes")
    weights = _undirected_weights(names, [(names[a], names[b]) for a, b in pairs])
    return _neighbour_walk(names, weights, N, laziness, start, graph)


def lazy_circle_walk(K: int, N: int, p: object, q: object) -> FiniteTask:
    """The circle walk of docs/theory.md#task made lazy: stay w.p. q, else +1 w.p. p and -1 w.p. 1-p.

    >>> lazy_circle_walk(3, 3, "1/2", "1/3").prob_values[0]
    1/27
    """
    K = check_int(K, "K", 3)
    if K > MAX_GRAPH_NODES:
        raise ValueError(f"K={K} is out of range: the lazy circle has at most {MAX_GRAPH_NODES} nodes")
    check_length(check_int(N, "N", 2))
    p = exact_expr(p, "p")
    _check_probability(p, "p")
    task = walk_task(_lazy(circle_transition_matrix(K, p), q), N, name="lazy_circle")
    return task


# ----------------------------------------------------------------------------------------------
# Cayley graphs of small groups: nodes are group elements, a step multiplies on the right by a
# generator drawn with its probability (g -> g·s).


class _Group:
    """A finite group given by its element names and a multiplication table (ids into ``names``)."""

    def __init__(self, names: list[str], mul: list[list[int]], parse: object) -> None:
        self.names, self.mul, self._parse = names, mul, parse

    def element(self, text: object, where: str) -> int:
        value = self._parse(str(text).replace(" ", ""))  # type: ignore[operator]
        if value is None:
            raise ValueError(f"{where}: {text!r} is not an element of this group (elements: {self.names})")
        return value


def _cyclic(n: int) -> _Group:
    names = [str(k) for k in range(n)]

    def parse(text: str) -> int | None:
        return int(text) % n if re.fullmatch(r"[+-]?\d+", text) else None

    return _Group(names, [[(a + b) % n for b in range(n)] for a in range(n)], parse)


def _dihedral(n: int) -> _Group:
    # Element r^k s^f has id k + n·f; (r^a s^f)(r^b s^g) = r^(a + (-1)^f b) s^(f+g).
    def name(k: int, f: int) -> str:
        rot = "" if k == 0 else ("r" if k == 1 else f"r^{k}")
        text = rot + ("s" if f else "")
        return text or "e"

    names = [name(k, f) for f in (0, 1) for k in range(n)]
    mul = [
        [((a % n + (-1) ** f * (b % n)) % n) + n * ((f + g) % 2) for g in (0, 1) for b in range(n)]
        for f in (0, 1)
        for a in range(n)
    ]

    def parse(text: str) -> int | None:
        match = re.fullmatch(r"(e|r(?:\^([+-]?\d+))?)?(s)?", text)
        if not match or not text:
            return None
        k = 0 if match.group(1) in (None, "e") else int(match.group(2) or 1)
        return k % n + n * (1 if match.group(3) else 0)

    return _Group(names, mul, parse)


def _symmetric(n: int) -> _Group:
    # Permutations in one-line notation (g(0) g(1) ... g(n-1)); (g·s)(i) = g(s(i)).
    perms = list(itertools.permutations(range(n)))
    ids = {perm: i for i, perm in enumerate(perms)}
    names = ["".join(map(str, perm)) for perm in perms]
    mul = [[ids[tuple(g[s[i]] for i in range(n))] for s in perms] for g in perms]

    def parse(text: str) -> int | None:
        digits = tuple(int(c) for c in text if c.isdigit())
        return ids.get(digits) if len(digits) == len(text) else None

    return _Group(names, mul, parse)


#: group name -> (constructor, smallest and largest allowed n)
GROUPS: dict[str, tuple[object, int, int]] = {
    "cyclic": (_cyclic, 2, 64),
    "dihedral": (_dihedral, 3, 32),
    "symmetric": (_symmetric, 2, 4),
}


def cayley_walk(
    group: str,
    n: int,
    generators: Mapping[str, object],
    N: int,
    laziness: object = 0,
) -> FiniteTask:
    """Walks on the Cayley graph of a small group: g -> g·s with s drawn from ``generators``.

    ``group`` is "cyclic" (Z_n, elements "0".."n-1", generator "-1" allowed), "dihedral" (D_n of
    order 2n, elements r^k s^f written "e", "r", "r^2", "s", "rs", ...) or "symmetric" (S_n, n <= 4,
    permutations in one-line notation such as "102"). Generator probabilities must sum to 1
    exactly. The cyclic group with {"1": p, "-1": 1-p} is the circle walk of docs/theory.md#task.

    >>> t = cayley_walk("dihedral", 3, {"r": "1/2", "s": "1/2"}, N=2)
    >>> t.vocab, t.K
    (('e', 'r', 'r^2', 's', 'rs', 'r^2s'), 6)
    """
    if group not in GROUPS:
        raise ValueError(f"group={group!r} is not one of {sorted(GROUPS)}")
    build, low, high = GROUPS[group]
    n = check_int(n, "n", low)
    if n > high:
        raise ValueError(f"n={n} is out of range: the {group} group needs {low} <= n <= {high}")
    G: _Group = build(n)  # type: ignore[operator]
    if not isinstance(generators, Mapping) or not generators:
        raise ValueError("generators must be a non-empty mapping {element: probability}")
    K = len(G.names)
    P = sp.zeros(K, K)
    total = sp.Integer(0)
    for gen, prob in generators.items():
        s = G.element(gen, f"generators[{gen!r}]")
        q = exact_expr(prob, f"generators[{gen!r}]")
        _check_probability(q, f"generators[{gen!r}]")
        total += q
        for g in range(K):
            P[g, G.mul[g][s]] += q
    if sp.simplify(total - 1) != 0:
        raise ValueError(f"generator probabilities sum to {sp.simplify(total)}, not 1")
    return walk_task(_lazy(P, laziness), N, names=G.names, name=f"cayley_{group}")
