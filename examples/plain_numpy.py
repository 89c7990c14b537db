"""The one-layer softmax transformer in plain NumPy, gradients written by hand, as a user without autograd would.

Nothing from this toolkit except the config ``rw check`` passes in. The implementation is handed over as an
``rwtoolkit.analyses.check.Functional``: the parameters, the forward pass, the attention, the user's own loss and the user's
own gradient (the kit takes θ ← θ − η·grad).

    rw check examples/plain_numpy.py:model

The keyword arguments of ``functional`` exist so that examples/bugs_numpy.py can plant one mistake at a
time, in the same places as the PyTorch twins of examples/bugs.py.
"""

from __future__ import annotations

import numpy as np

from rwtoolkit.analyses.check import Functional


def _softmax(logits: np.ndarray, keys_only: bool) -> np.ndarray:
    if keys_only:  # bug: the softmax skips the query column
        out = np.zeros_like(logits)
        part = np.exp(logits[:, :-1] - logits[:, :-1].max(axis=1, keepdims=True))
        out[:, :-1] = part / part.sum(axis=1, keepdims=True)
        return out
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def functional(
    config,
    keys_only: bool = False,
    transposed: bool = False,
    eps_outside: bool = False,
    reduce: str = "mean",
    w_updates: int = 1,
    P: np.ndarray | None = None,
    unit_norm: bool = False,
) -> Functional:
    """f = V X S(X̃ᵀ W x̃_N) with the log-loss −log(z + ε), weighted by the population probabilities."""
    K, N = config.K, config.N
    M = config.M if P is None else P.shape[0]
    y = np.asarray(config.labels)
    pi = np.asarray(config.weights, dtype=np.float64)
    eps = float(config.eps)
    rows = np.arange(len(y))
    scale = pi if reduce == "mean" else np.ones_like(pi)

    def parts(params, Xt):
        V, W = np.asarray(params["V"]), np.asarray(params["W"])
        if unit_norm:  # bug: the positional rows rescaled to unit norm instead of ‖p_i‖² = μ
            Xt = Xt.copy()
            Xt[:, K:, :] /= np.linalg.norm(Xt[0, K:, :], axis=0)
        X = Xt[:, :K, :]  # (n, K, N) tokens, last column zero
        query = Xt[:, :, -1]  # (n, K+M) x̃_N
        logits = np.einsum("nij,ik,nk->nj", Xt, W, query)
        S = _softmax(logits, keys_only)
        A = V.T if transposed else V
        f = np.einsum("kl,nlj,nj->nk", A, X, S)
        return V, W, X, query, S, A, f

    def forward(params, Xt):
        return parts(params, Xt)[-1]

    def attention(params, Xt):
        return parts(params, Xt)[4]

    def loss(params, Xt):
        z = forward(params, Xt)[rows, y]
        with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, as torch gives it
            per_input = -np.log(z) + eps if eps_outside else -np.log(z + eps)
        return float(np.sum(scale * per_input))

    @np.errstate(divide="ignore", invalid="ignore")
    def grad(params, Xt):
        V, W, X, query, S, A, f = parts(params, Xt)
        if unit_norm:
            Xt = Xt.copy()
            Xt[:, K:, :] /= np.linalg.norm(Xt[0, K:, :], axis=0)
        z = f[rows, y]
        dz = scale * (-1.0 / z if eps_outside else -1.0 / (z + eps))  # ∂L/∂z_n
        xs = np.einsum("nlj,nj->nl", X, S)  # X S (n, K)
        dA = np.zeros((K, K))
        np.add.at(dA, y, dz[:, None] * xs)  # ∂L/∂A[y, :] = Σ_n dz_n (X S)_n
        dV = dA.T if transposed else dA
        a = np.einsum("nl,nlj->nj", A[y], X)  # a_j = (A X)[y, j]
        dS = dz[:, None] * a  # ∂L/∂S_j
        mask = np.ones(N, dtype=bool)
        if keys_only:
            mask[-1] = False
        dlogits = S * (dS - np.sum(dS * S, axis=1, keepdims=True)) * mask
        dW = np.einsum("nj,nij,nk->ik", dlogits, Xt, query)
        return {"V": dV, "W": w_updates * dW}

    zeros = {"V": np.zeros((K, K)), "W": np.zeros((K + M, K + M))}
    return Functional(zeros, forward, attention=attention, loss=loss, grad=grad, P=P)


def model(config) -> Functional:
    """The correct implementation with the config's P."""
    return functional(config)


def sine_positions(M: int, N: int, shift: float = 0.0) -> np.ndarray:
    """The user's own embedding: [p_i]_m = sin(π (i + shift) m / M), i = 1..N, m = 1..M.

    With shift 0 the columns are orthogonal with ‖p_i‖² = M/2 (M > N): the discrete sine transform.
    """
    i = np.arange(1, N + 1) + shift
    m = np.arange(1, M + 1)
    return np.sin(np.pi * np.outer(m, i) / M)


def own_sine(config) -> Functional:
    """The correct implementation keeping its own sine P, M = N + 3 (so M ≠ N and μ = M/2)."""
    return functional(config, P=sine_positions(config.N + 3, config.N))


def shifted_sine(config) -> Functional:
    """Bug: its own sine P shifted by half a position, sin(π (i + ½) m / M): the columns are not orthogonal."""
    return functional(config, P=sine_positions(config.N + 3, config.N, shift=0.5))
