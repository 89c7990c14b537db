"""The token-average signal C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ (docs/theory.md#signal): values, zeros, vanishing sets."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.engines.exact import signal_matrix, signal_offsets, signal_report, vanishing_set
from rwtoolkit.engines.exact.analysis._signal import (
    VanishingSet,
    _labelled_lines,
    _roots_in_unit_interval,
    signal_json,
    write_signal_json,
)
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import QA_VOCAB, CircleWalk, FiniteTask, qa_task1, qa_task2, symbol

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


# Hand-derived circle signals (no code under test). Steps s_{i+1} - s_i = +1 w.p. p, -1 w.p. 1-p, and
# c_d = (1/(K(N-1))) Σ_{m=1}^{N-1} P(S_m ≡ d mod K) - 1/K² with S_m the sum of m steps.
# K = 3, N = 4: P(S_1 ≡ ·) = (0, p, 1-p), P(S_2 ≡ ·) = (2p(1-p), (1-p)², p²),
# P(S_3 ≡ ·) = (p³ + (1-p)³, 3p²(1-p), 3p(1-p)²); summed, minus 3·(1/9)·... gives
_C34 = (p * (p - 1) / 9, -p * (p - 1) * (3 * p - 1) / 9, p * (p - 1) * (3 * p - 2) / 9)
# K = 4, N = 3: P(S_1 ≡ ·) = (0, p, 0, 1-p), P(S_2 ≡ ·) = (2p(1-p), 0, p² + (1-p)², 0), so
_C43 = (-((2 * p - 1) ** 2) / 16, (2 * p - 1) / 16, (2 * p - 1) ** 2 / 16, (1 - 2 * p) / 16)
_HEAD = "Token-average signal C = E[e_y xbar^T] - E[e_y] E[xbar]^T: task "


def _same(got, expected) -> bool:
    """``got`` (an expression or the exact string of a JSON file) equals ``expected``, both over real symbols."""
    expected = sp.sympify(expected)
    return sp.expand(sp.sympify(got, locals={str(s): s for s in expected.free_symbols}) - expected) == 0


def _two_input_task():
    """[0,1] -> label 0 w.p. q, [1,1] -> label 1 w.p. 1-q: C = q(1-q)/2 · [[1, -1], [-1, 1]] by hand
    (E[e_y x̄ᵀ] = [[q/2, q/2], [0, 1-q]], E[e_y] = (q, 1-q), E[x̄] = (q/2, 1-q/2))."""
    q = symbol("q")
    return q, FiniteTask([[0, 1], [1, 1]], [0, 1], [q, 1 - q], K=2)


def test_circle_offsets_match_the_hand_derived_polynomials():
    assert all(_same(c, e) for c, e in zip(signal_offsets(CircleWalk(3, 4, "p")), _C34, strict=True))
    assert all(_same(c, e) for c, e in zip(signal_offsets(CircleWalk(4, 3, "p")), _C43, strict=True))


@pytest.mark.parametrize(
    "K,N,points,gcd",
    [
        (3, 4, (0, 1), p**2 - p),  # gcd of _C34 = p(p-1): 3 | N-1
        (4, 3, (sp.Rational(1, 2),), p - sp.Rational(1, 2)),  # gcd of _C43 = 2p-1: K = 4, N odd, 4 ∤ N-1
        (3, 2, (), sp.Integer(1)),  # c_0 = -1/9 (S_1 ≢ 0): C != 0 anywhere
    ],
)
def test_circle_vanishing_set_is_the_hand_derived_one_in_full(K, N, points, gcd):
    expected = VanishingSet(p, False, points, gcd)
    assert vanishing_set((K, N)) == expected
    assert vanishing_set(CircleWalk(K, N, "p")) == expected
    assert vanishing_set(CircleWalk(K, N, "1/3")) == expected  # a numeric p: still over the symbol p
    own = symbol("r")
    assert vanishing_set(CircleWalk(K, N, own)) == VanishingSet(own, False, points, gcd.subs(p, own))


def test_vanishing_set_accepts_the_smallest_sizes_and_refuses_large_n():
    assert vanishing_set((3, 2)).points == ()  # K = 3 and N = 2 are allowed
    with pytest.raises(ValueError) as err:
        vanishing_set(CircleWalk(3, 257, "p"))
    assert str(err.value) == (
        "N=257 is too large for the exact vanishing set in p: N must be <= 256 "
        "(the entries are polynomials of degree N-1)"
    )
    assert vanishing_set(CircleWalk(3, 256, "p")).points == (0, 1)  # 3 | 255


def test_generic_vanishing_set_fields_in_every_branch():
    q, task = _two_input_task()
    assert vanishing_set(task) == VanishingSet(q, False, (0, 1), q**2 - q)
    assert vanishing_set(qa_task1()) == VanishingSet(None, False, (), sp.Integer(1))
    assert vanishing_set(qa_task2()) == VanishingSet(None, True, (), sp.Integer(0))
    # Entries that expand to 0 although written with q: C is identically zero in q.
    assert vanishing_set(sp.Matrix([[q * (q + 1) - q**2 - q]])) == VanishingSet(q, True, (), sp.Integer(0))
    assert vanishing_set(sp.Matrix([[q], [q - 1]])) == VanishingSet(q, False, (), sp.Integer(1))
    # A double root at 1/2 counted once, roots -1 and 2 outside [0, 1], the ends 0 and 1 kept.
    half = sp.Rational(1, 2)
    twice = sp.Matrix([[(q - half) ** 2 * (q - 2) * (q + 1)], [(q - half) ** 2 * (q - 2) * (q + 1) * q]])
    assert vanishing_set(twice) == VanishingSet(
        q, False, (half,), sp.expand((q - half) ** 2 * (q - 2) * (q + 1))
    )
    ends = sp.Matrix([[q * (q - 1) * (q + 1) * (q - 2)]])
    assert vanishing_set(ends) == VanishingSet(q, False, (0, 1), sp.expand(q * (q - 1) * (q + 1) * (q - 2)))
    assert _roots_in_unit_interval(sp.Poly(3, q), q) == VanishingSet(q, False, (), sp.Integer(1))
    # The gcd reaches degree 1 after the first entry and stays there: p = 1/2 only.
    assert vanishing_set(sp.Matrix([[q - half], [2 * q - 1], [q**2 - q / 2]])) == VanishingSet(
        q, False, (half,), q - half
    )


def test_vanishing_set_refuses_irrational_coefficients_with_its_message():
    """sqrt(2)·q is a polynomial in q, but not over Q: the rational gcd and root isolation do not apply."""
    q = symbol("q")
    with pytest.raises(ValueError) as err:
        vanishing_set(sp.Matrix([[sp.sqrt(2) * q], [q - 1]]))
    assert str(err.value) == (
        "the entry sqrt(2)*q of C is not a polynomial in q with rational coefficients; "
        "the exact vanishing set is computed for polynomial entries only"
    )


def test_vanishing_set_membership_in_every_branch():
    assert 0.3 in vanishing_set(qa_task2()) and "7/9" in vanishing_set(qa_task2())  # C = 0 for every value
    assert 0.3 not in vanishing_set(qa_task1())
    with pytest.raises(ValueError, match=r"^value=nan is not a finite number"):
        float("nan") in vanishing_set((4, 5))  # noqa: B015


def test_vanishing_set_error_messages_name_the_symbols_and_the_way_out():
    a, b = symbol("a"), symbol("b")
    message = (
        "C depends on 2 symbols ['a', 'b']; the vanishing set is computed for one parameter: "
        "substitute numbers for the others"
    )
    with pytest.raises(ValueError) as err:
        vanishing_set(sp.Matrix([[a - b]]))
    assert str(err.value) == message
    with pytest.raises(ValueError, match=r"^method='fast' must be one of auto, structure, enumerate$"):
        signal_matrix(CircleWalk(3, 3, "p"), "fast")
    with pytest.raises(ValueError, match=r"needs a CircleWalk, got FiniteTask$"):
        signal_matrix(qa_task1(), "structure")
    with pytest.raises(ValueError, match=r"^signal_offsets needs a CircleWalk, got FiniteTask$"):
        signal_offsets(qa_task1())
    with pytest.raises(ValueError, match=r"^signal_report needs a CircleWalk or FiniteTask, got Population$"):
        signal_report(qa_task1().population())


def test_signal_matrix_methods_for_a_population_and_a_finite_task():
    _, task = _two_input_task()
    q = symbol("q")
    expected = q * (1 - q) / 2 * sp.Matrix([[1, -1], [-1, 1]])
    for got in (
        signal_matrix(task.population()),
        signal_matrix(task, "enumerate"),
        signal_matrix(task, "auto"),
    ):
        assert (got - expected).applyfunc(sp.expand) == sp.zeros(2, 2)
    walk = CircleWalk(3, 4, "p")
    expected34 = sp.Matrix(3, 3, lambda a, b_: _C34[(a - b_) % 3])
    for method in ("auto", "structure", "enumerate"):
        assert (signal_matrix(walk, method) - expected34).applyfunc(sp.expand) == sp.zeros(3, 3)


def test_symbolic_factoring_limit_is_n_64_and_rational_p_is_not_limited():
    assert signal_report(CircleWalk(3, 64, "p")).vanishing == VanishingSet(
        p, False, (0, 1), p**2 - p
    )  # 3 | 63
    message = (
        "N=65 is too large to factor the signal with symbolic p: N must be <= 64 (K=3 polynomials of "
        "degree 64); give a rational p, or use signal_matrix / vanishing_set, which do not factor"
    )
    with pytest.raises(ValueError) as err:
        signal_report(CircleWalk(3, 65, "p"))
    assert str(err.value) == message
    assert signal_report(CircleWalk(3, 65, "1/2")).factored_offsets is not None


def test_circle_report_fields_are_the_hand_derived_values():
    report = signal_report(CircleWalk(3, 4, "p"))
    assert (report.task, report.K, report.N, report.p, report.vocab) == ("circle", 3, 4, p, None)
    assert all(_same(c, e) for c, e in zip(report.offsets, _C34, strict=True))
    assert [str(f) for f in report.factored_offsets] == [str(sp.factor(e)) for e in _C34]
    expected = sp.Matrix(3, 3, lambda a, b: _C34[(a - b) % 3])
    assert (report.matrix - expected).applyfunc(sp.expand) == sp.zeros(3, 3)
    assert [str(f) for f in report.factored] == [str(sp.factor(e)) for e in expected]
    assert report.vanishing == VanishingSet(p, False, (0, 1), p**2 - p)
    assert not report.vanishes
    numeric = signal_report(CircleWalk(3, 4, "1/3"))  # c_0(1/3) = -2/81: the matrix at p, the set over p
    assert numeric.p == sp.Rational(1, 3) and numeric.matrix[0, 0] == sp.Rational(-2, 81)
    assert numeric.vanishing == VanishingSet(p, False, (0, 1), p**2 - p)
    at_one = signal_report(CircleWalk(3, 4, 1))  # every c_d has the factor p - 1
    assert at_one.vanishes and at_one.matrix == sp.zeros(3, 3)
    large = signal_report(CircleWalk(3, 257, "1/2"))
    assert large.vanishing is None and large.offsets is not None
    # N = 256 is the largest N with a vanishing set over p (3 | 255: {0, 1}).
    assert signal_report(CircleWalk(3, 256, "1/2")).vanishing == VanishingSet(p, False, (0, 1), p**2 - p)


def test_finite_report_fields_are_the_hand_derived_values():
    q, task = _two_input_task()
    report = signal_report(task)
    assert (report.task, report.K, report.N, report.p, report.vocab) == ("finite", 2, 3, None, None)
    assert (report.offsets, report.factored_offsets) == (None, None)
    assert [str(f) for f in report.factored] == [str(sp.factor(s * q * (1 - q) / 2)) for s in (1, -1, -1, 1)]
    qa = signal_report(qa_task1())
    assert (qa.task, qa.K, qa.N, qa.p, qa.vocab) == ("qa1", 19, 17, None, QA_VOCAB)


def test_vanishing_set_text_in_every_case():
    q = symbol("q")
    assert str(VanishingSet(None, True, (), sp.Integer(0))) == "C = 0 (no free parameter)"
    assert str(VanishingSet(None, False, (), sp.Integer(1))) == "C != 0 (no free parameter)"
    assert str(VanishingSet(q, True, (), sp.Integer(0))) == "all q in [0, 1] (C is identically zero)"
    assert str(VanishingSet(q, False, (), sp.Integer(1))) == "empty: C != 0 for every q in [0, 1]"
    half = sp.Rational(1, 2)
    assert str(VanishingSet(q, False, (0, half, 1), q)) == "{0, 1/2, 1}"
    assert str(VanishingSet(q, False, (sp.sqrt(2) / 2,), q)) == "{sqrt(2)/2}"


@pytest.mark.parametrize("K", [3, 20], ids=["K=3", "K=20-width-160"])
def test_render_of_a_numeric_circle_prints_the_hand_computed_matrix(K):
    """N = 2, p = 1: C = Πᵀ/K - 1/K², so C[a, b] = (K-1)/K² when a = b + 1 (mod K), else -1/K². For
    K = 20 the entries 19/400 and -1/400 have 6 characters, and 20·(2 + 6) = 160 is exactly the width up
    to which the full matrix is printed, one unwrapped line per row."""
    expected = sp.Matrix(K, K, lambda a, b: sp.Rational(K - 1 if (a - b) % K == 1 else -1, K * K))
    lines = [
        _HEAD + f"circle, K={K}, N=2, p=1",
        "",
        sp.pretty(expected, wrap_line=False),
        "",
        "C is exactly zero: no",
        f"vanishing set of C over p in [0, 1] for K={K}, N=2: empty: C != 0 for every p in [0, 1]",
    ]
    assert signal_report(CircleWalk(K, 2, 1)).render() == "\n".join(lines)


def test_render_of_a_symbolic_circle_prints_the_circulant_and_factored_offsets():
    c = sp.symbols("c0:3")
    pattern = sp.Matrix(3, 3, lambda a, b: c[(a - b) % 3])
    lines = [
        _HEAD + "circle, K=3, N=4, p=p",
        "",
        "C is circulant, C[a, b] = c_{(a-b) mod K} (0-based indices):",
        "",
        sp.pretty(pattern, wrap_line=False),
        "",
        "factored:",
        *(f"  c{d} = {sp.factor(e)}" for d, e in enumerate(_C34)),
        "",
        "C is exactly zero: no",
        "vanishing set of C over p in [0, 1] for K=3, N=4: {0, 1}",
    ]
    assert signal_report(CircleWalk(3, 4, "p")).render() == "\n".join(lines)


def test_render_of_a_wide_numeric_circle_prints_offsets_with_floats():
    """K = 40, N = 2, p = 1: c_1 = 1/40 - 1/1600 = 39/1600, every other c_d = -1/1600; 40 columns of
    9 characters exceed the 160-character width, so the circulant pattern is printed."""
    text = signal_report(CircleWalk(40, 2, 1)).render().split("\n")
    assert text[0] == _HEAD + "circle, K=40, N=2, p=1"
    assert text[2] == "C is circulant, C[a, b] = c_{(a-b) mod K} (0-based indices):"
    offsets = [line for line in text if line.startswith("  c")]
    assert offsets[0] == f"  c0 = -1/1600  (~ {-1 / 1600:.17g})"
    assert offsets[1] == f"  c1 = 39/1600  (~ {39 / 1600:.17g})"
    assert len(offsets) == 40 and "factored:" not in text
    assert (
        text[-1] == "vanishing set of C over p in [0, 1] for K=40, N=2: empty: C != 0 for every p in [0, 1]"
    )
    c = sp.symbols("c0:40")
    pattern = sp.pretty(sp.Matrix(40, 40, lambda a, b: c[(a - b) % 40]), wrap_line=False).split("\n")
    assert text[4 : 4 + len(pattern)] == pattern  # one line per row, not wrapped at 80 characters
    large = signal_report(CircleWalk(3, 257, "1/2")).render().split("\n")
    assert large[0] == _HEAD + "circle, K=3, N=257, p=1/2" and "C is exactly zero: no" in large
    assert large[-1] == (
        "vanishing set of C over p: not computed for N > 256 (degree N-1 polynomials in p); "
        "the README states the rule for all K and N"
    )


def test_render_of_a_symbolic_finite_task_lists_the_factored_nonzero_entries():
    q, task = _two_input_task()
    expected = q * (1 - q) / 2 * sp.Matrix([[1, -1], [-1, 1]])
    report = signal_report(task)
    lines = [
        _HEAD + "finite, K=2, N=3",
        "",
        sp.pretty(report.matrix, wrap_line=False),
        "",
        "factored nonzero entries:",
        *(f"  C[{a}, {b}] = {sp.factor(expected[a, b])}" for a in range(2) for b in range(2)),
        "",
        "C is exactly zero: no",
        "vanishing set: {0, 1}",
    ]
    assert (report.matrix - expected).applyfunc(sp.expand) == sp.zeros(2, 2)
    assert report.render() == "\n".join(lines)


def test_render_of_qa_tasks_names_rows_and_columns_by_their_words():
    """qa_task1: the 2×2 fruit block ±15/512 (hand value above); qa_task2: C = 0."""
    apple, orange = QA_VOCAB.index("apple"), QA_VOCAB.index("orange")
    first, second = ("apple", "orange") if apple < orange else ("orange", "apple")
    lines = [
        _HEAD + "qa1, K=19, N=17",
        "",
        "rows = label y, columns = token; the rows and columns not shown are all 0:",
        "",
        f"label \\ token  {first:>7}  {second:>7}",
        f"{first:<13}  {'15/512':>7}  {'-15/512':>7}",
        f"{second:<13}  {'-15/512':>7}  {'15/512':>7}",
        "",
        "nonzero entries (4 of 361), C[label, token]:",
        f"  C[{first}, {first}] = 15/512",
        f"  C[{first}, {second}] = -15/512",
        f"  C[{second}, {first}] = -15/512",
        f"  C[{second}, {second}] = 15/512",
        "",
        "C is exactly zero: no",
        "vanishing set: C != 0 (no free parameter)",
    ]
    assert signal_report(qa_task1()).render() == "\n".join(lines)
    zero = [
        _HEAD + "qa2, K=19, N=19",  # two 18-token questions
        "",
        f"C = 0: all 19 × 19 entries C[label, token] are exactly 0 (labels and tokens: {', '.join(QA_VOCAB)}).",
        "",
        "C is exactly zero: yes",
        "vanishing set: C = 0 (no free parameter)",
    ]
    assert signal_report(qa_task2()).render() == "\n".join(zero)


def test_labelled_lines_show_every_row_and_column_when_all_hold_a_nonzero_entry():
    """A full 2×2 table: no "not shown" note; the 18-letter word (longer than the 13-character corner)
    sets the first column's width, each column is as wide as its longest word or value, 2 spaces apart."""
    long = "a_much_longer_word"
    m = sp.Matrix([[sp.Rational(1, 2), -1], [3, sp.Rational(-1, 4)]])
    assert _labelled_lines(m, ("a", long)) == [
        "rows = label y, columns = token:",
        "",
        "label \\ token" + " " * 9 + "a" + "  " + long,
        "a" + " " * 19 + "1/2" + "  " + " " * 16 + "-1",
        long + " " * 4 + "3" + "  " + " " * 14 + "-1/4",
        "",
        "nonzero entries (4 of 4), C[label, token]:",
        "  C[a, a] = 1/2",
        f"  C[a, {long}] = -1",
        f"  C[{long}, a] = 3",
        f"  C[{long}, {long}] = -1/4",
    ]


