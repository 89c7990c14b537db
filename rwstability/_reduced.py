"""The reduced loss L(θ), θ = (V, w_tok, c), its GD map, and the Theorem 4.1 invariant manifold.

Coordinates. The forward pass sees W only through w = W x̃_N (one query, at position N), and every
W-gradient is u·x̃_Nᵀ (Lemma B.1). So a perturbation of the full W splits into
  * w = W x̃_N: its token part w_tok (K numbers) and the part of its positional block inside
    span{p_1..p_N}, c_j = p_jᵀ w_pos / μ (N numbers): these are the reduced coordinates;
  * everything else: W's action on the orthogonal complement of x̃_N (all columns of W that x̃_N does
    not reach, e.g. the token columns W11, W21) and the component of w_pos orthogonal to span{p_j}.
    These directions are *inert*: no logit depends on them and they receive zero gradient, so GD
    carries them unchanged (multiplier exactly 1) and they never change the model's output.
Hence the reduced coordinates represent every direction of the full (V, W) that can grow or matter.

Logits are logit_j = w_tok[s_j] + μ c_j (j < N) and logit_N = μ c_N (the query slot has no token);
with S = softmax(logits) and z = Σ_{j<N} S_j V[y, s_j], L(θ) = E[ℓ(z)], ℓ(z) = -log(z + ε).
Because ‖x̃_N‖² = μ, one GD step on (V, W) is, in these coordinates,
    G(θ) = θ - η D ∇L(θ),  D = diag(1 on V, μ on w_tok, 1 on c),
so the linearised map along a trajectory is J = I - η D ∇²L (the factor μ on w_tok is the metric the
full W induces; with D = I one would linearise a different algorithm).

Manifold (Lemma D.3, Theorem 4.1: p ∈ {0, 1}, N = rK+1): V = α1·1_{K×K}, w_tok = α2'·1_K,
c_1 = … = c_{N-1}, c_N free: the span of four vectors. G maps it into itself for every point on it,
so J maps its tangent space into itself, and the component normal to it evolves by a map of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp

from rwtasks import CircleWalk, FiniteTask

if TYPE_CHECKING:  # torch is imported where the float loss is built, not at import
    import torch


@dataclass(frozen=True)
class Coordinates:
    """The layout of θ = (V row-major, w_tok, c) for vocabulary K and length N (dimension K² + K + N)."""

    K: int
    N: int

    @property
    def dim(self) -> int:
        return self.K * self.K + self.K + self.N

    def name(self, i: int) -> str:
        """The model's name of coordinate i: "V[i,j]", "w_tok[k]" (token k) or "c_j" (position j, 1-based)."""
        K = self.K
        if i < K * K:
            return f"V[{i // K},{i % K}]"
        if i < K * K + K:
            return f"w_tok[{i - K * K}]"
        return f"c_{i - K * K - K + 1}"

    def metric(self, mu: float) -> np.ndarray:
        """The diagonal of D: 1 on V, μ on w_tok, 1 on c."""
        d = np.ones(self.dim)
        d[self.K * self.K : self.K * self.K + self.K] = mu
        return d

    def tangent_basis(self) -> sp.Matrix:
        """The four vectors spanning Lemma D.3's manifold: 1 on V, 1 on w_tok, 1 on c_1..c_{N-1}, 1 on c_N."""
        K, N = self.K, self.N
        B = sp.zeros(self.dim, 4)
        for i in range(K * K):
            B[i, 0] = 1
        for k in range(K):
            B[K * K + k, 1] = 1
        for j in range(N - 1):
            B[K * K + K + j, 2] = 1
        B[self.dim - 1, 3] = 1
        return B

    def normal_basis(self) -> sp.Matrix:
        """Rational vectors spanning the orthogonal complement of the tangent space (dim - 4 columns)."""
        T = self.tangent_basis()
        cols = T.T.nullspace()
        return sp.Matrix.hstack(*cols)


def check_manifold_task(task: object) -> tuple[int, int]:
    """(K, r) for a circle walk with p ∈ {0, 1} and N = rK + 1 (Theorem 4.1), else a one-line ValueError."""
    if not isinstance(task, CircleWalk):
        raise ValueError(  # noqa: TRY004 - a usage error: the CLI turns ValueError into one line and exit 2
            f"task={task!r}: the invariant manifold is implemented for circle walks with p in {{0, 1}} and "
            "N = rK+1 (Theorem 4.1) only"
        )
    if task.p not in (sp.Integer(0), sp.Integer(1)):
        raise ValueError(f"p={task.p} must be 0 or 1: the Theorem 4.1 manifold is invariant only there")
    if (task.N - 1) % task.K != 0:
        raise ValueError(f"N={task.N} must be rK+1 for K={task.K} (Theorem 4.1), e.g. N={task.K + 1}")
    return task.K, (task.N - 1) // task.K


