"""Lemma E.4 checked numerically, independently of its certificate: Γ(N) = Σ_{i=0}^{N-2} Π^i has its
largest entries on the diagonal (strictly, for 0 < p < 1)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import transition_by_hand

from rwtoolkit.analyses.proofs import run_one


@pytest.mark.parametrize("K", [3, 4, 5, 6, 9])
@pytest.mark.parametrize("N", [2, 3, 4, 7, 12, 25])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.73, 0.95])
def test_gamma_has_a_strictly_dominant_diagonal(K, N, p):
    """Tolerance: Γ's entries are sums of at most N-1 = 24 products of probabilities, so float64
    rounding stays below 1e-13; the smallest true margin over this grid is about 1.7e-3, so a
    threshold of 1e-6 cannot be crossed by rounding in either direction."""
    Pi = transition_by_hand(K, p)
    gamma = sum(np.linalg.matrix_power(Pi, i) for i in range(N - 1))
    off = gamma[~np.eye(K, dtype=bool)].reshape(K, K - 1)
    margin = np.diag(gamma) - off.max(axis=1)
    assert np.all(margin > 1e-6)


def test_gamma_diagonal_only_ties_at_p_one():
    """p = 1, K = 3, N = 3: Γ = I + Π0ᵀ puts 1 on the diagonal and 1 on one off-diagonal (a tie), so
    strictness needs 0 < p < 1, as the certificate's scope says."""
    gamma = np.eye(3) + transition_by_hand(3, 1.0)
    assert np.array_equal(np.sort(gamma[0]), [0.0, 1.0, 1.0])


def test_certificate_agrees():
    cert = run_one("rwtoolkit.analyses.proofs.lemma_e4_gamma_diagonal", quick=True)
    assert cert.word == "holds", cert.witness
