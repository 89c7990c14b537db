"""Structure predicates and exact decisions: witnesses when false, exact proofs when true."""

from __future__ import annotations

import sympy as sp

from rwtoolkit.engines.exact import (
    Check,
    derive,
    has_equal_attention,
    is_circulant,
    is_lemma_d3_form,
    is_proportional_to_ones,
    is_rank_one,
    w_token_columns_zero,
)
from rwtoolkit.engines.exact.arithmetic._decide import is_zero, sign
from rwtoolkit.tasks import CircleWalk, symbol


def test_circulant_witness_names_the_differing_entries_and_their_difference():
    V = sp.Matrix([[1, 2, 3], [3, 1, 2], [2, 3, 5]])
    check = is_circulant(V)
    assert not check and check.decided
    assert check.witness == {"entries": ((2, 2), (0, 0)), "difference": 4}


def test_proportional_to_ones_accepts_equal_exp_expressions_written_differently():
    a = sp.exp(sp.Rational(1, 3)) ** 3  # = e, written differently from exp(1)
    assert is_proportional_to_ones(sp.Matrix([[a, sp.E], [sp.E, a]]))
    check = is_proportional_to_ones(sp.Matrix([[1, 1], [1, sp.Rational(1, 2)]]))
    assert not check and check.witness["difference"] == sp.Rational(-1, 2)


def test_rank_one_detects_outer_products_and_rejects_identity():
    p = symbol("p")
    u, v = sp.Matrix([1, p, 2]), sp.Matrix([p, 1, 3])
    assert is_rank_one(u * v.T)
    check = is_rank_one(sp.eye(3))
    assert not check and check.witness is not None
    assert not is_rank_one(sp.zeros(3, 3))


def test_equal_attention_on_lists_reports_the_first_unequal_position():
    S = [
        [sp.Rational(1, 4)] * 4,
        [sp.Rational(1, 4), sp.Rational(1, 2), sp.Rational(1, 8), sp.Rational(1, 8)],
    ]
    check = has_equal_attention(S)
    assert not check and check.witness["entries"] == ((1, 2), (1, 1))


def test_p_one_attention_check_fails_off_the_resonant_length():
    # N = 5 is not r*3 + 1: walks do not visit the nodes equally, so the manifold is left by step 2.
    tr = derive(CircleWalk(3, 5, 1), 2, mu=1)
    assert not is_proportional_to_ones(tr.states[2])
    assert not is_lemma_d3_form(tr.states[2])


def test_w_token_columns_zero_witness_on_an_explicit_matrix():
    W = sp.zeros(5, 5)
    W[3, 1] = sp.Rational(1, 7)
    check = w_token_columns_zero(W, K=2)
    assert not check and check.witness["entries"] == ((3, 1), "0")


def test_symbolic_p_differences_are_refuted_at_a_witness_point():
    p = symbol("p")
    assert is_zero((p + 1) ** 2 - p**2 - 2 * p - 1) is True
    assert is_zero(p * (1 - p) - sp.Rational(1, 4)) is False


def test_exp_identities_are_proved_by_the_lindemann_rewrite():
    e = sp.exp(sp.Rational(2, 5))
    assert is_zero(e / (1 + 5 * e) - 1 / (5 + sp.exp(-sp.Rational(2, 5)))) is True
    assert sign(e / (1 + 5 * e) - sp.Rational(1, 6)) == 1
    assert sign(sp.exp(sp.Rational(1, 2)) ** 2 - sp.E) == 0


def test_abstract_loss_comparisons_are_refuted_with_a_concrete_loss_and_have_no_sign():
    dell = sp.Function("dell")
    check = is_proportional_to_ones(sp.Matrix([[dell(0), dell(1)], [dell(1), dell(0)]]))
    assert not check  # refuted with a concrete smooth loss derivative
    assert isinstance(check, Check) and check.decided
    assert sign(dell(0)) is None


def test_undecidable_comparisons_say_so():
    # Li_3(1/2) = 7/8 ζ(3) - π² log 2 / 12 + log³ 2 / 6 (Euler's identity) makes this difference exactly 0,
    # but neither algebra nor the rigorous intervals (which do not cover polylog and zeta) can show it:
    # the comparison is undecided, which is reported as not holding and not decided.
    zero = (
        sp.polylog(3, sp.Rational(1, 2))
        - sp.Rational(7, 8) * sp.zeta(3)
        + sp.pi**2 * sp.log(2) / 12
        - sp.log(2) ** 3 / 6
    )
    check = is_proportional_to_ones(sp.Matrix([[1, 1 + zero], [1, 1]]))
    assert not check and not check.decided
    assert "could not decide" in check.detail and check.witness["difference"] == zero
    assert sign(zero) is None


def test_a_tiny_positive_difference_is_decided_by_intervals():
    # exp(-100) ≈ 3.7e-44: the rigorous enclosure excludes 0, so 1 + exp(-100) == 1 is refused, decided.
    tiny = sp.exp(-100)
    check = is_proportional_to_ones(sp.Matrix([[1, 1 + tiny], [1, 1]]))
    assert not check and check.decided
    assert sign(tiny) == 1