def deterministic_walks(task: CircleWalk) -> FiniteTask:
    """The K walks of non-zero probability of a circle walk with p ∈ {0, 1}: s_j = s_1 ± (j-1), y = s_N.

    The same population as ``task.population()``, which enumerates all K·2^(N-1) walks first and so
    refuses N above about 20; this one has K inputs for every N.

    >>> deterministic_walks(CircleWalk(3, 4, 1)).population().tokens.tolist()
    [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    """
    check_manifold_task(task)
    d = 1 if task.p == 1 else -1
    walks = [[(s + d * j) % task.K for j in range(task.N)] for s in range(task.K)]
    return FiniteTask(
        [w[:-1] for w in walks], [w[-1] for w in walks], [sp.Rational(1, task.K)] * task.K, K=task.K
    )


def population_arrays(task: CircleWalk | FiniteTask) -> tuple[np.ndarray, np.ndarray, list[sp.Expr]]:
    """(tokens (n, N-1), labels (n,), exact probabilities) of the task's population."""
    if isinstance(task, CircleWalk) and task.p in (sp.Integer(0), sp.Integer(1)):
        task = deterministic_walks(task)
    pop = task.population()
    return pop.tokens, pop.labels, pop.exact_probs()


def symbolic_loss(
    task: CircleWalk | FiniteTask, mu: sp.Expr, eps: sp.Expr
) -> tuple[sp.Expr, list[sp.Symbol]]:
    """L(θ) = E[-log(z + ε)] as a SymPy expression in the symbols θ (order of ``Coordinates``).

    >>> from rwtasks import CircleWalk
    >>> L, theta = symbolic_loss(CircleWalk(3, 4, 1), sp.Integer(1), sp.Rational(1, 10))
    >>> len(theta), L.subs({s: 0 for s in theta})
    (16, log(10))
    """
    tokens, labels, probs = population_arrays(task)
    K, N = task.K, tokens.shape[1] + 1
    coords = Coordinates(K, N)
    theta = list(sp.symbols(f"theta0:{coords.dim}", real=True))
    V = sp.Matrix(K, K, theta[: K * K])
    w = theta[K * K : K * K + K]
    c = theta[K * K + K :]
    L = sp.Integer(0)
    for row, y, prob in zip(tokens.tolist(), labels.tolist(), probs):
        logits = [w[s] + mu * c[j] for j, s in enumerate(row)] + [mu * c[N - 1]]
        E = [sp.exp(x) for x in logits]
        Z = sp.Add(*E)
        z = sp.Add(*[E[j] * V[y, s] for j, s in enumerate(row)]) / Z
        L += prob * -sp.log(z + eps)
    return L, theta


def torch_loss(task: CircleWalk | FiniteTask, mu: float, eps: float, dtype: torch.dtype | None = None):
    """The same L(θ) as a torch function of a flat θ (float64 by default), for torch.func Hessians."""
    import torch

    dt = torch.float64 if dtype is None else dtype
    tokens_np, labels_np, probs = population_arrays(task)
    tokens = torch.as_tensor(tokens_np, dtype=torch.int64)  # (n, N-1)
    labels = torch.as_tensor(labels_np, dtype=torch.int64)  # (n,)
    weights = torch.as_tensor([float(p) for p in probs], dtype=dt)  # (n,)
    K, N = task.K, tokens_np.shape[1] + 1

    def loss(theta: torch.Tensor) -> torch.Tensor:
        V = theta[: K * K].reshape(K, K)
        w = theta[K * K : K * K + K]
        c = theta[K * K + K :]
        logits_tok = w[tokens] + mu * c[: N - 1]  # (n, N-1)
        logits = torch.cat([logits_tok, (mu * c[N - 1]).expand(tokens.shape[0], 1)], dim=1)  # (n, N)
        S = torch.softmax(logits, dim=1)
        a = V[labels[:, None], tokens]  # (n, N-1) a_j = V[y, s_j]
        z = (S[:, : N - 1] * a).sum(dim=1)  # (n,)
        return (weights * -torch.log(z + eps)).sum()

    return loss
