"""In-context causal graphs (``icl_markov_task(..., parents=...)``, Nichani, Damian, Lee 2024), checked against
independent derivations.

* the default and the explicit chain give the in-context Markov chain byte for byte: tokens, labels and exact
  weights equal the chain's Pólya-urn formula written out here (consecutive transitions, one uniform x_1);
* a graph's weights are the prior expectation of the product of π(x_{p(i)}, x_i) over the graph's edges (the
  label's edge from the query x_{N−1} included), times (1/S) per root, by SymPy integration over the Beta
  densities of the rows (S = 2);
* one weight by hand; every law sums to 1 exactly; bad ``parents`` are one-line errors naming the argument and
  its range, also through a spec file.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
from conftest import beta_expectation

from rwtoolkit.tasks import icl_markov_task, make_task
from rwtoolkit.tasks._spec import SpecError, parse_task_spec


def _law(task):
    pop = task.population()
    return {
        (tuple(t), int(y)): q
        for t, y, q in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True)
    }


def _chain_weight(x, S, alpha):
    """The in-context chain's weight as the task computed it before ``parents`` existed (issue 42)."""
    a = sp.nsimplify(alpha)
    counts = [[0] * S for _ in range(S)]
    for u, v in itertools.pairwise(x):
        counts[u][v] += 1
    q = sp.Rational(1, S)
    for row in counts:
        for n in row:
            q *= sp.rf(a, n)
        q /= sp.rf(S * a, sum(row))
    return q


@pytest.mark.parametrize("S, N, alpha", [(2, 2, 1), (2, 5, 1), (3, 4, "1/2"), (2, 6, 3)])
def test_the_chain_is_the_in_context_markov_chain_byte_for_byte(S, N, alpha):
    default = icl_markov_task(S, N, alpha)
    chain = icl_markov_task(S, N, alpha, parents=list(range(1, N - 1)))
    for task in (default, chain):
        pop = task.population()
        expected = [x for x in itertools.product(range(S), repeat=N)]
        assert pop.tokens.tolist() == [list(x[:-1]) for x in expected]
        assert pop.labels.tolist() == [x[-1] for x in expected]
        assert list(task.prob_values) == [_chain_weight(x, S, alpha) for x in expected]
        assert task.name == "icl_markov" and task.vocab == tuple(str(s) for s in range(S))
    for a, b in zip(default.population().exact_probs(), chain.population().exact_probs(), strict=True):
        assert type(a) is type(b) and a == b and str(a) == str(b)
    assert np.array_equal(default.tokens, chain.tokens) and np.array_equal(default.labels, chain.labels)


def test_one_weight_of_the_tree_by_hand():
    # parents (1, 1, 2): x2, x3 children of x1, the query x4 a child of x2, the label y a child of x4.
    # x = 0, 0, 1, 1 and y = 0: edges 0->0 (x1->x2), 0->1 (x1->x3), 0->1 (x2->x4), 1->0 (x4->y).
    # α = 1: row 0 is Beta(1, 1) with E[π00 π01²] = ∫ (1 − a) a² da = 1/3 − 1/4 = 1/12; row 1: E[π10] = 1/2;
    # x1 uniform: 1/2. The weight is 1/2 · 1/12 · 1/2 = 1/48.
    law = _law(icl_markov_task(2, 5, 1, parents=(1, 1, 2)))
    assert law[((0, 0, 1, 1), 0)] == sp.Rational(1, 48)


@pytest.mark.parametrize(
    "parents, alpha",
    [((1, 1, 2), 1), ((0, 1, 2), 2), ((1, 2, 0), 1), ((1, 1, 3), 3)],
    ids=["tree", "two-roots", "query-a-root", "skip"],
)
def test_a_graph_weight_is_the_dirichlet_expectation_over_its_edges(parents, alpha):
    N = len(parents) + 2
    law = _law(icl_markov_task(2, N, alpha, parents=parents))
    edges = [(p - 1, i) for i, p in enumerate(parents, start=1) if p] + [(N - 2, N - 1)]
    roots = 1 + sum(1 for p in parents if p == 0)
    for x in itertools.product(range(2), repeat=N):
        counts = [[0, 0], [0, 0]]
        for u, v in edges:
            counts[x[u]][x[v]] += 1
        want = sp.Rational(1, 2) ** roots * beta_expectation(tuple(map(tuple, counts)), alpha)
        assert law[(x[:-1], x[-1])] == want, x


@pytest.mark.parametrize(
    "S, parents, alpha",
    [(2, (1, 1, 2), 1), (2, (1, 2, 1, 3, 2), 1), (3, (1, 1, 2), "1/2"), (2, (0, 0, 0), 3), (3, (1, 0), 1)],
)
def test_every_graph_law_sums_to_one_exactly(S, parents, alpha):
    law = _law(icl_markov_task(S, len(parents) + 2, alpha, parents=parents))
    assert sum(law.values()) == 1
    assert all(isinstance(q, sp.Rational) and q > 0 for q in law.values())


def test_a_graph_differs_from_the_chain():
    chain, tree = _law(icl_markov_task(2, 5)), _law(icl_markov_task(2, 5, parents=(1, 1, 2)))
    assert chain.keys() == tree.keys() and chain != tree


@pytest.mark.parametrize(
    "parents, message",
    [
        ((1,), "parents has 1 entries, expected N-2 = 3 (the parents of positions 2..N-1, 0 for a root)"),
        ((1, 3, 2), "parents[1]=3 is out of range: the parent of position 3 is in 0..2 (0: a root)"),
        ((1, 1, -1), "parents[2]=-1 is out of range: the parent of position 4 is in 0..3 (0: a root)"),
        ((1, True, 2), "parents[1]=True must be an integer in 0..2 (the parent of position 3)"),
        ((1, "1", 2), "parents[1]='1' must be an integer in 0..2 (the parent of position 3)"),
        (
            "112",
            "parents='112' must be a list of N-2 = 3 integers (the parents of positions 2..N-1, 0 for a root)",
        ),
        (5, "parents=5 must be a list of N-2 = 3 integers (the parents of positions 2..N-1, 0 for a root)"),
    ],
    ids=["short", "future", "negative", "bool", "string-entry", "string", "number"],
)
def test_bad_parents_are_one_line_errors(parents, message):
    with pytest.raises(ValueError) as err:
        icl_markov_task(2, 5, parents=parents)
    assert str(err.value) == message


def test_the_spec_family_takes_parents():
    spec = parse_task_spec(
        {"task": {"family": "icl_markov", "params": {"S": 2, "N": 5, "parents": [1, 1, 2]}}}
    )
    assert _law(spec.task()) == _law(icl_markov_task(2, 5, 1, parents=(1, 1, 2)))
    assert _law(make_task("icl_markov", {"S": 2, "N": 4, "parents": [1, 1]})) == _law(
        icl_markov_task(2, 4, parents=(1, 1))
    )
    with pytest.raises(SpecError) as err:
        parse_task_spec({"task": {"family": "icl_markov", "params": {"S": 2, "N": 5, "parents": [1, 4, 2]}}})
    assert str(err.value) == (
        "spec: task.params.parents: parents[1]=4 is out of range: the parent of position 3 is in 0..2 (0: a root)"
    )
