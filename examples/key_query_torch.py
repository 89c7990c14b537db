"""Separate key and query matrices in plain PyTorch, as a user would write them: ``rw check --model key_query``.

Scores (W_K x̃_j)ᵀ (W_Q x̃_N), attention S = softmax over the N columns, prediction f = V X S, with
V ∈ R^{K×K} and W_K, W_Q ∈ R^{d×(K+M)} (d = ``config.head_dim``), all zero at t = 0. Nothing from this
toolkit except the config ``rw check`` passes in (its P, μ, η, ε, population and head dimension).

- ``model(config)``: protocol (a), the ``nn.Module`` with parameters V, W_K, W_Q; the checker trains it.
- ``training(config)``: protocol (b), our own training loop, yielding the state after each step.

    rw check --model key_query examples/key_query_torch.py:model
    rw check --model key_query --head-dim 3 examples/key_query_torch.py:training

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model key_query examples/key_query_torch.py:merged_W       # W_K at t = 2
    rw check --model key_query examples/key_query_torch.py:default_init   # W_K at t = 0
    rw check --model key_query examples/key_query_torch.py:transposed_V   # V at t = 1
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model key_query`` reports as wrong (tests/test_check_models.py).
FIRST_WRONG = {
    # trains the paper's merged W (GD on W is not GD on W_K, W_Q) and reports a rank-d factorisation of it:
    # W(1) = 0 from zero init, so the factors first differ at t = 2
    "merged_W": "W_K",
    "default_init": "W_K",  # nn.Linear's random initialisation instead of zero
    "transposed_V": "V",  # f = Vᵀ X S
}


class KeyQueryTransformer(nn.Module):
    """f(X̃) = V X S, S = softmax_j((W_K x̃_j)ᵀ (W_Q x̃_N)): separate key and query of d rows."""

    def __init__(self, K: int, M: int, d: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))  # zero init
        self.W_K = nn.Parameter(torch.zeros(d, K + M, dtype=dtype))
        self.W_Q = nn.Parameter(torch.zeros(d, K + M, dtype=dtype))

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S (n, N) for X̃ (n, K+M, N): softmax over j of (W_K x̃_j)ᵀ (W_Q x̃_N)."""
        keys = torch.einsum("ai,nij->naj", self.W_K, Xt)  # (n, d, N)
        query = torch.einsum("ai,ni->na", self.W_Q, Xt[:, :, -1])  # (n, d) of x̃_N = [0; p_N]
        return torch.softmax(torch.einsum("naj,na->nj", keys, query), dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = V X S."""
        S = self.attention(Xt)
        X = Xt[:, : self.K, :]  # the token rows, last column zero
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


def _net(config) -> KeyQueryTransformer:
    return KeyQueryTransformer(config.K, config.M, config.head_dim, config.torch_dtype)


def model(config) -> KeyQueryTransformer:
    """Protocol (a): the module; the checker builds X̃ and trains V, W_K and W_Q."""
    return _net(config)


def training(config, net: nn.Module | None = None):
    """Protocol (b): full-batch GD on the population, yielding V, W_K, W_Q, loss, f and S at t = 0, 1, ..."""
    dtype = config.torch_dtype
    net = _net(config) if net is None else net
    Xt = one_hot_inputs(torch.as_tensor(config.tokens), torch.as_tensor(config.P, dtype=dtype), config.K)
    y = torch.as_tensor(config.labels)
    pi = torch.as_tensor(config.weights, dtype=dtype)  # exact population probabilities
    eta, eps = float(config.eta), float(config.eps)
    while True:
        f = net(Xt)
        L = (pi * log_loss(f[torch.arange(len(y)), y], eps)).sum()
        yield {
            "V": net.V.detach().clone(),
            "W_K": net.W_K.detach().clone(),
            "W_Q": net.W_Q.detach().clone(),
            "loss": float(L.detach()),
            "f": f.detach(),
            "S": net.attention(Xt).detach(),
        }
        net.zero_grad()
        L.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= eta * p.grad


# --- wrong variants ---------------------------------------------------------------------------------------
class _Merged(nn.Module):
    """The paper's model with one merged W = W_Kᵀ W_Q of (K+M)×(K+M), trained as such."""

    def __init__(self, K: int, M: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))
        self.W = nn.Parameter(torch.zeros(K + M, K + M, dtype=dtype))

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.einsum("nij,ik,nk->nj", Xt, self.W, Xt[:, :, -1]), dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def merged_W(config):
    """Bug: GD on the merged W (W_K, W_Q reported as the best rank-d factorisation W ≈ W_Kᵀ W_Q)."""
    dtype = config.torch_dtype
    net = _Merged(config.K, config.M, dtype)
    Xt = one_hot_inputs(torch.as_tensor(config.tokens), torch.as_tensor(config.P, dtype=dtype), config.K)
    y = torch.as_tensor(config.labels)
    pi = torch.as_tensor(config.weights, dtype=dtype)
    eta, eps, d = float(config.eta), float(config.eps), config.head_dim
    while True:
        f = net(Xt)
        L = (pi * log_loss(f[torch.arange(len(y)), y], eps)).sum()
        U, s, Vh = torch.linalg.svd(net.W.detach())
        root = s[:d].sqrt()
        yield {
            "V": net.V.detach().clone(),
            "W_K": root[:, None] * U[:, :d].T,
            "W_Q": root[:, None] * Vh[:d],
            "loss": float(L.detach()),
            "f": f.detach(),
            "S": net.attention(Xt).detach(),
        }
        net.zero_grad()
        L.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= eta * p.grad


class _DefaultInit(KeyQueryTransformer):
    """Bug: W_K, W_Q keep nn.Linear's default (random, Kaiming-uniform) initialisation."""

    def __init__(self, K: int, M: int, d: int, dtype: torch.dtype) -> None:
        super().__init__(K, M, d, dtype)
        generator = torch.Generator().manual_seed(0)  # the same "random" start every run
        bound = (K + M) ** -0.5
        with torch.no_grad():
            for p in (self.W_K, self.W_Q):
                p.copy_((torch.rand(p.shape, generator=generator, dtype=dtype) * 2 - 1) * bound)


class _TransposedV(KeyQueryTransformer):
    """Bug: f = Vᵀ X S."""

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("lk,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def default_init(config) -> KeyQueryTransformer:
    return _DefaultInit(config.K, config.M, config.head_dim, config.torch_dtype)


def transposed_V(config) -> KeyQueryTransformer:
    return _TransposedV(config.K, config.M, config.head_dim, config.torch_dtype)
