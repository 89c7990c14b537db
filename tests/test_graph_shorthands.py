"""Graph shorthands: undirected edges, adjacency lists and named graphs give the same exact walk task as
the transition probabilities written out by hand, through the library and through a spec file."""

from __future__ import annotations

import itertools

import pytest
import sympy as sp

from rwtoolkit.tasks import (
    adjacency_walk,
    graph_walk,
    lazy_circle_walk,
    named_graph_walk,
    parse_task_spec,
    undirected_graph_walk,
)

THIRD, HALF = sp.Rational(1, 3), sp.Rational(1, 2)

# The 3-cube written out by hand: every directed edge (24) with probability 1/3. Vertices are the
# bit strings; 000's neighbours differ from it in one bit: 001, 010, 100, and so on.
CUBE_EDGES = [
    ["000", "001", "1/3"],
    ["000", "010", "1/3"],
    ["000", "100", "1/3"],
    ["001", "000", "1/3"],
    ["001", "011", "1/3"],
    ["001", "101", "1/3"],
    ["010", "011", "1/3"],
    ["010", "000", "1/3"],
    ["010", "110", "1/3"],
    ["011", "010", "1/3"],
    ["011", "001", "1/3"],
    ["011", "111", "1/3"],
    ["100", "101", "1/3"],
    ["100", "110", "1/3"],
    ["100", "000", "1/3"],
    ["101", "100", "1/3"],
    ["101", "111", "1/3"],
    ["101", "001", "1/3"],
    ["110", "111", "1/3"],
    ["110", "100", "1/3"],
    ["110", "010", "1/3"],
    ["111", "110", "1/3"],
    ["111", "101", "1/3"],
    ["111", "011", "1/3"],
]
CUBE_NODES = ["000", "001", "010", "011", "100", "101", "110", "111"]


def _law(task):
    """The exact law {(vocab tokens..., vocab label): probability} of a task's population."""
    words = task.vocab or tuple(str(i) for i in range(task.K))
    return {
        (tuple(words[i] for i in s), words[y]): sp.expand(v)
        for s, y, v in zip(task.tokens.tolist(), task.labels.tolist(), task.prob_values, strict=True)
    }


def test_the_hand_written_cube_has_24_edges_of_probability_one_third():
    assert len(CUBE_EDGES) == 24 and len({(a, b) for a, b, _ in CUBE_EDGES}) == 24
    assert all(sum(a != b for a, b in zip(x, y, strict=True)) == 1 for x, y, _ in CUBE_EDGES)


@pytest.mark.parametrize("laziness", [0, "1/4", "q"])
def test_the_named_3_cube_equals_the_24_entry_hand_written_spec(laziness):
    by_name = named_graph_walk("hypercube", 3, N=3, laziness=laziness)
    by_hand = graph_walk(CUBE_NODES, CUBE_EDGES, N=3, laziness=laziness)
    assert by_name.vocab == tuple(CUBE_NODES)
    assert _law(by_name) == _law(by_hand)


def test_the_3_cube_from_undirected_edges_and_from_adjacency_lists_equals_the_hand_written_spec():
    pairs = [(a, b) for a, b, _ in CUBE_EDGES if a < b]
    assert len(pairs) == 12
    adjacency = {v: [b for a, b, _ in CUBE_EDGES if a == v] for v in CUBE_NODES}
    by_hand = _law(graph_walk(CUBE_NODES, CUBE_EDGES, N=4))
    assert _law(undirected_graph_walk(CUBE_NODES, pairs, N=4)) == by_hand
    assert _law(adjacency_walk(adjacency, N=4)) == by_hand


def test_the_3_cube_from_a_spec_file_equals_the_hand_written_spec_file():
    shorthand = parse_task_spec(
        {
            "task": {
                "family": "named_graph",
                "params": {"graph": "hypercube", "size": 3, "N": 3, "laziness": "1/2"},
            }
        }
    )
    by_hand = parse_task_spec(
        {
            "task": {
                "family": "graph",
                "params": {"nodes": CUBE_NODES, "edges": CUBE_EDGES, "N": 3, "laziness": "1/2"},
            }
        }
    )
    assert _law(shorthand.task()) == _law(by_hand.task())


@pytest.mark.parametrize("K,N", [(3, 3), (5, 4)])
def test_the_named_cycle_is_the_symmetric_circle_walk(K, N):
    by_name = named_graph_walk("cycle", K, N=N, laziness="q")
    circle = lazy_circle_walk(K, N, "1/2", "q")  # stay w.p. q, else +1 or -1 w.p. 1/2 each
    assert _law(by_name) == {(tuple(s), y): v for (s, y), v in _law(circle).items()}


