"""The per-step metrics of a run (accuracy, KL, attention, direction and symmetry residuals); each is documented in the README."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp
import torch


@dataclass
class EvalSet:
    """Inputs a metric averages over, with weights summing to 1 and the true law of y given X."""

    tokens: torch.Tensor  # (n, N-1) int64 token ids
    labels: torch.Tensor  # (n,) int64
    weights: torch.Tensor  # (n,) probabilities (population) or 1/n (sample)
    true_law: torch.Tensor  # (n, K) P(y = k | X_n)
    prob_index: np.ndarray | None = None  # population only: exact probability of input n is
    prob_values: tuple[sp.Expr, ...] | None = None  # prob_values[prob_index[n]]

    def __post_init__(self) -> None:
        # Rational probabilities as integer numerators over one common denominator, so the exact
        # population accuracy is an integer dot product per step instead of a SymPy sum.
        self._numerators: list[int] | None = None
        if self.prob_values is not None and all(isinstance(v, sp.Rational) for v in self.prob_values):
            self._denominator = math.lcm(*[int(v.q) for v in self.prob_values])
            self._numerators = [int(v.p) * (self._denominator // int(v.q)) for v in self.prob_values]


def predict(f: torch.Tensor, rtol: float) -> torch.Tensor:
    """ŷ: the smallest index among the entries of f within rtol·max_k|f_k| of max_k f_k (docs/theory.md#model).

    f is (n, K), or (n, K, B) for B runs side by side (the classes on dim 1); K where a row has no
    maximum (NaN).

    >>> predict(torch.tensor([[1.0, 1.0 + 1e-12, 0.0], [0.0, 2.0, 3.0]], dtype=torch.float64), 1e-9)
    tensor([0, 2])
    """
    K = f.shape[1]
    top = f.amax(dim=1, keepdim=True)  # (n, 1[, B]); NaN where the row has a NaN
    scale = torch.maximum(top.abs(), f.amin(dim=1, keepdim=True).abs())  # max_k |f_k|
    tied = f >= top - rtol * scale  # (n, K[, B])
    first = torch.full(tied[:, 0].shape, K, dtype=torch.int64, device=f.device)  # (n[, B])
    for k in range(K - 1, -1, -1):  # the last assignment is the smallest tied index
        first = torch.where(tied[:, k], k, first)
    return first


def accuracy(pred: torch.Tensor, ev: EvalSet) -> float:
    """P(ŷ = y): exact sum of the exact probabilities of the correct inputs (population), else a mean."""
    correct = (pred == ev.labels).cpu().numpy()
    if ev.prob_values is None:
        return float(correct.mean())
    assert ev.prob_index is not None
    counts = np.bincount(ev.prob_index[correct], minlength=len(ev.prob_values))
    if ev._numerators is not None:
        total = sum(int(c) * n for c, n in zip(counts.tolist(), ev._numerators) if c)
        return float(Fraction(total, ev._denominator))
    return float(sp.Add(*[int(c) * v for c, v in zip(counts, ev.prob_values) if c]))


def kl_divergence(f: torch.Tensor, ev: EvalSet, norm: str, eps: float) -> float:
    """Mean over inputs of KL(P(y|X) ‖ q(f)), where q is ``norm``: softmax(f) or (f - min f + ε)/sum."""
    if norm == "softmax":
        log_q = torch.log_softmax(f, dim=1)
    else:
        shifted = f - f.min(dim=1, keepdim=True).values + eps  # > 0 entrywise
        log_q = torch.log(shifted) - torch.log(shifted.sum(dim=1, keepdim=True))
    law = ev.true_law
    safe = torch.where(law > 0, law, 1.0)
    terms = torch.where(law > 0, law * (torch.log(safe) - log_q), 0.0)  # 0·log 0 = 0
    return float((ev.weights * terms.sum(dim=1)).sum())


def f_direction_error(f: torch.Tensor, ev: EvalSet) -> float | None:
    """Mean over inputs of ‖f/‖f‖ - f*/‖f*‖‖ with f* = P(y|X) (= Πᵀx_{N-1} for circles); None if some f = 0."""
    norms = torch.linalg.vector_norm(f, dim=1, keepdim=True)
    if bool((norms == 0).any()):
        return None
    target = ev.true_law / torch.linalg.vector_norm(ev.true_law, dim=1, keepdim=True)
    return float((ev.weights * torch.linalg.vector_norm(f / norms - target, dim=1)).sum())


def v_direction_error(V: np.ndarray, Pi: np.ndarray) -> float | None:
    """‖V/‖V‖_F - Πᵀ/‖Πᵀ‖_F‖_F (Theorem 3.1); None when V = 0."""
    nv = np.linalg.norm(V)
    if nv == 0:
        return None
    return float(np.linalg.norm(V / nv - Pi.T / np.linalg.norm(Pi)))


def circulant_projection(V: torch.Tensor) -> torch.Tensor:
    """C(V): the orthogonal projection onto circulant matrices, each entry the mean of its wrapped diagonal i-j ≡ d mod K.

    It is also the average of R^r V R^-r over the K rotations R of the circle. (The exact engine's
    counterpart, the rotation sum K·C(G), is ``rwtoolkit.engines.exact.engine._groups._symmetrise_matrix``.) V is (K, K),
    or (K, K, B) for B matrices side by side.

    >>> circulant_projection(torch.tensor([[1.0, 2.0], [4.0, 3.0]], dtype=torch.float64))
    tensor([[2., 3.],
            [3., 2.]], dtype=torch.float64)
    """
    K = V.shape[0]
    idx = torch.arange(K, device=V.device)
    d = (idx[:, None] - idx[None, :]) % K  # (K, K) wrapped diagonal index i - j mod K
    means = V[idx[None, :], (idx[None, :] - idx[:, None]) % K].mean(dim=1)  # (K[, B]) mean of diagonal d
    return means[d]


def circulant_residual(V: np.ndarray) -> float:
    """‖V - C(V)‖_F / ‖V‖_F, C = ``circulant_projection``; 0 if V = 0.

    >>> circulant_residual(np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [2.0, 3.0, 1.0]]))
    0.0
    """
    return float(circulant_residuals(torch.from_numpy(np.ascontiguousarray(V))))


def ones_residual(V: np.ndarray) -> float:
    """‖V - mean(V)·1_{K×K}‖_F / ‖V‖_F, distance from the nearest multiple of all-ones; 0 if V = 0."""
    return float(ones_residuals(torch.from_numpy(np.ascontiguousarray(V))))


def circulant_residuals(V: torch.Tensor) -> torch.Tensor:
    """``circulant_residual`` of each matrix of V (K, K[, B]): a tensor of shape ([B])."""
    return _relative(V - circulant_projection(V), V)


def ones_residuals(V: torch.Tensor) -> torch.Tensor:
    """``ones_residual`` of each matrix of V (K, K[, B]): a tensor of shape ([B])."""
    return _relative(V - V.mean(dim=(0, 1)), V)


def _relative(residual: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """‖residual‖_F / ‖V‖_F over the first two dimensions, 0 where V = 0.

    Both are scaled first by the power of two 2^-e that brings max |V_ij| into [1/2, 1): exact, so the
    quotient has the same bits wherever the plain norms are finite and nonzero, and ‖V‖_F² can neither
    underflow to 0 (float64 entries below about 1e-162 gave 0) nor overflow (entries above about 1e154
    gave NaN).
    """
    _, e = torch.frexp(V.abs().amax(dim=(0, 1)))
    top = math.frexp(torch.finfo(V.dtype).max)[1] - 1  # 2^top: the dtype's largest power of two
    scale = torch.ldexp(torch.ones_like(e, dtype=V.dtype), (-e).clamp(max=top))
    nv = torch.linalg.vector_norm(V * scale, dim=(0, 1))
    nr = torch.linalg.vector_norm(residual * scale, dim=(0, 1))
    return torch.where(nv > 0, nr / torch.where(nv > 0, nv, 1.0), 0.0)
