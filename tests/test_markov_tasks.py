"""Markov-chain tasks (rwtoolkit.tasks._markov): exact laws checked against independent derivations.

* the binary (p, q) source started stationary has the stationary marginal (q, p)/(p + q) at every position;
* the in-context chains' Pólya-urn weights equal the prior expectation computed by SymPy integration over
  the Dirichlet (Beta) densities of the rows, and their next-token law is the urn's rule
  P(y = b | x) = (n_{a b} + α)/(n_a + Sα), a the last token;
* every law sums to 1 exactly; bad arguments are one-line errors.
"""

from __future__ import annotations

import itertools

import pytest
import sympy as sp
from conftest import beta_expectation

from rwtoolkit.tasks import binary_markov_task, icl_markov_task, make_task, markov_task, symbol


def _law(task):
    pop = task.population()
    return {
        (tuple(t), int(y)): q
        for t, y, q in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True)
    }


@pytest.mark.parametrize(
    "task",
    [
        markov_task([["1/2", "1/2"], ["1/4", "3/4"]], N=4),
        markov_task([["1/3", "2/3"]] * 2 + [["1", "0"], ["0", "1"]], N=4, k=2),
        binary_markov_task("3/5", "4/5", N=5),
        icl_markov_task(2, 5),
        icl_markov_task(3, 4, "1/2"),
    ],
    ids=["order-1", "order-2", "binary", "icl-S2", "icl-S3-half"],
)
def test_every_law_sums_to_one_exactly(task):
    assert sum(_law(task).values()) == 1


def test_symbolic_binary_source_sums_to_one():
    p, q = symbol("p"), symbol("q")
    law = _law(binary_markov_task("p", "q", N=3))
    assert sp.simplify(sum(law.values()) - 1) == 0
    assert sp.simplify(law[((0, 0), 0)] - q / (p + q) * (1 - p) ** 2) == 0


def test_the_binary_source_is_stationary_at_every_position():
    p, q, N = sp.Rational(3, 5), sp.Rational(4, 5), 5
    law = _law(binary_markov_task(p, q, N))
    for position in range(N):
        ones = sum(w for (tokens, y), w in law.items() if (tokens + (y,))[position] == 1)
        assert ones == p / (p + q)


@pytest.mark.parametrize("alpha", [1, 2, 3])
def test_polya_weights_are_the_dirichlet_expectation(alpha):
    N = 4
    law = _law(icl_markov_task(2, N, alpha))
    for sequence in itertools.product(range(2), repeat=N):
        counts = [[0, 0], [0, 0]]
        for a, b in itertools.pairwise(sequence):
            counts[a][b] += 1
        want = sp.Rational(1, 2) * beta_expectation(tuple(map(tuple, counts)), alpha)
        assert law[(sequence[:-1], sequence[-1])] == want, sequence


@pytest.mark.parametrize("S, alpha", [(2, "1"), (3, "1/2")])
def test_the_next_token_follows_the_urn_rule(S, alpha):
    a = sp.Rational(alpha)
    law = _law(icl_markov_task(S, 4, alpha))
    for tokens in {t for t, _ in law}:
        total = sum(law[(tokens, b)] for b in range(S))
        last = tokens[-1]
        n = [sum(1 for u, v in itertools.pairwise(tokens) if u == last and v == b) for b in range(S)]
        for b in range(S):
            assert law[(tokens, b)] / total == (n[b] + a) / (sum(n) + S * a)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: markov_task([["1/2", "1/3"], ["1/4", "3/4"]], N=3), r"transition\[0\] sums to 5/6, not 1"),
        (lambda: markov_task([["1/2", "1/2"]], N=3), "S\\^k rows of S probabilities"),
        (lambda: icl_markov_task(2, 4, 0), "alpha=0 must be > 0"),
        (lambda: icl_markov_task(4, 9), "above the limit"),
        (lambda: binary_markov_task(0, 0, 3), "p \\+ q = 0"),
        (lambda: make_task("binary_markov", {"p": "2", "q": "1/2", "N": 3}), "p"),
    ],
    ids=["row-sum", "row-count", "alpha", "size", "frozen-chain", "p-range"],
)
def test_bad_arguments_are_one_line_errors(build, message):
    with pytest.raises(ValueError, match=message) as caught:
        build()
    assert len(str(caught.value).splitlines()) == 1
