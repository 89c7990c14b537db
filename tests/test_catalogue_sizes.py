"""Every catalogue family sizes its task from its parameters by arithmetic before building anything.

Each parameter below is 10^10 (or a power tower): computing the size it implies (S^k, 2^L, 2^d, a K×K
matrix, a list of 10^10 node names, 2^65536) would take minutes or all the memory there is, so a family
that computed before refusing would not finish these tests; each is refused with one line that names the
parameter (``params.<name>``, as ``make_task`` reports it in a spec file).
"""

from __future__ import annotations

import pytest

from rwtoolkit.tasks import make_task

HUGE = 10**10
UNIFORM = [["1/2", "1/2"], ["1/2", "1/2"]]

CASES = [
    ("markov", {"transition": UNIFORM, "N": HUGE + 1, "k": HUGE}, "params.N"),
    ("markov", {"transition": UNIFORM, "N": 3, "k": HUGE}, "params.N"),  # N >= k + 1 is checked first
    ("markov", {"transition": [["1/2", "1/2"]] * 64, "N": 40, "k": 6}, "params: S=2, N=40"),
    ("binary_markov", {"p": "1/2", "q": "1/2", "N": HUGE}, "params.N"),
    ("icl_markov", {"S": 2, "N": HUGE}, "params.N"),
    ("icl_markov", {"S": HUGE, "N": 2}, "params.S"),
    ("majority", {"L": HUGE}, "params.L"),
    ("majority", {"L": 40}, "params: majority_task(L=40) has 2^L"),
    ("count", {"L": HUGE}, "params.L"),
    ("first_of_two", {"L": HUGE}, "params.L"),
    ("circle", {"K": 3, "N": HUGE, "p": "1/2"}, "params.N"),
    ("circle", {"K": HUGE, "N": 3, "p": "1/2"}, "params.K"),
    ("lazy_circle", {"K": HUGE, "N": 3, "p": "1/2", "q": "1/2"}, "params.K"),
    ("lazy_circle", {"K": 3, "N": HUGE, "p": "1/2", "q": "1/2"}, "params.N"),
    ("graph", {"nodes": HUGE, "edges": [], "N": 2}, "params.nodes"),
    ("graph", {"nodes": 2, "edges": [[0, 1, 1], [1, 0, 1]], "N": HUGE}, "params.N"),
    ("undirected_graph", {"nodes": HUGE, "edges": [[0, 1]], "N": 2}, "params.nodes"),
    ("named_graph", {"graph": "hypercube", "size": HUGE, "N": 2}, "params.size"),
    ("named_graph", {"graph": "grid", "size": [HUGE, HUGE], "N": 2}, "params.size"),
    ("named_graph", {"graph": "cycle", "size": 5, "N": HUGE}, "params.N"),
    ("adjacency_graph", {"adjacency": {"a": ["b"], "b": ["a"]}, "N": HUGE}, "params.N"),
    ("cayley", {"group": "cyclic", "n": HUGE, "generators": {"1": 1}, "N": 2}, "params.n"),
    ("cayley", {"group": "cyclic", "n": 5, "generators": {"1": 1}, "N": HUGE}, "params.N"),
    ("permutation", {"m": HUGE}, "params.m"),
    ("majority", {"L": 3, "q": "2^2^2^2^2^2"}, "params.q"),
]


@pytest.mark.parametrize(
    ("family", "params", "where"),
    CASES,
    ids=[
        f"{f}-{'-'.join(k for k, v in p.items() if v == HUGE or isinstance(v, str) and '^' in v) or 'size'}"
        for f, p, _ in CASES
    ],
)
def test_a_family_refuses_a_huge_size_before_building(family, params, where):
    with pytest.raises(ValueError) as info:
        make_task(family, params)
    message = str(info.value)
    assert message.startswith(where) and "\n" not in message, message
