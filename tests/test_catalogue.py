"""The task catalogue (rwtoolkit.tasks): exact populations, hand-checked walks and groups, family validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.io import load_schema
from rwtoolkit.tasks import (
    FAMILIES,
    CircleWalk,
    cayley_walk,
    count_task,
    exact_expr,
    first_of_two_task,
    graph_walk,
    lazy_circle_walk,
    majority_task,
    make_task,
    permutation_task,
    symbol,
)

p, q, r = symbol("p"), symbol("q"), symbol("r")

# One instance of every family, numeric and symbolic, for the population-wide properties.
INSTANCES = {
    "circle": lambda: make_task("circle", {"K": 4, "N": 4, "p": "p"}),
    "lazy_circle": lambda: lazy_circle_walk(3, 4, "p", "q"),
    "graph": lambda: graph_walk(
        ["a", "b", "c"],
        [["a", "b", "p"], ["a", "c", "1-p"], ["b", "a", 1], ["c", "c", "1/2"], ["c", "a", "1/2"]],
        N=4,
    ),
    "undirected_graph": lambda: make_task(
        "undirected_graph", {"nodes": 3, "edges": [[0, 1, 2], [1, 2]], "N": 4, "laziness": "q"}
    ),
    "adjacency_graph": lambda: make_task(
        "adjacency_graph", {"adjacency": {"a": ["b"], "b": {"a": "1/3", "b": 2}}, "N": 4}
    ),
    "named_graph": lambda: make_task(
        "named_graph", {"graph": "grid", "size": [2, 3], "N": 3, "laziness": "q"}
    ),
    "cayley_cyclic": lambda: cayley_walk("cyclic", 5, {"1": "p", "-1": "1-p"}, N=4),
    "cayley_dihedral": lambda: cayley_walk("dihedral", 3, {"r": "1/3", "s": "2/3"}, N=3, laziness="q"),
    "cayley_symmetric": lambda: cayley_walk("symmetric", 3, {"102": "p", "021": "1-p"}, N=3),
    "qa1": lambda: make_task("qa1", {}),
    "qa2": lambda: make_task("qa2", {}),
    "majority": lambda: majority_task(5, "q"),
    "count": lambda: count_task(4, "q"),
    "permutation": lambda: permutation_task(4, 2),
    "first_of_two": lambda: first_of_two_task(5, "r"),
}


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_every_catalogue_population_sums_to_one_exactly(name):
    pop = INSTANCES[name]().population()
    total = sp.expand(sp.Add(*pop.exact_probs()))
    assert total == 1
    assert all(not isinstance(v, sp.Float) and not v.atoms(sp.Float) for v in pop.prob_values)


def test_catalogue_covers_every_family_and_the_schema_lists_the_same_names():
    schema_names = set(load_schema("task_spec")["$defs"]["family_task"]["properties"]["family"]["enum"])
    assert schema_names == set(FAMILIES)
    assert {
        "circle",
        "lazy_circle",
        "graph",
        "undirected_graph",
        "adjacency_graph",
        "named_graph",
        "cayley",
        "qa1",
        "qa2",
        "majority",
        "count",
        "permutation",
        "first_of_two",
        "markov",
        "binary_markov",
        "icl_markov",
    } == set(FAMILIES)


def _law(task):
    pop = task.population()
    return {
        (tuple(s), int(y)): sp.expand(v)
        for s, y, v in zip(pop.tokens.tolist(), pop.labels, pop.exact_probs(), strict=True)
    }


@pytest.mark.parametrize("K,N", [(3, 4), (4, 5), (5, 3)])
def test_cayley_walk_on_cyclic_group_is_the_circle_walk(K, N):
    """Z_K with generators +1 (prob p) and -1 (prob 1-p) is docs/theory.md#task's walk (CircleWalk enumerates
    walks by step codes, the Cayley walk by paths through the multiplication table)."""
    assert _law(cayley_walk("cyclic", K, {"1": "p", "-1": "1-p"}, N)) == _law(CircleWalk(K, N, "p"))


def test_dihedral_walk_follows_the_relation_s_r_equals_r_inverse_s():
    """In D_3, (s)(r) = r^{-1} s = r^2 s: one step by r from s lands on r^2s, from rs on s (r·s·r = s)."""
    task = cayley_walk("dihedral", 3, {"r": 1}, N=2)
    vocab = task.vocab
    step = {vocab[s[0]]: vocab[y] for s, y in zip(task.tokens.tolist(), task.labels, strict=True)}
    assert step == {"e": "r", "r": "r^2", "r^2": "e", "s": "r^2s", "rs": "s", "r^2s": "rs"}


def test_symmetric_group_composes_right_to_left():
    """(g·s)(i) = g(s(i)): g = 102, s = 021 gives (g(0), g(2), g(1)) = (1, 2, 0), i.e. 120."""
    task = cayley_walk("symmetric", 3, {"021": 1}, N=2)
    step = {task.vocab[s[0]]: task.vocab[y] for s, y in zip(task.tokens.tolist(), task.labels, strict=True)}
    assert step["102"] == "120"
    assert step["012"] == "021"


def test_graph_walk_path_probabilities_by_hand():
    """Graph a->b (p), a->c (1-p), b->a (1), c->c (1/2), c->a (1/2), uniform start, N = 3.

    Paths by hand: from a: a-b-a, a-c-c, a-c-a (3); from b: b-a-b, b-a-c (2); from c: c-c-c,
    c-c-a, c-a-b, c-a-c (4): 9 paths. P(a, c, c) = (1/3)(1-p)(1/2); P(b, a, b) = (1/3)(1)(p)."""
    law = _law(
        graph_walk(
            ["a", "b", "c"],
            [["a", "b", "p"], ["a", "c", "1-p"], ["b", "a", 1], ["c", "c", "1/2"], ["c", "a", "1/2"]],
            N=3,
        )
    )
    a, b, c = 0, 1, 2
    assert len(law) == 9
    assert law[((a, c), c)] == sp.expand((1 - p) / 6)
    assert law[((b, a), b)] == p / 3
    assert law[((c, a), c)] == sp.expand((1 - p) / 6)
    assert ((b, b), a) not in law  # b -> b has no edge


def test_lazy_circle_transition_is_q_identity_plus_rest():
    """Lazy walk on the 3-cycle, N = 2: P(s1 = 0, s2 = 0) = q/3, P(0 -> 1) = (1-q)p/3, P(0 -> 2) = (1-q)(1-p)/3."""
    law = _law(lazy_circle_walk(3, 2, "p", "q"))
    assert law[((0,), 0)] == q / 3
    assert law[((0,), 1)] == sp.expand((1 - q) * p / 3)
    assert law[((0,), 2)] == sp.expand((1 - q) * (1 - p) / 3)


def test_majority_and_count_labels_recount_the_tokens():
    maj, cnt = majority_task(5, "q"), count_task(4)
    for seq, y in zip(maj.tokens.tolist(), maj.labels, strict=True):
        assert maj.vocab[y] == ("a" if seq.count(0) >= 3 else "b")
    for seq, y in zip(cnt.tokens.tolist(), cnt.labels, strict=True):
        assert cnt.vocab[y] == f"n{seq.count(0)}"
    # P(all five tokens are a) = q^5
    assert _law(maj)[((0,) * 5, 0)] == q**5


def test_permutation_and_first_of_two_have_one_bag_of_words():
    """Every input has the same multiset of tokens, so the token average x̄ is the same for all."""
    for task in (permutation_task(4, 1), first_of_two_task(5, "r")):
        bags = {tuple(sorted(s)) for s in task.tokens.tolist()}
        assert len(bags) == 1
    perm = permutation_task(4, 1)
    assert all(y == s[1] for s, y in zip(perm.tokens.tolist(), perm.labels, strict=True))
    fo2 = first_of_two_task(5, "r")
    for s, y in zip(fo2.tokens.tolist(), fo2.labels, strict=True):
        assert y == min((s.index(0), 0), (s.index(1), 1))[1]
    p_a = sp.expand(sp.Add(*(v for (s, y), v in _law(fo2).items() if y == 0)))
    assert p_a == r


@pytest.mark.parametrize(
    "family,params,message",
    [
        ("circle", {"K": 2, "N": 4, "p": 1}, "params.K: K=2 is out of range"),
        ("circle", {"K": 3, "N": 4}, "missing parameter 'p'"),
        ("circle", {"K": 3, "N": 4, "p": 1, "q": 1}, "params.q: unknown parameter"),
        ("circle", {"K": 3, "N": 4, "p": "3/2"}, "params.p: p=3/2 is outside [0, 1]"),
        ("graph", {"nodes": 2, "edges": [[0, 1, "1/2"], [1, 0, 1]], "N": 3}, "sum to 1/2, not 1"),
        ("graph", {"nodes": 2, "edges": [[0, 5, 1], [1, 0, 1]], "N": 3}, "params.edges: edges[0]: node 5"),
        ("graph", {"nodes": 2, "edges": [[0, 1, 1], [0, 1, 1]], "N": 3}, "listed twice"),
        ("cayley", {"group": "cyclic", "n": 4, "generators": {"x": 1}, "N": 3}, "generators['x']"),
        ("cayley", {"group": "quaternion", "n": 2, "generators": {"1": 1}, "N": 3}, "params.group"),
        ("cayley", {"group": "symmetric", "n": 5, "generators": {"1": 1}, "N": 3}, "n <= 4"),
        ("majority", {"L": 40}, "above the limit"),
        ("permutation", {"m": 3, "label_position": 3}, "params.label_position"),
        ("first_of_two", {"L": 4, "r": "sin(r)"}, "params.r"),
    ],
)
def test_family_parameter_errors_name_the_parameter(family, params, message):
    with pytest.raises(ValueError, match=None) as info:
        make_task(family, params)
    assert message in str(info.value)


@pytest.mark.parametrize("text", ["__import__('os')", "p.real", "lambda: 1", "1/", "p; 1", "'1'"])
def test_exact_expressions_refuse_anything_but_arithmetic(text):
    with pytest.raises(ValueError, match="prob"):
        exact_expr(text, "prob")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1/0", "divides by zero"),
        ("0/0", "divides by zero"),
        ("p/(q-q)", "divides by zero"),
        ("nan", "nan names a constant, not a symbol"),
        ("1-pi", "pi names a constant, not a symbol"),
        ("oo", "oo names a constant"),
    ],
)
def test_exact_expressions_refuse_a_division_by_zero_and_constants_read_as_symbols(text, message):
    with pytest.raises(ValueError, match=message):
        exact_expr(text, "prob")


def test_exact_expressions_are_exact():
    assert exact_expr("(1-q)*p/2", "x") == (1 - q) * p / 2
    assert exact_expr("0.3", "x") == sp.Rational(3, 10)
    assert exact_expr(0.1, "x") == sp.Rational(1, 10)


def test_walks_refuse_too_many_paths_naming_the_count():
    with pytest.raises(ValueError, match=r"at least \d+ paths .* limit"):
        cayley_walk("dihedral", 8, {"r": "1/2", "s": "1/2"}, N=20)


def test_group_tables_are_groups():
    """Associativity, identity and inverses of the multiplication tables behind the Cayley walks."""
    from rwtoolkit.tasks._graph import GROUPS

    for name, n in (("cyclic", 5), ("dihedral", 4), ("symmetric", 3)):
        G = GROUPS[name][0](n)
        mul = np.array(G.mul)
        size = len(G.names)
        e = [i for i in range(size) if all(mul[i, j] == j for j in range(size))]
        assert len(e) == 1
        for a, b, c in itertools.product(range(size), repeat=3):
            assert mul[mul[a, b], c] == mul[a, mul[b, c]]
        assert all(any(mul[a, b] == e[0] for b in range(size)) for a in range(size))