def _json_number(entry, value) -> bool:
    value = sp.sympify(value)
    if value.free_symbols:
        return entry["float"] is None and _same(entry["exact"], value)
    return entry["float"] == float(value) and _same(entry["exact"], value)


def test_signal_json_of_a_symbolic_circle_holds_the_hand_derived_values():
    import jsonschema

    data = signal_json(signal_report(CircleWalk(3, 4, "p")))
    jsonschema.Draft202012Validator(load_schema("signal")).validate(data)
    assert load_schema("signal")["title"] == "rw signal output (format rw-signal, version 1)"
    assert {k: data[k] for k in ("format", "version", "task", "K", "N", "vocab", "is_zero")} == {
        "format": "rw-signal",
        "version": 1,
        "task": "circle",
        "K": 3,
        "N": 4,
        "vocab": None,
        "is_zero": False,
    }
    assert data["p"] == {"exact": "p", "float": None}
    for a in range(3):
        for b in range(3):
            e = _C34[(a - b) % 3]
            assert _json_number(data["matrix"][a][b], e) and data["matrix"][a][b]["factored"] == str(
                sp.factor(e)
            )
    assert len(data["circulant_offsets"]) == 3
    for got, e in zip(data["circulant_offsets"], _C34, strict=True):
        assert _json_number(got, e) and got["factored"] == str(sp.factor(e))
    assert data["vanishing_set"] == {
        "symbol": "p",
        "interval": [0, 1],
        "all": False,
        "points": [{"exact": "0", "float": 0.0}, {"exact": "1", "float": 1.0}],
        "gcd": "p**2 - p",
        "text": "{0, 1}",
    }


