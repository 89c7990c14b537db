"""Positional embeddings P = [p_1, …, p_N] ∈ R^{M×N} (docs/theory.md#model): orthogonal columns, equal squared norm μ."""

from __future__ import annotations

import numpy as np

#: Relative tolerance for a user matrix: max |PᵀP - μ̄I| must be ≤ POS_RTOL·μ̄ (μ̄ = mean ‖p_i‖²).
#: 1e-8 is far above float64 rounding of any honest construction (sine at M=1000: ~1e-13) and far
#: below anything that would change a trajectory visibly; the fast path uses the exact Gram matrix.
POS_RTOL = 1e-8

POS_KINDS = ("sine", "onehot", "random")


def check_embedding(kind: str | None, M: int, N: int, mu: float | None = None) -> None:
    """A one-line ValueError when ``positional_embeddings(kind, M, N, mu)`` cannot be built (a size or a kind
    out of range), without building it: what a configuration reader checks before any work. ``kind=None``
    checks the sizes and μ alone (a user's own matrix).

    >>> check_embedding("onehot", 4, 3)
    Traceback (most recent call last):
    ValueError: pos='onehot' needs M = N, got M=4, N=3
    """
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
        raise ValueError(f"M={M!r} must be a positive integer")
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
        raise ValueError(f"N={N!r} must be an integer >= 2")
    if mu is not None and not (np.isfinite(mu) and mu > 0):
        raise ValueError(f"mu={mu!r} must be a finite number > 0")
    if kind == "sine" and M <= N:
        raise ValueError(f"pos='sine' needs M > N (sin(π·i·m/M) vanishes at i = M), got M={M}, N={N}")
    if kind == "onehot" and M != N:
        raise ValueError(f"pos='onehot' needs M = N, got M={M}, N={N}")
    if kind == "random" and M < N:
        raise ValueError(f"pos='random' needs M >= N (N orthogonal columns in R^M), got M={M}, N={N}")
    if kind is not None and kind not in POS_KINDS:
        raise ValueError(f"pos={kind!r} is not one of {', '.join(POS_KINDS)} or an (M, N) matrix")


def positional_embeddings(
    kind: str | np.ndarray, M: int, N: int, mu: float | None = None, seed: int = 0
) -> np.ndarray:
    """P ∈ R^{M×N} with pairwise orthogonal columns of squared norm μ, as float64.

    ``kind``: ``"sine"`` ([p_i]_m = sin(π·i·m/M), i = 1..N, m = 1..M; needs M > N; own μ = M/2,
    Lemma E.5), ``"onehot"`` (P = I, needs M = N; own μ = 1), ``"random"`` (orthonormal columns from
    a QR of a seeded Gaussian matrix; needs M ≥ N; own μ = 1) or a user (M, N) matrix (own μ = its
    mean squared column norm; checked to within ``POS_RTOL``). ``mu`` rescales to ‖p_i‖² = μ.

    >>> P = positional_embeddings("sine", 8, 3)
    >>> bool(np.allclose(P.T @ P, 4 * np.eye(3), rtol=0, atol=1e-12))  # μ = M/2 = 4
    True
    >>> positional_embeddings("onehot", 3, 3, mu=4.0)[:, 0]
    array([2., 0., 0.])
    """
    check_embedding(kind if isinstance(kind, str) else None, M, N, mu)
    if isinstance(kind, str):
        if kind == "sine":
            i = np.arange(1, N + 1, dtype=np.float64)
            m = np.arange(1, M + 1, dtype=np.float64)
            P = np.sin(np.pi * np.outer(m, i) / M)  # (M, N)
            own = M / 2
        elif kind == "onehot":
            P, own = np.eye(N, dtype=np.float64), 1.0
        else:  # random
            gauss = np.random.default_rng(seed).standard_normal((M, N))
            Q, R = np.linalg.qr(gauss)  # (M, N) orthonormal columns
            P, own = Q * np.sign(np.diag(R))[None, :], 1.0  # sign fix makes Q unique given the draw
        scale = 1.0 if mu is None else float(np.sqrt(mu / own))
        return P * scale
    P = np.array(kind, dtype=np.float64)
    if P.shape != (M, N):
        raise ValueError(f"user positional matrix has shape {P.shape}, expected (M, N) = ({M}, {N})")
    if not np.all(np.isfinite(P)):
        raise ValueError("user positional matrix has non-finite entries")
    check_orthogonal_equal_norm(P)
    own = float(np.mean(np.sum(P * P, axis=0)))
    return P if mu is None else P * float(np.sqrt(mu / own))


def nominal_mu(kind: str | np.ndarray, M: int, P: np.ndarray, mu: float | None) -> float:
    """The μ a validated P stands for: ``mu`` if given, else M/2 (sine), 1 (onehot, random) or mean ‖p_i‖² (user)."""
    if mu is not None:
        return float(mu)
    if isinstance(kind, str):
        return M / 2 if kind == "sine" else 1.0
    return float(np.mean(np.sum(P * P, axis=0)))


def check_orthogonal_equal_norm(P: np.ndarray, rtol: float = POS_RTOL) -> float:
    """Return μ̄ = mean ‖p_i‖² after checking max |PᵀP - μ̄I| ≤ rtol·μ̄, else a ValueError."""
    G = P.T @ P  # (N, N) Gram matrix
    mu = float(np.mean(np.diag(G)))
    if not mu > 0:
        raise ValueError("positional matrix has zero columns: need orthogonal columns of equal norm > 0")
    dev = float(np.max(np.abs(G - mu * np.eye(G.shape[0]))))
    if dev > rtol * mu:
        raise ValueError(
            f"positional matrix columns are not orthogonal with equal norms: max |PᵀP - μI| = {dev:.3g} "
            f"exceeds {rtol:g}·μ = {rtol * mu:.3g} (μ = {mu:.6g})"
        )
    return mu
