"""A one-layer softmax transformer written from the paper in plain PyTorch, as a user would.

Full W, explicit X̃ = [X; P]; nothing from this toolkit except the config ``rw check`` passes in.
Two ways to hand it to the checker:

- ``model(config)``: protocol (a), the ``nn.Module``; the checker trains it by full-batch GD.
- ``training(config)``: protocol (b), our own training loop, yielding the state after each step.

    rw check examples/plain_torch.py:model
    rw check examples/plain_torch.py:training
"""

from __future__ import annotations

import torch
from torch import nn


class OneLayerTransformer(nn.Module):
    """f(X̃) = V X S(X̃ᵀ W x̃_N): attention of the query column x̃_N over all N columns, then V."""

    def __init__(self, K: int, M: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))  # zero init
        self.W = nn.Parameter(torch.zeros(K + M, K + M, dtype=dtype))

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S (n, N) for X̃ (n, K+M, N): softmax over j of x̃_jᵀ W x̃_N."""
        query = Xt[:, :, -1]  # (n, K+M) the last column x̃_N = [0; p_N]
        logits = torch.einsum("nij,ik,nk->nj", Xt, self.W, query)  # (n, N)
        return torch.softmax(logits, dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = V X S."""
        S = self.attention(Xt)  # (n, N)
        X = Xt[:, : self.K, :]  # (n, K, N) token part, last column zero
        return torch.einsum("kl,nlj,nj->nk", self.V, X, S)


def one_hot_inputs(tokens: torch.Tensor, P: torch.Tensor, K: int) -> torch.Tensor:
    """X̃ = [X; P] (n, K+M, N) from token ids (n, N-1) and positional embeddings P (M, N)."""
    n, M, N = tokens.shape[0], P.shape[0], P.shape[1]
    X = torch.zeros(n, K, N, dtype=P.dtype)
    X[:, :, : N - 1] = nn.functional.one_hot(tokens, K).transpose(1, 2).to(P.dtype)  # x_N = 0
    return torch.cat([X, P.expand(n, M, N)], dim=1)


def log_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    """The paper's loss -log(z + ε) per input."""
    return -torch.log(z + eps)


def model(config) -> OneLayerTransformer:
    """Protocol (a): the module; the checker builds X̃ and trains it."""
    return OneLayerTransformer(config.K, config.M, config.torch_dtype)


def training(
    config,
    P: torch.Tensor | None = None,
    loss=log_loss,
    reduce: str = "mean",
    w_updates: int = 1,
    net: nn.Module | None = None,
):
    """Protocol (b): full-batch GD on the population, yielding V, W, loss, f and S at t = 0, 1, ...

    The keyword arguments exist so that examples/bugs.py can plant one mistake at a time.
    """
    dtype = config.torch_dtype
    P = torch.as_tensor(config.P, dtype=dtype) if P is None else P
    net = OneLayerTransformer(config.K, config.M, dtype) if net is None else net
    Xt = one_hot_inputs(torch.as_tensor(config.tokens), P, config.K)
    y = torch.as_tensor(config.labels)
    pi = torch.as_tensor(config.weights, dtype=dtype)  # exact population probabilities
    eta, eps = float(config.eta), float(config.eps)
    while True:
        f = net(Xt)  # (n, K)
        z = f[torch.arange(len(y)), y]  # (n,) label scores
        per_input = loss(z, eps)
        L = (pi * per_input).sum() if reduce == "mean" else per_input.sum()
        yield {
            "V": net.V.detach().clone(),
            "W": net.W.detach().clone(),
            "loss": float(L.detach()),
            "f": f.detach(),
            "S": net.attention(Xt).detach(),
        }
        net.zero_grad()
        L.backward()
        with torch.no_grad():
            net.V -= eta * net.V.grad
            for _ in range(w_updates):
                net.W -= eta * net.W.grad
