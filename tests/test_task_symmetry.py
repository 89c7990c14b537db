"""rwtoolkit.tasks.task_symmetries: the symmetry group of a task's law, against a brute-force oracle and groups
derived by hand.

A symmetry (τ, λ, π) maps an input (s_0..s_{N-2}, y) to s'_{π(j)} = τ(s_j), y' = λ(y) and must keep
every input's exact probability. The oracle below tries every triple of S_K × S_K × S_{N-1} on tiny
tasks, comparing exact SymPy numbers; it shares no code with the search.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from sympy.combinatorics import Permutation

from rwtoolkit.tasks import (
    CircleWalk,
    FiniteTask,
    Symmetry,
    TaskGroup,
    cayley_walk,
    count_task,
    first_of_two_task,
    lazy_circle_walk,
    majority_task,
    make_task,
    named_graph_walk,
    permutation_task,
    qa_task1,
    qa_task2,
    task_symmetries,
)

# ----------------------------------------------------------------------------------------------
# the oracle: exact law and brute force over S_K x S_K x S_{N-1}


def exact_law(task):
    """{(tokens, label): exact probability} over the inputs of nonzero probability (repeats added)."""
    pop = task.population()
    law: dict = {}
    for row, y, w in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
        key = (tuple(row), y)
        law[key] = law.get(key, sp.Integer(0)) + sp.sympify(w)
    return {key: w for key, w in law.items() if not (w.is_Rational and w == 0)}


def equal(a, b) -> bool:
    if a.is_Rational and b.is_Rational:
        return a == b
    return sp.simplify(a - b) == 0


def image_of(tau, lam, pi, tokens, label):
    out = [None] * len(tokens)
    for j, s in enumerate(tokens):
        out[pi[j]] = tau[s]
    return tuple(out), lam[label]


def brute_force(task) -> set[Symmetry]:
    law = exact_law(task)
    K, P = task.K, task.N - 1
    found = set()
    for tau in itertools.permutations(range(K)):
        for pi in itertools.permutations(range(P)):
            for lam in itertools.permutations(range(K)):
                for (s, y), w in law.items():
                    v = law.get(image_of(tau, lam, pi, s, y))
                    if v is None or not equal(v, w):
                        break
                else:
                    found.add(Symmetry(tau, lam, pi))
    return found


# test-local group arithmetic on (tokens, labels, positions) tuples, independent of Symmetry's methods
def compose(a, b):
    """a after b."""
    return tuple(tuple(x[i] for i in y) for x, y in zip(a, b, strict=True))


def invert(a):
    out = []
    for part in a:
        inv = [0] * len(part)
        for i, v in enumerate(part):
            inv[v] = i
        out.append(tuple(inv))
    return tuple(out)


def parts(g: Symmetry):
    return (g.tokens, g.labels, g.positions)


def planted_task(seed: int = 3):
    """A random law on K = 4 tokens, N - 1 = 3 positions, invariant under g0 by construction (its
    probabilities are constant on the orbits of <g0>); also returns g0 and the orbits."""
    g0 = ((1, 0, 3, 2), (2, 1, 0, 3), (1, 2, 0))  # tau = (0 1)(2 3), lambda = (0 2), pi = (0 1 2)
    rng = random.Random(seed)
    orbits: list[list[tuple]] = []
    seen: set = set()
    while len(orbits) < 5:
        x = (tuple(rng.randrange(4) for _ in range(3)), rng.randrange(4))
        if x in seen:
            continue
        orbit = [x]
        while True:
            nxt = image_of(*g0, *orbit[-1])
            if nxt == x:
                break
            orbit.append(nxt)
        seen.update(orbit)
        orbits.append(orbit)
    weights = [rng.randint(1, 9) for _ in orbits]
    total = sum(w * len(o) for w, o in zip(weights, orbits, strict=True))
    inputs = [(x, Fraction(w, total)) for w, o in zip(weights, orbits, strict=True) for x in o]
    return inputs, Symmetry(*g0), orbits


def finite(inputs, K=4):
    return FiniteTask(
        [list(s) for (s, _), _ in inputs], [y for (_, y), _ in inputs], [w for _, w in inputs], K=K
    )


def irrational_task(equal_pair: bool) -> FiniteTask:
    """Probabilities with sqrt(2), two of them equal only after expanding (1+sqrt2)^2 = 3+2 sqrt2."""
    r2 = sp.sqrt(2)
    w1 = (1 + r2) ** 2 / 24
    w2 = (3 + 2 * r2) / 24 + (0 if equal_pair else sp.Rational(1, 100))
    rest = (1 - w1 - w2) / 2
    return FiniteTask([[0, 1], [1, 0], [0, 0], [1, 1]], [0, 1, 1, 0], [w1, w2, rest, rest], K=2)


ORACLE_TASKS = {
    **{f"circle K=3 N=4 p={p}": (lambda p=p: CircleWalk(3, 4, p)) for p in ("0", "1", "1/2", "3/10")},
    "circle K=3 N=3 p=1/2": lambda: CircleWalk(3, 3, "1/2"),
    "circle K=3 N=7 p=1": lambda: CircleWalk(3, 7, 1),
    **{f"circle K=4 N=5 p={p}": (lambda p=p: CircleWalk(4, 5, p)) for p in ("1/2", "1", "3/10")},
    "circle K=4 N=3 p=1/2": lambda: CircleWalk(4, 3, "1/2"),
    "first_of_two L=3": lambda: first_of_two_task(3),
    "first_of_two L=4 r=1/3": lambda: first_of_two_task(4, "1/3"),
    "majority L=3": lambda: majority_task(3),
    "majority L=4 q=1/3": lambda: majority_task(4, "1/3"),
    "count L=2": lambda: count_task(2),
    "permutation m=3": lambda: permutation_task(3),
    "permutation m=4 at 2": lambda: permutation_task(4, 2),
    "lazy_circle uniform": lambda: lazy_circle_walk(3, 3, "1/2", "1/3"),
    "lazy_circle": lambda: lazy_circle_walk(3, 3, "1/3", "1/4"),
    "hypercube d=2": lambda: named_graph_walk("hypercube", 2, N=3),
    "complete n=4": lambda: named_graph_walk("complete", 4, N=3),
    "cayley cyclic 4": lambda: cayley_walk("cyclic", 4, {"1": "1/2", "2": "1/2"}, N=3),
    "graph": lambda: make_task(
        "graph",
        {
            "nodes": ["a", "b", "c"],
            "edges": [["a", "b", "1/2"], ["a", "c", "1/2"], ["b", "a", 1], ["c", "a", 1]],
            "N": 4,
        },
    ),
    "planted": lambda: finite(planted_task()[0]),
    "irrational, equal pair": lambda: irrational_task(True),
    "irrational, unequal pair": lambda: irrational_task(False),
    # every pair statistic of the tokens is uniform, only the parity of all three tells the law
    "xor": lambda: FiniteTask([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0]], [0, 0, 0, 0], ["1/4"] * 4, K=2),
    "repeated and zero inputs": lambda: FiniteTask(
        [[0, 1], [0, 1], [1, 0], [1, 1]], [0, 0, 1, 1], ["1/4", "1/4", "1/2", 0], K=2
    ),
}


@pytest.mark.parametrize("name", sorted(ORACLE_TASKS))
def test_the_group_is_exactly_the_brute_force_one(name):
    task = ORACLE_TASKS[name]()
    G = task_symmetries(task)
    elements = G.elements()
    assert set(elements) == brute_force(task)
    assert len(elements) == len(set(elements)) == G.order


def random_task(seed: int) -> FiniteTask:
    """A small random law, made invariant under a random (τ, λ, π) most of the time (probabilities
    constant on its orbits): sizes K <= 4, N - 1 <= 4, sometimes a single input (all positions frozen)."""
    rng = random.Random(seed)
    K = rng.choice([2, 3, 4])
    P = rng.choice([1, 2, 3] if K == 4 else [1, 2, 3, 4])
    perms = [rng.sample(range(K), K), rng.sample(range(K), K), rng.sample(range(P), P)]
    g = (
        tuple(map(tuple, perms))
        if rng.random() < 0.7
        else (tuple(range(K)), tuple(range(K)), tuple(range(P)))
    )
    inputs: list = []
    seen: set = set()
    for _ in range(rng.randint(1, 6)):
        x = (tuple(rng.randrange(K) for _ in range(P)), rng.randrange(K))
        if x in seen:
            continue
        orbit = [x]
        while (nxt := image_of(*g, *orbit[-1])) != x:
            orbit.append(nxt)
        seen.update(orbit)
        weight = rng.choice([1, 1, 2, 3])
        inputs += [(o, weight) for o in orbit]
    total = sum(w for _, w in inputs)
    return finite([(x, Fraction(w, total)) for x, w in inputs], K=K)


@pytest.mark.parametrize("seed", range(40))
def test_random_small_laws_match_the_brute_force(seed):
    task = random_task(seed)
    G = task_symmetries(task)
    assert set(G.elements()) == brute_force(task)
    assert len(G.elements()) == G.order


# ----------------------------------------------------------------------------------------------
# circle walks: groups derived by hand


def rotation(K, N, a):
    shift = tuple((k + a) % K for k in range(K))
    return Symmetry(shift, shift, tuple(range(N - 1)))


def reflection(K, N, a):
    flip = tuple((a - k) % K for k in range(K))
    return Symmetry(flip, flip, tuple(range(N - 1)))


@pytest.mark.parametrize("K, N", [(3, 4), (4, 5), (5, 4), (6, 6), (7, 5), (4, 3)])
def test_a_generic_circle_walk_has_exactly_the_K_rotations(K, N):
    G = task_symmetries(CircleWalk(K, N, "3/10"))
    assert G.order == K
    assert set(G.elements()) == {rotation(K, N, a) for a in range(K)}


@pytest.mark.parametrize("K, N", [(3, 4), (3, 6), (5, 4), (6, 5), (8, 4)])
def test_at_one_half_the_reflections_join_the_rotations(K, N):
    G = task_symmetries(CircleWalk(K, N, "1/2"))
    assert G.order == 2 * K
    expected = {rotation(K, N, a) for a in range(K)} | {reflection(K, N, a) for a in range(K)}
    assert set(G.elements()) == expected


@pytest.mark.parametrize("N", [3, 4, 5, 6, 9])
def test_on_the_4_cycle_at_one_half_the_parity_classes_are_all_that_matter(N):
    """K = 4, p = 1/2: a step reaches either node of the other parity, each w.p. 1/2, so the walk is a
    uniform parity e and independent uniform tokens on the classes of parity e + j. A symmetry is any
    τ keeping the partition {0, 2}, {1, 3} (8), any λ keeping it with the class shift that π imposes
    (4), and any π keeping the position parities (a!·b! for classes of a, b positions) or, when they
    have the same size, swapping them (×2)."""
    P = N - 1
    a, b = (P + 1) // 2, P // 2
    expected = (2 if a == b else 1) * math.factorial(a) * math.factorial(b) * 8 * 4
    assert task_symmetries(CircleWalk(4, N, "1/2")).order == expected


def p_one_order(K, r):
    """p = 1, N = rK + 1: the K inputs c, c+1, ...; g maps input c to f(c), so τ(c + j) = f(c) + π(j):
    π maps residue classes mod K by an affine ρ(m) = am + b (K·φ(K) of them, (r!)^K such π each),
    and f(0) is free (K)."""
    phi = sum(1 for a in range(1, K + 1) if math.gcd(a, K) == 1)
    return math.factorial(r) ** K * K * phi * K


@pytest.mark.parametrize("K, r", [(3, 1), (3, 2), (4, 1), (4, 2), (5, 1), (6, 2)])
def test_deterministic_walks_have_the_shift_and_the_affine_group(K, r):
    N = r * K + 1
    G = task_symmetries(CircleWalk(K, N, 1))
    elements_or_none = G.elements() if G.order <= 5000 else None
    shift = Symmetry(
        tuple((k + 1) % K for k in range(K)), tuple(range(K)), tuple((j + 1) % (N - 1) for j in range(N - 1))
    )
    assert G.order == p_one_order(K, r)
    law = exact_law(CircleWalk(K, N, 1))  # the shift keeps the law (checked here, by definition)
    assert all(law.get(image_of(*parts(shift), s, y)) == w for (s, y), w in law.items())
    flat = list(shift.tokens) + [K + y for y in shift.labels] + [2 * K + j for j in shift.positions]
    assert G.as_permutation_group().contains(Permutation(flat))
    if elements_or_none is not None:
        assert shift in elements_or_none


def test_circle_orders_reported():
    """The orders the report quotes (also checked against the oracle above where it is feasible)."""
    orders = {
        (K, N, p): task_symmetries(CircleWalk(K, N, p)).order
        for K, N, p in [
            (3, 4, 0),
            (3, 4, 1),
            (3, 4, "1/2"),
            (3, 4, "3/10"),
            (3, 7, 1),
            (4, 5, "1/2"),
            (4, 5, 1),
        ]
    }
    assert orders == {
        (3, 4, 0): 18,
        (3, 4, 1): 18,
        (3, 4, "1/2"): 6,
        (3, 4, "3/10"): 3,
        (3, 7, 1): 144,
        (4, 5, "1/2"): 256,
        (4, 5, 1): 32,
    }


# ----------------------------------------------------------------------------------------------
# a planted symmetry, relabelled and broken


def test_a_planted_symmetry_is_found_and_follows_a_relabelling():
    inputs, g0, _ = planted_task()
    G = task_symmetries(finite(inputs))
    elements = set(G.elements())
    assert g0 in elements
    sigma, sigma_labels, rho = (2, 0, 3, 1), (1, 3, 0, 2), (2, 0, 1)  # h = (sigma, sigma_labels, rho)
    relabelled = [(image_of(sigma, sigma_labels, rho, s, y), w) for (s, y), w in inputs]
    H = task_symmetries(finite(relabelled))
    h = (sigma, sigma_labels, rho)
    conjugates = {Symmetry(*compose(compose(h, parts(g)), invert(h))) for g in elements}
    assert set(H.elements()) == conjugates
    assert H.order == G.order


def test_a_vocabulary_renaming_conjugates_the_group():
    task = first_of_two_task(4)
    sigma = np.array([2, 0, 1])  # a -> _, b -> a, _ -> b, for tokens and labels alike
    renamed = FiniteTask(
        sigma[task.tokens].tolist(), sigma[task.labels].tolist(), list(task.prob_values), K=3
    )
    h = (tuple(sigma.tolist()), tuple(sigma.tolist()), tuple(range(4)))
    G, H = task_symmetries(task), task_symmetries(renamed)
    assert set(H.elements()) == {Symmetry(*compose(compose(h, parts(g)), invert(h))) for g in G.elements()}


def test_changing_one_probability_breaks_the_planted_symmetry():
    inputs, g0, orbits = planted_task()
    orbit = next(o for o in orbits if len(o) > 1)
    x, gx = orbit[0], orbit[1]  # gx = g0(x), equally likely before
    delta = Fraction(1, 1000)
    broken = [(key, w + delta if key == x else w - delta if key == gx else w) for key, w in inputs]
    task = finite(broken)
    G = task_symmetries(task)
    assert g0 not in set(G.elements())
    assert set(G.elements()) == brute_force(task)


# ----------------------------------------------------------------------------------------------
# the group's structure and the action


GROUP_TASKS = {
    "circle K=3 N=7 p=1": lambda: CircleWalk(3, 7, 1),
    "count L=2": lambda: count_task(2),
    "first_of_two L=3": lambda: first_of_two_task(3),
    "planted": lambda: finite(planted_task()[0]),
    "hypercube d=3": lambda: named_graph_walk("hypercube", 3, N=3),
}


@pytest.mark.parametrize("name", sorted(GROUP_TASKS))
def test_the_elements_form_a_group_generated_by_the_generators(name):
    G = task_symmetries(GROUP_TASKS[name]())
    elements = G.elements()
    members = set(elements)
    assert elements[0].is_identity and not any(g.is_identity for g in elements[1:])
    assert elements == [elements[0]] + sorted(elements[1:], key=parts)
    for a in elements:
        assert a.inverse() in members and a.compose(a.inverse()).is_identity
        assert Symmetry(*invert(parts(a))) == a.inverse()
        for b in elements[:12]:
            assert a.compose(b) in members
            assert parts(a.compose(b)) == compose(parts(a), parts(b))
    # the generators generate it (closure computed here), and sympy agrees on the order
    span = {parts(elements[0])}
    frontier = list(span)
    while frontier:
        frontier = [
            c for c in {compose(parts(g), f) for f in frontier for g in G.generators} if c not in span
        ]
        span.update(frontier)
    assert span == {parts(g) for g in elements}
    assert G.as_permutation_group().order() == G.order == len(elements)
    assert G.as_permutation_group().degree == 2 * G.K + G.N - 1


def test_act_moves_and_renames_as_defined_and_keeps_the_law():
    task = CircleWalk(4, 5, "1/2")
    law = exact_law(task)
    pop = task.population()
    rows, labels = pop.tokens[:7], pop.labels[:7]
    for g in task_symmetries(task).elements()[::17]:
        new_rows, new_labels = g.act(rows, labels)
        for s, y, s2, y2 in zip(
            rows.tolist(), labels.tolist(), new_rows.tolist(), new_labels.tolist(), strict=True
        ):
            for j in range(len(s)):
                assert s2[g.positions[j]] == g.tokens[s[j]]
            assert y2 == g.labels[y]
            assert law[(tuple(s2), y2)] == law[(tuple(s), y)]


def test_act_on_a_non_symmetry_leaves_the_population():
    g = Symmetry((1, 0, 2), (0, 1, 2), (0, 1, 2))  # swap tokens 0, 1 only
    pop = CircleWalk(3, 4, "3/10").population()
    new_rows, new_labels = g.act(pop.tokens, pop.labels)
    law = exact_law(CircleWalk(3, 4, "3/10"))
    assert any(
        (tuple(s), y) not in law or law[(tuple(s), y)] != law[(tuple(r), x)]
        for s, y, r, x in zip(
            new_rows.tolist(), new_labels.tolist(), pop.tokens.tolist(), pop.labels.tolist(), strict=True
        )
    )


# ----------------------------------------------------------------------------------------------
# free parts, the paper's QA tasks, the task protocol


def test_absent_tokens_and_labels_are_free():
    """count_task(2): tokens a, b; labels n0, n1, n2. The group: the two positions (2) × the
    exchange a <-> b with n0 <-> n2 at q = 1/2 (2) × S_3 on the absent tokens n0..n2 × S_2 on the
    absent labels a, b."""
    G = task_symmetries(count_task(2))
    assert (G.free_tokens, G.free_labels, G.free_positions) == ((2, 3, 4), (0, 1), ())
    assert G.order == 2 * 2 * math.factorial(3) * math.factorial(2)


def test_qa_task1_group_by_hand():
    """QA Task 1: the five fruit positions may be permuted (the majority does not care), apple and
    orange exchanged with the label (2); the other 11 positions always carry their own word (frozen,
    11!), 6 words never occur as tokens and 17 never as labels."""
    G = task_symmetries(qa_task1())
    assert len(G.free_positions) == 11 and len(G.free_tokens) == 6 and len(G.free_labels) == 17
    assert G.order == 120 * 2 * math.factorial(11) * math.factorial(6) * math.factorial(17)
    assert G.as_permutation_group().order() == G.order
    with pytest.raises(ValueError, match=r"above limit=1000000"):
        G.elements()


def test_qa_task2_group_by_hand():
    """QA Task 2: the repeated words I, prefer, an sit at two positions each, which may be swapped (2^3)
    and the three pairs permuted with their words (3!); the A and B slots may be swapped and/or
    apple <-> orange exchanged with the label (4); 10 frozen positions, 4 absent tokens, 17 labels."""
    G = task_symmetries(qa_task2())
    assert (len(G.free_positions), len(G.free_tokens), len(G.free_labels)) == (10, 4, 17)
    assert G.order == 8 * 6 * 4 * math.factorial(10) * math.factorial(4) * math.factorial(17)


class BareTask:
    """Only what the protocol section of the brief names: K, N, vocab and population() with tokens,
    labels and exact_probs() (zeros included), not an rwtoolkit.tasks.Population."""

    def __init__(self, task):
        self.K, self.N, self.vocab = task.K, task.N, task.vocab
        self._task = task

    def population(self):
        pop = self._task.population()
        tokens = np.concatenate([pop.tokens, pop.tokens[:1][:, ::-1]])
        labels = np.concatenate([pop.labels, [0]])
        probs = pop.exact_probs() + [sp.Integer(0)]
        return SimpleNamespace(tokens=tokens, labels=labels, exact_probs=lambda: probs)


def test_any_object_with_the_protocol_members_works():
    task = first_of_two_task(4, "1/3")
    assert set(task_symmetries(BareTask(task)).elements()) == set(task_symmetries(task).elements())


# ----------------------------------------------------------------------------------------------
# descriptions and JSON


def test_descriptions_name_the_parts_in_the_tasks_words():
    assert Symmetry((0, 1, 2), (0, 1, 2), (0, 1, 2)).describe() == "identity"
    g = Symmetry((1, 2, 0), (0, 1, 2), (1, 2, 0))
    assert g.describe(["a", "b", "c"]) == "tokens (a b c), positions shifted j -> j+1 (mod 3)"
    assert Symmetry((0, 1), (1, 0), (3, 2, 1, 0)).describe() == "labels (0 1), positions reversed j -> 3-j"
    assert Symmetry((0, 1), (0, 1), (1, 0, 3, 2)).describe() == "positions (0 1)(2 3)"
    assert task_symmetries(CircleWalk(3, 4, "1/2")).describe() == [
        "tokens and labels (0 1 2)",
        "tokens and labels (1 2)",
    ]
    G = task_symmetries(first_of_two_task(3))
    assert G.describe() == [
        "labels (a b), positions reversed j -> 2-j",
        "tokens (a b), positions reversed j -> 2-j",
    ]
    assert G.describe(["x", "y", "z"])[1] == "tokens (x y), positions reversed j -> 2-j"


def test_to_json_is_plain_json_with_the_generators():
    G = task_symmetries(count_task(2))
    data = json.loads(json.dumps(G.to_json()))
    assert data["order"] == G.order and (data["K"], data["N"]) == (5, 3)
    assert [tuple(g["tokens"]) for g in data["generators"]] == [g.tokens for g in G.generators]
    assert [g["description"] for g in data["generators"]] == G.describe()
    assert data["free_tokens"] == [2, 3, 4]
    assert isinstance(G, TaskGroup)


# ----------------------------------------------------------------------------------------------
# refusals: one line each


def one_line(excinfo) -> bool:
    return "\n" not in str(excinfo.value)


def test_a_symbolic_law_is_refused():
    with pytest.raises(ValueError, match=r"depends on symbols \['p'\]; substitute numbers") as e:
        task_symmetries(CircleWalk(3, 4, "p"))
    assert one_line(e)


def test_too_much_work_is_refused_with_the_estimate():
    with pytest.raises(
        ValueError,
        match=r"~[0-9.]+e[0-9]+ candidate checks \(.* pairs x n=1280 inputs\), above max_work=100, .*raise max_work",
    ) as e:
        task_symmetries(CircleWalk(5, 9, "1/2"), max_work=100)
    assert one_line(e)
    assert task_symmetries(CircleWalk(5, 9, "1/2")).order == 10  # the default budget suffices


def test_a_group_far_above_the_estimate_is_found_along_the_stabiliser_chain():
    """permutation_task(7, 1): the label is the token at position 1, so π fixes 1 and λ = τ: order
    7!·6! = 3628800, with 7!·6!·5040 ~ 1.8e10 unpruned checks; the default budget suffices."""
    with pytest.raises(ValueError, match=r"~1\.8e10 candidate checks"):
        task_symmetries(permutation_task(7, 1), max_work=1000)
    G = task_symmetries(permutation_task(7, 1))
    assert G.order == math.factorial(7) * math.factorial(6) == G.as_permutation_group().order()


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "10", None])
def test_bad_max_work_is_refused(bad):
    with pytest.raises(ValueError, match="max_work") as e:
        task_symmetries(CircleWalk(3, 4, "1/2"), max_work=bad)
    assert one_line(e)


def test_a_non_task_and_a_bad_symmetry_are_refused():
    with pytest.raises(ValueError, match="is not a task") as e:
        task_symmetries(42)  # type: ignore[arg-type]
    assert one_line(e)
    with pytest.raises(ValueError, match="not a permutation"):
        Symmetry((0, 0), (0, 1), (0,))
    with pytest.raises(ValueError, match="share the vocabulary"):
        Symmetry((0, 1), (0, 1, 2), (0,))
