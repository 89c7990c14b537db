"""Linear attention in plain PyTorch, as a user would write it: ``rw check --model linear_attention``.

f = V X S with S = (X̃ᵀ W x̃_N) / N, the scores without a softmax. From zero this model never moves (every
gradient vanishes there), so the kit checks it from a fixed non-zero start, ``config.start`` (a dict of
float64 arrays, "V" (K×K) and "W" ((K+M)×(K+M)), dyadic so exact in float64): the module starts there.
Nothing from this toolkit except the config ``rw check`` passes in.

    rw check --model linear_attention examples/linear_attention_torch.py:model

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model linear_attention examples/linear_attention_torch.py:unscaled_scores   # S at t = 0
    rw check --model linear_attention examples/linear_attention_torch.py:query_as_key       # S at t = 0
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model linear_attention`` reports as wrong.
FIRST_WRONG = {
    "unscaled_scores": "S",  # S = X̃ᵀ W x̃_N without the 1/N: N times too large from t = 0
    "query_as_key": "S",  # scores x̃_Nᵀ W x̃_j (W transposed): wrong wherever W is not symmetric
}


class LinearAttention(nn.Module):
    """f(X̃) = V X S, S_j = x̃_jᵀ W x̃_N / N."""

    def __init__(self, K: int, start: dict, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.tensor(start["V"], dtype=dtype))
        self.W = nn.Parameter(torch.tensor(start["W"], dtype=dtype))

    def scores(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("nij,ik,nk->nj", Xt, self.W, Xt[:, :, -1])

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S (n, N)."""
        return self.scores(Xt) / Xt.shape[2]

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = V X S."""
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def model(config) -> LinearAttention:
    """Protocol (a): the module, started at ``config.start``; the checker trains V and W."""
    return LinearAttention(config.K, config.start, config.torch_dtype)


class _Unscaled(LinearAttention):
    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        return self.scores(Xt)


class _QueryAsKey(LinearAttention):
    def scores(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("nk,ki,nij->nj", Xt[:, :, -1], self.W, Xt)


def unscaled_scores(config) -> LinearAttention:
    """Bug: the scores not divided by N."""
    return _Unscaled(config.K, config.start, config.torch_dtype)


def query_as_key(config) -> LinearAttention:
    """Bug: the roles of key and query swapped (x̃_Nᵀ W x̃_j)."""
    return _QueryAsKey(config.K, config.start, config.torch_dtype)