def _one_step(task):
    """P(s_2 = b | s_1 = a) read from a task with N = 2 (start uniform over K nodes)."""
    return {(s[0], y): v * task.K for (s, y), v in _law(task).items()}


def test_complete_bipartite_grid_and_complete_graphs_by_hand():
    assert _one_step(named_graph_walk("complete", 3, N=2)) == {
        (a, b): HALF for a, b in itertools.permutations("012", 2)
    }
    k23 = _one_step(named_graph_walk("complete_bipartite", [2, 3], N=2))
    assert k23 == {
        **{(a, b): THIRD for a in ("a0", "a1") for b in ("b0", "b1", "b2")},
        **{(b, a): HALF for a in ("a0", "a1") for b in ("b0", "b1", "b2")},
    }
    # 2x3 grid: corners have 2 neighbours, the middle of each long side 3.
    grid = _one_step(named_graph_walk("grid", [2, 3], N=2))
    assert grid == {
        ("0,0", "0,1"): HALF,
        ("0,0", "1,0"): HALF,
        ("0,2", "0,1"): HALF,
        ("0,2", "1,2"): HALF,
        ("1,0", "1,1"): HALF,
        ("1,0", "0,0"): HALF,
        ("1,2", "1,1"): HALF,
        ("1,2", "0,2"): HALF,
        ("0,1", "0,0"): THIRD,
        ("0,1", "0,2"): THIRD,
        ("0,1", "1,1"): THIRD,
        ("1,1", "1,0"): THIRD,
        ("1,1", "1,2"): THIRD,
        ("1,1", "0,1"): THIRD,
    }


def test_weighted_neighbours_are_exact_fractions_of_the_total_weight():
    # a-b weight 1, a-c weight 2: from a, b w.p. 1/3 and c w.p. 2/3; b and c have one neighbour each.
    step = _one_step(undirected_graph_walk(["a", "b", "c"], [("a", "b", 1), ("a", "c", "2")], N=2))
    assert step == {("a", "b"): THIRD, ("a", "c"): 2 * THIRD, ("b", "a"): 1, ("c", "a"): 1}
    step = _one_step(adjacency_walk({"a": {"b": 0.25, "c": 0.75}, "b": ["a"], "c": ["a", "b"]}, N=2))
    assert step == {
        ("a", "b"): sp.Rational(1, 4),
        ("a", "c"): sp.Rational(3, 4),
        ("b", "a"): 1,
        ("c", "a"): HALF,
        ("c", "b"): HALF,
    }
    assert all(isinstance(v, sp.Rational) for v in step.values())


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda: undirected_graph_walk(3, [(0, 1), (1, 0)], N=2), "edges[1]: the edge 1 - 0 is listed twice"),
        (lambda: undirected_graph_walk(3, [(0, 0)], N=2), "joins a node to itself; use laziness"),
        (lambda: undirected_graph_walk(3, [(0, 1)], N=2), "node '2' has no neighbours"),
        (lambda: undirected_graph_walk(3, [(0, 5), (1, 2)], N=2), "edges[0]: node 5 is not one of the nodes"),
        (lambda: undirected_graph_walk(2, [(0, 1, 0)], N=2), "edges[0] weight=0 is out of range"),
        (lambda: undirected_graph_walk(2, [(0, 1, "w")], N=2), "must be a number > 0"),
        (lambda: adjacency_walk({"a": ["b", "b"], "b": ["a"]}, N=2), "neighbour 'b' is listed twice"),
        (lambda: adjacency_walk({"a": "b"}, N=2), "must be a list of neighbours"),
        (lambda: named_graph_walk("petersen", 10, N=2), "graph='petersen' is not one of"),
        (lambda: named_graph_walk("grid", 3, N=2), "takes 2 size(s), [rows, cols]"),
        (lambda: named_graph_walk("hypercube", 9, N=2), "512 nodes, above the limit of 256"),
        (lambda: named_graph_walk("cycle", 2, N=2), "must be >= 3"),
        (lambda: named_graph_walk("grid", [1, 1], N=2), "needs at least 2 nodes"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_bad_shorthands_name_the_field(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert message in str(info.value)


def test_spec_errors_in_shorthands_name_the_parameter():
    with pytest.raises(ValueError, match=r"spec: task\.params\.edges: edges\[0\]"):
        parse_task_spec(
            {"task": {"family": "undirected_graph", "params": {"nodes": 2, "edges": [[0, 3]], "N": 2}}}
        )
