"""Transfer-matrix first moments of circle walks (rwtoolkit.engines.exact.engine._moments) against enumeration."""

from __future__ import annotations

import pytest
import sympy as sp

from rwtoolkit.engines.exact import (
    MAX_STRUCTURED_N,
    MAX_SYMBOLIC_N,
    circle_first_moments,
    expected_label_token_outer,
    label_token_sum,
    transition_power,
)
from rwtoolkit.tasks import CircleWalk, symbol

p = symbol("p")


def _zero(M: sp.Matrix) -> bool:
    return M.applyfunc(sp.expand) == sp.zeros(*M.shape)


def _enumerated_outer(walk: CircleWalk, i: int) -> sp.Matrix:
    """E[e_y x_iᵀ] summed walk by walk over the exact population (independent of Π)."""
    pop = walk.population()
    out = sp.zeros(walk.K, walk.K)
    for q, y, tokens in zip(pop.exact_probs(), pop.labels, pop.tokens, strict=True):
        out[int(y), int(tokens[i - 1])] += q
    return out


@pytest.mark.parametrize("K,m", [(3, 0), (3, 1), (4, 5), (7, 6)])
def test_transition_power_equals_sympy_matrix_power(K, m):
    walk = CircleWalk(K, 3, "p")
    assert _zero(transition_power(walk, m) - walk.transition_matrix() ** m)


@pytest.mark.parametrize("K,N", [(3, 4), (4, 6), (5, 5), (8, 7)])
def test_expected_label_token_outer_equals_enumeration_at_every_position(K, N):
    walk = CircleWalk(K, N, "p")
    for i in range(1, N):
        assert _zero(expected_label_token_outer(walk, i) - _enumerated_outer(walk, i)), i


@pytest.mark.parametrize("K,N", [(3, 5), (6, 6)])
def test_tokens_and_label_are_uniform_because_uniform_is_stationary(K, N):
    """s_1 is uniform and Π is doubly stochastic, so P(s_i = b) = 1/K for all i, checked by enumeration."""
    walk = CircleWalk(K, N, "p")
    pop = walk.population()
    for i in range(N - 1):
        marginal = [
            sp.expand(sum(q for q, t in zip(pop.exact_probs(), pop.tokens[:, i], strict=True) if t == b))
            for b in range(K)
        ]
        assert marginal == [sp.Rational(1, K)] * K
    moments = circle_first_moments(walk)
    assert moments.label_mean == moments.token_mean == sp.Matrix([sp.Rational(1, K)] * K)


def test_label_token_sum_is_the_v1_closed_form_sum():
    """V(1) of Lemma C.1 with the log-loss is (η/(εNK)) Σ_{i<N} (Πᵀ)^{N-i}; label_token_sum·K must
    equal that sum of powers, computed here with SymPy's own matrix power."""
    walk = CircleWalk(5, 8, "p")
    PiT = walk.transition_matrix().T
    closed = sp.zeros(5, 5)
    for i in range(1, 8):
        closed += PiT ** (8 - i)
    assert _zero(label_token_sum(walk) * 5 - closed)
    moments = circle_first_moments(walk)
    assert _zero(moments.label_token_mean * 7 - moments.label_token_sum)


def test_rational_and_expression_p_agree_with_symbolic_p():
    symbolic = label_token_sum(CircleWalk(4, 6, "p"))
    assert label_token_sum(CircleWalk(4, 6, "3/10")) == symbolic.subs(p, sp.Rational(3, 10))
    q = symbol("q")
    assert _zero(label_token_sum(CircleWalk(4, 6, q**2)) - symbolic.subs(p, q**2))


def test_bad_positions_powers_and_sizes_are_refused():
    walk = CircleWalk(4, 5, "p")
    with pytest.raises(ValueError, match="i=5 must be a token position in 1..N-1 = 1..4"):
        expected_label_token_outer(walk, 5)
    with pytest.raises(ValueError, match="m=-1"):
        transition_power(walk, -1)
    with pytest.raises(ValueError, match=f"N={MAX_SYMBOLIC_N + 1} is too large .* symbolic p"):
        label_token_sum(CircleWalk(4, MAX_SYMBOLIC_N + 1, "p"))
    with pytest.raises(ValueError, match=f"N={MAX_STRUCTURED_N + 1} is too large .* rational p"):
        label_token_sum(CircleWalk(4, MAX_STRUCTURED_N + 1, "1/3"))
    with pytest.raises(ValueError, match="m=300 is too large"):
        transition_power(walk, 300)
