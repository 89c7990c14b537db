"""Enclosure of the positional Gram matrix PᵀP of the exact embeddings, entry by entry.

The model sees P only through PᵀP (the reduction of the exact engine). For the sine embeddings
[p_i]_m = sin(π·i·m/M) every entry is a ball (flint ``arb``: sin(π·k/M) for the 2M residues k of
i·m mod 2M) and PᵀP is one ball-matrix product. Lemma E.5 states PᵀP = (M/2)·I exactly; the engine
uses that identity only after checking that every enclosed entry contains it, so an error in the
lemma's use (or in the embeddings) stops the run instead of certifying a different model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, arb_mat, fmpq

from rwtoolkit.engines.balls._balls import ball_interval

#: Embeddings whose Gram matrix the engine encloses: "sine" (μ = M/2) and "onehot" (P = I, μ = 1).
CERTIFIED_POS = ("sine", "onehot")


@dataclass(frozen=True)
class GramEnclosure:
    """μ (exact) and how the enclosed PᵀP was checked against μ·I.

    ``max_offdiag_rad``: the widest off-diagonal ball (each contains 0), ``max_diag_rad``: the widest
    diagonal ball (each contains μ), both as floats rounded up.
    """

    pos: str
    M: int
    N: int
    mu: Fraction
    max_offdiag_rad: float
    max_diag_rad: float

    def to_json(self) -> dict:
        """JSON-able summary (μ as an exact fraction string)."""
        return {
            "pos": self.pos,
            "M": self.M,
            "N": self.N,
            "mu": str(self.mu),
            "contains_mu_identity": True,
            "max_offdiag_rad": self.max_offdiag_rad,
            "max_diag_rad": self.max_diag_rad,
        }


def sine_embeddings(M: int, N: int) -> arb_mat:
    """P (M×N) with [P]_{m,i} = sin(π·i·m/M), i = 1..N, m = 1..M, every entry a ball.

    >>> P = sine_embeddings(4, 2)
    >>> P[1, 0].overlaps(arb(1)), P[1, 1].contains(0)
    (True, True)
    """
    table = [arb.sin_pi_fmpq(fmpq(k, M)) for k in range(2 * M)]  # sin(πk/M) for the residues mod 2M
    return arb_mat([[table[(i * m) % (2 * M)] for i in range(1, N + 1)] for m in range(1, M + 1)])


def enclose_gram(pos: str, M: int, N: int) -> GramEnclosure:
    """Enclose PᵀP and check it contains μ·I (Lemma E.5 for "sine"); a ValueError if it does not.

    >>> g = enclose_gram("sine", 20, 5)  # at the default 53 bits
    >>> g.mu, g.max_offdiag_rad < 1e-12
    (Fraction(10, 1), True)
    """
    if pos == "onehot":
        if M != N:
            raise ValueError(f"pos='onehot' needs M = N, got M={M}, N={N}")
        return GramEnclosure(pos, M, N, Fraction(1), 0.0, 0.0)
    if pos != "sine":
        raise ValueError(
            f"pos={pos!r} is not one of {', '.join(CERTIFIED_POS)} (embeddings the engine encloses)"
        )
    if M <= N:
        raise ValueError(f"pos='sine' needs M > N (sin(π·i·m/M) vanishes at i = M), got M={M}, N={N}")
    P = sine_embeddings(M, N)
    G = P.transpose() * P  # (N, N) ball Gram matrix
    off, diag = check_gram(G, Fraction(M, 2))
    return GramEnclosure(pos, M, N, Fraction(M, 2), off, diag)


def check_gram(G: arb_mat, mu: Fraction) -> tuple[float, float]:
    """(widest off-diagonal, widest diagonal radius) after checking every ball of G contains [μ·I]; else ValueError.

    >>> check_gram(arb_mat([[2, 0], [0, 2]]), Fraction(2))
    (0.0, 0.0)
    >>> check_gram(arb_mat([[2, 1], [1, 2]]), Fraction(2))
    Traceback (most recent call last):
    ...
    ValueError: the enclosed Gram entry (1, 2) ∈ [1, 1] does not contain 0: ...
    """
    mu_ball = arb(mu.numerator) / mu.denominator
    off = diag = 0.0
    for i in range(G.nrows()):
        for j in range(G.ncols()):
            g = G[i, j]
            target = mu_ball if i == j else arb(0)
            if not g.contains(target):
                raise ValueError(
                    f"the enclosed Gram entry ({i + 1}, {j + 1}) ∈ {ball_interval(g)} does not contain "
                    f"{'μ = ' + str(mu) if i == j else '0'}: "
                    "the embeddings are not orthogonal with squared norm μ at this size"
                )
            rad = math.nextafter(float(g.rad()), math.inf) if not g.rad().is_zero() else 0.0
            if i == j:
                diag = max(diag, rad)
            else:
                off = max(off, rad)
    return off, diag
