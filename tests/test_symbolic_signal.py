"""The token-average signal C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ (docs/theory.md#signal): values, zeros, vanishing sets."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from rwsymbolic import signal_matrix, signal_offsets, signal_report, vanishing_set
from rwtasks import QA_VOCAB, CircleWalk, FiniteTask, qa_task1, qa_task2, symbol

p = symbol("p")


def _signal_by_hand(pop) -> sp.Matrix:
    """Independent oracle: C summed input by input from the population (no counting tricks)."""
    K, length = pop.K, pop.N - 1
    probs = pop.exact_probs()
    e_yx = sp.zeros(K, K)
    e_y = sp.zeros(K, 1)
    e_x = sp.zeros(K, 1)
    for n in range(pop.size):
        q = probs[n]
        y = int(pop.labels[n])
        e_y[y] += q
        for token in pop.tokens[n]:
            e_yx[y, int(token)] += q / length
            e_x[int(token)] += q / length
    return (e_yx - e_y * e_x.T).applyfunc(sp.expand)


def test_qa_task2_signal_is_exactly_zero():
    # Both questions hold the same bag of words, so x̄ is the same for both labels (docs/theory.md#qa-tasks).
    C = signal_matrix(qa_task2())
    assert C.shape == (19, 19)
    assert C == sp.zeros(19, 19)
    assert vanishing_set(qa_task2()).all_p


def test_qa_task1_signal_has_the_hand_computed_fruit_entries():
    """By hand: x̄_apple = #apples/16, P(y=apple) = 1/2, E[#apples] = 5/2, and
    E[1{y=apple}·#apples] = (C(5,3)·3 + C(5,4)·4 + C(5,5)·5)/32 = 55/32, so
    C[apple, apple] = 55/512 - (1/2)(5/32) = 15/512; rows and columns sum to zero and every
    non-fruit token appears once in every question, so only the 2×2 fruit block is nonzero."""
    C = signal_matrix(qa_task1())
    apple, orange = QA_VOCAB.index("apple"), QA_VOCAB.index("orange")
    assert C[apple, apple] == sp.Rational(15, 512)
    assert C[orange, orange] == sp.Rational(15, 512)
    assert C[apple, orange] == C[orange, apple] == sp.Rational(-15, 512)
    nonzero = {(a, b) for a in range(19) for b in range(19) if C[a, b] != 0}
    assert nonzero == {(apple, apple), (apple, orange), (orange, apple), (orange, orange)}
    report = signal_report(qa_task1())
    assert not report.vanishes and not report.vanishing.all_p


@pytest.mark.parametrize("task", [qa_task1(), qa_task2()], ids=["qa1", "qa2"])
def test_finite_task_signal_matches_input_by_input_sum(task):
    assert signal_matrix(task) == _signal_by_hand(task.population())


@pytest.mark.parametrize("K,N", [(3, 2), (3, 5), (4, 6), (5, 7), (6, 4), (7, 7), (8, 6)])
def test_circle_transfer_matrix_signal_equals_enumeration_with_symbolic_p(K, N):
    walk = CircleWalk(K, N, "p")
    structured = signal_matrix(walk, "structure")
    assert (structured - _signal_by_hand(walk.population())).applyfunc(sp.expand) == sp.zeros(K, K)
    assert (structured - signal_matrix(walk, "enumerate")).applyfunc(sp.expand) == sp.zeros(K, K)


@pytest.mark.parametrize("p_value", ["0", "1", "1/2", "3/10", "1/7"])
def test_circle_signal_with_rational_p_equals_symbolic_signal_at_p(p_value):
    walk = CircleWalk(5, 7, p_value)
    at_p = signal_matrix(CircleWalk(5, 7, "p")).subs(p, walk.p)
    assert signal_matrix(walk) == at_p
    assert signal_matrix(walk) == _signal_by_hand(walk.population())


def test_circle_signal_for_n2_is_one_step_transition_minus_mean():
    """N = 2: x̄ = x_1, so C = E[e_{s_2} e_{s_1}ᵀ] - (1/K²)11ᵀ = (1/K)Πᵀ - (1/K²)11ᵀ (by hand)."""
    walk = CircleWalk(5, 2, "p")
    expected = walk.transition_matrix().T / 5 - sp.ones(5, 5) / 25
    assert (signal_matrix(walk) - expected).applyfunc(sp.expand) == sp.zeros(5, 5)


def test_circle_signal_offsets_are_the_circulant_entries():
    walk = CircleWalk(6, 5, "p")
    C, c = signal_matrix(walk), signal_offsets(walk)
    assert all(C[a, b] == c[(a - b) % 6] for a in range(6) for b in range(6))
    # Rows of C sum to zero: Σ_b E[e_y x̄_b] = E[e_y] = Σ_b E[e_y]E[x̄_b].
    assert sp.expand(sum(c)) == 0


def test_finite_task_with_one_symbolic_probability_has_exact_vanishing_points():
    """Two inputs [0,1]->label 0 w.p. q and [1,1]->label 1 w.p. 1-q; by hand x̄_0 = 1/2 for input 1
    and 0 for input 2, so C[0,0] = q/2 - q·(q/2) = q(1-q)/2: zero exactly at q ∈ {0, 1}."""
    q = symbol("q")
    task = FiniteTask([[0, 1], [1, 1]], [0, 1], [q, 1 - q], K=2)
    C = signal_matrix(task)
    assert sp.expand(C[0, 0] - q * (1 - q) / 2) == 0
    v = vanishing_set(task)
    assert v.symbol == q and not v.all_p and v.points == (0, 1)


@pytest.mark.parametrize("K,N", [(4, 5), (4, 7), (5, 11), (6, 8)])
def test_circle_vanishing_set_equals_generic_gcd_of_enumerated_matrix(K, N):
    """The circle fast path (gcd in Q[p] of the c_d) against the generic path on the enumerated C."""
    fast, generic = vanishing_set((K, N)), vanishing_set(signal_matrix(CircleWalk(K, N, "p"), "enumerate"))
    assert fast.points == generic.points and sp.expand(fast.gcd - generic.gcd) == 0


def test_vanishing_set_keeps_irrational_roots_exact():
    x = symbol("p")
    matrix = sp.Matrix([[2 * x**2 - 1, (2 * x**2 - 1) * x], [0, (2 * x**2 - 1) * (x - 3)]])
    v = vanishing_set(matrix)
    assert v.points == (sp.sqrt(2) / 2,)
    assert sp.sqrt(2) / 2 in v and sp.Rational(1, 2) not in v and 0.5 not in v
    assert (
        0.5 in vanishing_set((4, 7)) and "1/2" in vanishing_set((4, 7)) and 0.25 not in vanishing_set((4, 7))
    )
    root = vanishing_set(sp.Matrix([[x**3 - x - sp.Rational(1, 10)], [x**5 - 1]]))
    assert root.points == ()  # gcd 1 even though the first entry has a root in [0, 1]


def test_vanishing_set_refuses_two_symbols_and_non_polynomials():
    a, b = symbol("a"), symbol("b")
    with pytest.raises(ValueError, match="2 symbols"):
        vanishing_set(sp.Matrix([[a - b]]))
    with pytest.raises(ValueError, match="not a polynomial"):
        vanishing_set(sp.Matrix([[1 / (1 + a)]]))


@pytest.mark.parametrize(
    "bad,message",
    [((2, 5), "K=2 is out of range"), ((4, 1), "N=1 is out of range"), ((4,), "give \\(K, N\\)")],
    ids=["K<3", "N<2", "short-tuple"],
)
def test_vanishing_set_rejects_bad_sizes(bad, message):
    with pytest.raises(ValueError, match=message):
        vanishing_set(bad)


def test_signal_matrix_rejects_unknown_method_and_structure_for_finite_tasks():
    with pytest.raises(ValueError, match="method='fast'"):
        signal_matrix(CircleWalk(3, 3, "p"), "fast")
    with pytest.raises(ValueError, match="needs a CircleWalk"):
        signal_matrix(qa_task1(), "structure")


def test_symbolic_circle_report_refuses_factoring_huge_n_with_the_limit():
    with pytest.raises(ValueError, match="N=500 is too large to factor"):
        signal_report(CircleWalk(4, 500, "p"))


def test_float_values_in_numeric_signal_agree_with_a_float_computation():
    """Float check against numpy (tolerance 1e-12: sums of ≤ 20 doubles of size ≤ 1)."""
    walk = CircleWalk(6, 9, "3/10")
    Pi = walk.transition_matrix_float()
    expected = sum(np.linalg.matrix_power(Pi.T, m) for m in range(1, 9)) / (6 * 8) - 1 / 36
    got = np.array(signal_matrix(walk).tolist(), dtype=float)
    assert np.max(np.abs(got - expected)) < 1e-12