def test_signal_json_of_finite_tasks_holds_the_hand_derived_values():
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema("signal"))
    q, task = _two_input_task()
    data = signal_json(signal_report(task))
    validator.validate(data)
    assert (data["task"], data["K"], data["N"], data["p"], data["vocab"]) == ("finite", 2, 3, None, None)
    assert data["circulant_offsets"] is None and data["is_zero"] is False
    for a in range(2):
        for b in range(2):
            e = (1 if a == b else -1) * q * (1 - q) / 2
            assert _json_number(data["matrix"][a][b], e) and data["matrix"][a][b]["factored"] == str(
                sp.factor(e)
            )
    assert data["vanishing_set"]["symbol"] == "q" and data["vanishing_set"]["gcd"] == "q**2 - q"
    qa = signal_json(signal_report(qa_task2()))
    validator.validate(qa)
    assert qa["vocab"] == list(QA_VOCAB) and qa["is_zero"] is True
    assert qa["matrix"][0][0] == {"exact": "0", "float": 0.0, "factored": "0"}
    assert qa["vanishing_set"] == {
        "symbol": None,
        "interval": [0, 1],
        "all": True,
        "points": [],
        "gcd": "0",
        "text": "C = 0 (no free parameter)",
    }
    numeric = signal_json(signal_report(CircleWalk(3, 2, 1)))
    validator.validate(numeric)
    assert numeric["p"] == {"exact": "1", "float": 1.0}
    assert numeric["matrix"][1][0] == {"exact": "2/9", "float": 2 / 9, "factored": "2/9"}
    assert numeric["vanishing_set"]["points"] == [] and numeric["vanishing_set"]["gcd"] == "1"
    assert signal_json(signal_report(CircleWalk(3, 257, "1/2")))["vanishing_set"] is None


