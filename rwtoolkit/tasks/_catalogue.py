"""The task catalogue (docs/theory.md#signal, #qa-tasks): built-in families beyond circle walks, each exact.

Each family builds a ``CircleWalk`` or an exact ``FiniteTask``; ``FAMILIES`` maps a family name to
its builder and its parameters, so a spec file ({"family": ..., "params": ...}) can be checked
argument by argument. Probabilities may be numbers or SymPy symbols (``"p"``) for exact sweeps.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import sympy as sp

from rwtoolkit.io import suggestion
from rwtoolkit.tasks._circle import CircleWalk, check_int
from rwtoolkit.tasks._exact import check_in_unit_interval, is_numeric
from rwtoolkit.tasks._finite import FiniteTask
from rwtoolkit.tasks._graph import (
    MAX_FINITE_INPUTS,
    MAX_GRAPH_NODES,
    adjacency_walk,
    cayley_walk,
    check_length,
    exact_expr,
    graph_walk,
    lazy_circle_walk,
    named_graph_walk,
    power_above,
    undirected_graph_walk,
)
from rwtoolkit.tasks._markov import binary_markov_task, icl_markov_task, markov_task
from rwtoolkit.tasks._qa import qa_task1, qa_task2


def _prob(value: object, name: str) -> sp.Expr:
    q = exact_expr(value, name)
    if is_numeric(q):
        check_in_unit_interval(q, name)
    return q


def _check_words(L: int, what: str) -> None:
    """Refuse 2^L inputs above ``MAX_FINITE_INPUTS`` by comparing sizes, before computing 2^L."""
    check_length(L, "L", tokens=L + 1)
    if power_above(2, L, MAX_FINITE_INPUTS):
        raise ValueError(
            f"{what} has 2^L = 2^{L} inputs, above the limit of {MAX_FINITE_INPUTS} for exact "
            "enumeration; choose a smaller length"
        )


def circle_walk(K: int, N: int, p: object) -> CircleWalk:
    """The catalogue's circle walk: ``CircleWalk(K, N, p)`` with its sizes bounded first, as every family's
    are (K <= ``MAX_GRAPH_NODES``, the size of its exact K×K transition matrix; N <= ``MAX_SEQUENCE_LENGTH``);
    the exact population's own limit (K·2^(N-1) walks) is ``CircleWalk.population``'s.

    >>> circle_walk(3, 10**10, "1/2")
    Traceback (most recent call last):
    ValueError: N=10000000000 is out of range: a catalogue task has sequences of at most 4096 tokens
    """
    K, N = check_int(K, "K", 3), check_int(N, "N", 2)
    if K > MAX_GRAPH_NODES:
        raise ValueError(f"K={K} is out of range: a catalogue circle has at most {MAX_GRAPH_NODES} nodes")
    return CircleWalk(K, check_length(N), p)


def majority_task(L: int, q: object = "1/2") -> FiniteTask:
    """Which of two tokens a, b is more frequent in L i.i.d. tokens (a w.p. q); ties go to a.

    The label is a token ("a" or "b"), as in QA Task 1 without the question words. For odd L
    the signal entry C[a, a] is Cov(1{y=a}, x̄_a), e.g. 2q²(1-q)² for L = 3.

    >>> t = majority_task(3)
    >>> t.vocab, t.N, len(t.labels), t.labels.tolist()[:2]
    (('a', 'b'), 4, 8, [0, 0])
    """
    L = check_int(L, "L", 1)
    _check_words(L, f"majority_task(L={L})")
    q = _prob(q, "q")
    sequences, labels, probs = [], [], []
    for words in itertools.product((0, 1), repeat=L):
        n_a = words.count(0)
        sequences.append(list(words))
        labels.append(0 if 2 * n_a >= L else 1)
        probs.append(q**n_a * (1 - q) ** (L - n_a))
    return FiniteTask(sequences, labels, probs, vocab=("a", "b"), name="majority")


def count_task(L: int, q: object = "1/2") -> FiniteTask:
    """How many of L i.i.d. tokens are a (a w.p. q, else b): the label is the token "n<count>".

    The vocabulary is a, b, n0, ..., nL (labels share the vocabulary with tokens, docs/theory.md#model).

    >>> t = count_task(2)
    >>> t.vocab, [t.vocab[y] for y in t.labels]
    (('a', 'b', 'n0', 'n1', 'n2'), ['n2', 'n1', 'n1', 'n0'])
    """
    L = check_int(L, "L", 1)
    _check_words(L, f"count_task(L={L})")
    q = _prob(q, "q")
    vocab = ("a", "b", *(f"n{k}" for k in range(L + 1)))
    sequences, labels, probs = [], [], []
    for words in itertools.product((0, 1), repeat=L):
        n_a = words.count(0)
        sequences.append(list(words))
        labels.append(2 + n_a)
        probs.append(q**n_a * (1 - q) ** (L - n_a))
    return FiniteTask(sequences, labels, probs, vocab=vocab, name="count")


def permutation_task(m: int, label_position: int = 0) -> FiniteTask:
    """Bag-of-words-identical inputs: all m! orders of the tokens t0..t(m-1), equally likely; the
    label is the token at ``label_position`` (0-based). Every input has the same token average, so
    the signal C is exactly zero (docs/theory.md#signal, #qa-tasks, the structure of QA Task 2).

    >>> t = permutation_task(3, label_position=2)
    >>> t.vocab, t.tokens.tolist()[1], t.vocab[t.labels[1]]
    (('t0', 't1', 't2'), [0, 2, 1], 't1')
    """
    m = check_int(m, "m", 2)
    if m > 7:
        raise ValueError(f"m={m} is out of range: permutation_task needs 2 <= m <= 7 (m! inputs)")
    position = check_int(label_position, "label_position", 0)
    if position >= m:
        raise ValueError(f"label_position={position} is out of range: it must be < m={m}")
    orders = list(itertools.permutations(range(m)))
    vocab = tuple(f"t{k}" for k in range(m))
    probs = [sp.Rational(1, len(orders))] * len(orders)
    return FiniteTask(
        [list(o) for o in orders], [o[position] for o in orders], probs, vocab=vocab, name="permutation"
    )


def first_of_two_task(L: int, r: object = "1/2") -> FiniteTask:
    """Order-sensitive: a and b sit at two distinct positions of L (filler "_" elsewhere); the label
    is whichever comes first. a comes first w.p. r; given the order, the pair of positions is
    uniform. Every input has the same bag of words, so the signal is exactly zero for every r.

    >>> t = first_of_two_task(3)
    >>> t.vocab, t.tokens.tolist()[0], t.vocab[t.labels[0]], t.prob_values[0]
    (('a', 'b', '_'), [0, 1, 2], 'a', 1/6)
    """
    L = check_int(L, "L", 2)
    check_length(L, "L", tokens=L + 1)
    if L * (L - 1) > MAX_FINITE_INPUTS:
        raise ValueError(
            f"first_of_two_task(L={L}) has L(L-1) = {L * (L - 1)} inputs, above the limit of "
            f"{MAX_FINITE_INPUTS} for exact enumeration; choose a smaller length"
        )
    r = _prob(r, "r")
    pairs = list(itertools.combinations(range(L), 2))
    sequences, labels, probs = [], [], []
    for first, token, prob in ((0, 0, r), (1, 1, 1 - r)):  # (first token id, label, probability)
        for i, j in pairs:
            seq = [2] * L
            seq[i], seq[j] = first, 1 - first
            sequences.append(seq)
            labels.append(token)
            probs.append(prob / len(pairs))
    return FiniteTask(sequences, labels, probs, vocab=("a", "b", "_"), name="first_of_two")


@dataclass(frozen=True)
class Family:
    """A catalogue entry: its builder, one line of description, and the parameters a sweep may vary
    symbolically (those that enter only through probabilities)."""

    name: str
    build: Callable[..., CircleWalk | FiniteTask]
    description: str
    symbolic_params: tuple[str, ...] = ()

    @property
    def params(self) -> dict[str, inspect.Parameter]:
        """The builder's parameters by name (required ones have no default)."""
        return dict(inspect.signature(self.build).parameters)


#: Every built-in family, by the name a spec file uses.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("circle", circle_walk, "random walk on the K-cycle, +1 w.p. p (docs/theory.md#task)", ("p",)),
        Family("lazy_circle", lazy_circle_walk, "circle walk that stays put w.p. q", ("p", "q")),
        Family(
            "graph",
            graph_walk,
            "random walk on a graph given by [from, to, probability] edges",
            ("laziness",),
        ),
        Family(
            "undirected_graph",
            undirected_graph_walk,
            "random walk to a uniform (or weighted) neighbour "
            "on an undirected graph given by [a, b] or [a, b, weight] edges",
            ("laziness",),
        ),
        Family(
            "adjacency_graph",
            adjacency_walk,
            "random walk to a uniform (or weighted) neighbour given "
            "by neighbour lists {node: [neighbours]} or {node: {neighbour: weight}}",
            ("laziness",),
        ),
        Family(
            "named_graph",
            named_graph_walk,
            "simple random walk on a cycle, complete, complete_bipartite, "
            "hypercube or grid graph of a given size",
            ("laziness",),
        ),
        Family(
            "cayley",
            cayley_walk,
            "random walk on the Cayley graph of a cyclic, dihedral or symmetric group",
            ("laziness",),
        ),
        Family(
            "qa1", qa_task1, "QA Task 1: the more frequent fruit in a list of five (docs/theory.md#qa-tasks)"
        ),
        Family("qa2", qa_task2, "QA Task 2: 'I prefer an A to an B' (docs/theory.md#qa-tasks)"),
        Family("majority", majority_task, "the more frequent of two tokens in L i.i.d. tokens", ("q",)),
        Family("count", count_task, "how many of L i.i.d. tokens are a", ("q",)),
        Family("permutation", permutation_task, "all orders of m tokens, label = token at a position"),
        Family(
            "markov",
            markov_task,
            "next token of a fixed Markov chain of order k (transition: S^k rows of S probabilities)",
        ),
        Family(
            "binary_markov",
            binary_markov_task,
            "next token of the binary (p, q) source, started stationary (Makkuva et al.)",
            ("p", "q"),
        ),
        Family(
            "icl_markov",
            icl_markov_task,
            "next token of an in-context Markov chain, rows drawn from Dirichlet(alpha) (Edelman et al.); "
            "with parents, of an in-context causal graph (Nichani et al.)",
            ("alpha",),
        ),
        Family("first_of_two", first_of_two_task, "which of a, b comes first among L positions", ("r",)),
    )
}


