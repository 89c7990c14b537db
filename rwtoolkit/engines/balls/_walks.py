"""Training and evaluation sets for the certified engine: walks as given, exact weights, duplicates merged.

Identical inputs (same tokens and label) are merged and their exact weights added, which changes no
sum the engine forms; at p ∈ {0, 1} a circle walk is fixed by its start, so any sample has at most K
distinct inputs. The 0/1 matrix Aᵀ (positions × (input, token)) with [Aᵀ]_{j,(i,k)} = 1{s_ij = k}
turns every per-position sum of the model into one ball-matrix product.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from flint import arb_mat


@dataclass
class WalkSet:
    """Distinct inputs ``tokens`` (n, N-1), ``labels`` (n,), exact ``weights`` (summing to 1) and their balls.

    ``counts[i, k]`` = number of positions of input i carrying token k; ``AT`` = Aᵀ as an exact ball matrix.

    >>> w = WalkSet.build(np.array([[0, 1], [0, 1], [1, 0]]), np.array([2, 2, 0]), [Fraction(1, 3)] * 3, K=3)
    >>> w.size, w.weights
    (2, [Fraction(2, 3), Fraction(1, 3)])
    """

    tokens: np.ndarray
    labels: np.ndarray
    weights: list[Fraction]
    K: int
    counts: np.ndarray
    AT: arb_mat

    @property
    def size(self) -> int:
        """Number of distinct inputs."""
        return int(self.tokens.shape[0])

    @classmethod
    def population(cls, pop: Any) -> WalkSet:
        """A task's exact population (``task.population()``), each input weighted by its probability, which
        must be an exact rational.

        >>> from rwtoolkit.tasks import CircleWalk
        >>> w = WalkSet.population(CircleWalk(3, 3, "1/2").population())
        >>> w.size, sum(w.weights)
        (12, Fraction(1, 1))
        """
        weights = []
        for w in pop.exact_probs():
            if not sp.sympify(w).is_Rational:
                raise ValueError(
                    f"the population's probabilities must be exact rationals (got {w}): give a numeric p"
                )
            weights.append(Fraction(int(w.p), int(w.q)))
        return cls.build(pop.tokens, pop.labels, weights, pop.K)

    @classmethod
    def build(cls, tokens: np.ndarray, labels: np.ndarray, weights: list[Fraction], K: int) -> WalkSet:
        """Merge duplicate inputs (adding their weights) and build the count and incidence matrices."""
        tokens = np.asarray(tokens, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        if tokens.ndim != 2 or labels.shape != (tokens.shape[0],) or len(weights) != tokens.shape[0]:
            raise ValueError("tokens (n, N-1), labels (n,) and weights (n) must describe the same n inputs")
        if sum(weights, Fraction(0)) != 1:
            raise ValueError(f"the input weights sum to {sum(weights, Fraction(0))}, not 1")
        rows = np.concatenate([tokens, labels[:, None]], axis=1)
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        merged = [Fraction(0)] * distinct.shape[0]
        for i, w in zip(inverse.reshape(-1), weights):
            merged[int(i)] += Fraction(w)
        toks, labs = distinct[:, :-1], distinct[:, -1]
        n, L = toks.shape
        counts = np.zeros((n, K), dtype=np.int64)
        for k in range(K):
            counts[:, k] = (toks == k).sum(axis=1)
        onehot = (toks[:, :, None] == np.arange(K)[None, None, :]).reshape(n, L * K)  # (n, L·K) per position
        incidence = onehot.reshape(n, L, K).transpose(1, 0, 2).reshape(L, n * K)  # (L, n·K), column i·K + k
        AT = arb_mat(incidence.astype(int).tolist())
        return cls(toks, labs, merged, K, counts, AT)