def test_write_signal_json_writes_indented_json_with_a_newline(tmp_path):
    report = signal_report(CircleWalk(3, 2, 1))
    path = write_signal_json(report, tmp_path / "c.json")
    assert path == tmp_path / "c.json"
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(signal_json(report), indent=1) + "\n"
    assert text.startswith('{\n "format": "rw-signal",\n "version": 1,\n')
    missing = tmp_path / "no" / "c.json"
    with pytest.raises(ValueError) as err:
        write_signal_json(report, missing)
    assert str(err.value) == f"--json {missing}: the folder {missing.parent} does not exist"
    assert not missing.parent.exists()


def test_auto_method_uses_the_transfer_matrices_for_circle_walks():
    """N = 60 is far beyond enumeration (3·2^59 walks): "auto" must take the structured path. By hand at
    p = 1: S_m = m, so c_d = n_d/(3·59) - 1/9 with n_d = #{1 <= m <= 59 : m ≡ d (mod 3)} = (19, 20, 20)."""
    walk = CircleWalk(3, 60, 1)
    counts = (19, 20, 20)  # m = 1..59: 19 multiples of 3, 20 ≡ 1, 20 ≡ 2
    expected = sp.Matrix(3, 3, lambda a, b: sp.Rational(counts[(a - b) % 3], 3 * 59) - sp.Rational(1, 9))
    assert signal_matrix(walk) == expected and signal_matrix(walk, "auto") == expected
    with pytest.raises(ValueError, match="above the limit"):
        signal_matrix(walk, "enumerate")


