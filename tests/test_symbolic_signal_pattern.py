"""The exact vanishing set of the circle-walk signal for every K in 3..8 and N in 2..20."""

from __future__ import annotations

import pytest
import sympy as sp

from rwtoolkit.engines.exact import vanishing_set


def predicted_vanishing_points(K: int, N: int) -> tuple[sp.Rational, ...]:
    """The set {p ∈ [0, 1] : C(p) = 0}, derived by hand from the spectrum of Π (not from the code).

    C = (1/(K(N-1))) Σ_{m=1}^{N-1} (Πᵀ)^m - (1/K²)11ᵀ. Π is circulant with Fourier eigenvectors
    v_k = (ω^{jk})_j, ω = e^{2πi/K}, and eigenvalues λ_k = pω^k + (1-p)ω^{-k}
    = cos θ_k + i(2p-1) sin θ_k, θ_k = 2πk/K. The k = 0 mode (λ_0 = 1) contributes
    (N-1)·(1/K)11ᵀ/(K(N-1)) = (1/K²)11ᵀ, which the mean term cancels exactly, so
    C = 0  iff  S_k = Σ_{m=1}^{N-1} λ_k^m = 0 for every k = 1..K-1.
    λ_k ≠ 1 for k ≠ 0, so S_k = λ_k(1 - λ_k^{N-1})/(1 - λ_k): S_k = 0 iff λ_k = 0 or λ_k^{N-1} = 1.
    |λ_k|² = 1 - 4p(1-p) sin²θ_k, so λ_k^{N-1} = 1 needs |λ_k| = 1: p ∈ {0, 1} or sin θ_k = 0.
    - p ∈ {0, 1}: λ_k = ω^{±k}, and ω^{k(N-1)} = 1 for all k iff K | N-1 (N = rK + 1).
    - 0 < p < 1: k = 1 has sin θ_1 ≠ 0 (K ≥ 3), so λ_1 = 0 is needed: cos(2π/K) = 0 and p = 1/2,
      i.e. K = 4. For K = 4, p = 1/2: λ_1 = λ_3 = 0 and λ_2 = -1, so S_2 = 0 iff N - 1 is even.
    Hence: {0, 1} when K | N-1, plus 1/2 when K = 4 and N is odd; never identically zero.
    """
    points = set()
    if (N - 1) % K == 0:
        points |= {sp.Integer(0), sp.Integer(1)}
    if K == 4 and N % 2 == 1:
        points.add(sp.Rational(1, 2))
    return tuple(sorted(points))


@pytest.mark.parametrize("K", range(3, 9))
def test_circle_signal_vanishing_set_matches_spectral_rule(K):
    for N in range(2, 21):
        found = vanishing_set((K, N))
        assert not found.all_p, (K, N)
        assert found.points == predicted_vanishing_points(K, N), (K, N, str(found))


def test_k4_vanishing_set_includes_half_for_odd_n_only():
    """Spot checks of the K = 4 exception, with the gcd that carries the root p = 1/2."""
    assert str(vanishing_set((4, 7))) == "{1/2}"
    assert str(vanishing_set((4, 9))) == "{0, 1/2, 1}"
    assert str(vanishing_set((4, 8))) == "empty: C != 0 for every p in [0, 1]"
    p = sp.Symbol("p", real=True)
    assert sp.rem(vanishing_set((4, 3)).gcd, p - sp.Rational(1, 2), p) == 0