def make_task(family: str, params: Mapping[str, object], where: str = "params") -> CircleWalk | FiniteTask:
    """Build the catalogue task ``family`` from ``params``; errors name ``where.<param>``.

    >>> make_task("majority", {"L": 3, "q": "q"}).prob_values[0]
    q**3
    >>> make_task("circle", {"K": 3, "N": 4})
    Traceback (most recent call last):
    ValueError: params: missing parameter 'p' of family 'circle'; allowed: K, N, p (required: K, N, p)
    >>> make_task("circle", {"K": 3, "N": 4, "P": "1/2"})
    Traceback (most recent call last):
    ValueError: params.P: unknown parameter of family 'circle' (did you mean p?); allowed: K, N, p
    """
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not in the catalogue: choose one of {sorted(FAMILIES)}")
    fam = FAMILIES[family]
    allowed = fam.params
    listing = ", ".join(allowed) or "none"
    for key in params:
        if key not in allowed:
            raise ValueError(
                f"{where}.{key}: unknown parameter of family {family!r}{suggestion(key, list(allowed))}; "
                f"allowed: {listing}"
            )
    for key, param in allowed.items():
        if param.default is inspect.Parameter.empty and key not in params:
            raise ValueError(
                f"{where}: missing parameter {key!r} of family {family!r}; allowed: {listing} (required: "
                f"{', '.join(k for k, v in allowed.items() if v.default is inspect.Parameter.empty)})"
            )
    try:
        return fam.build(**params)
    except (ValueError, TypeError) as err:  # TypeError: a value of the wrong kind (e.g. edges=3)
        message = str(err)
        # Name the offending field: builders say "K=2 is ...", "edges[3] ...", "generators['r'] ...".
        for key in params:
            if message.startswith((f"{key}=", f"{key}[", f"{key} ", f"{key}:")):
                raise ValueError(f"{where}.{key}: {message}") from None
        raise ValueError(f"{where}: {message}") from None