def test_render_of_a_symbolic_finite_task_skips_the_zero_entries():
    """The two-input task with a third, unused word (K = 3): row 2 and column 2 of C are 0 and not listed."""
    q = symbol("q")
    task = FiniteTask([[0, 1], [1, 1]], [0, 1], [q, 1 - q], K=3)
    text = signal_report(task).render().split("\n")
    start = text.index("factored nonzero entries:")
    signs = {(0, 0): 1, (0, 1): -1, (1, 0): -1, (1, 1): 1}
    assert text[start + 1 : start + 6] == [
        *(f"  C[{a}, {b}] = {sp.factor(s * q * (1 - q) / 2)}" for (a, b), s in signs.items()),
        "",
    ]


def test_labelled_lines_note_hidden_columns_even_when_every_row_is_shown():
    assert _labelled_lines(sp.Matrix([[1, 0], [2, 0]]), ("a", "b"))[:5] == [
        "rows = label y, columns = token; the rows and columns not shown are all 0:",
        "",
        "label \\ token  a",
        "a              1",
        "b              2",
    ]


def test_labelled_lines_strip_only_trailing_blanks():
    """A word with a leading blank keeps it (the columns stay aligned); a last column header with a
    trailing blank loses it."""
    lines = _labelled_lines(sp.Matrix([[0, 1], [0, 2]]), (" x", "y "))
    assert lines[2:5] == ["label \\ token  y", " x" + " " * 14 + "1", "y" + " " * 15 + "2"]
