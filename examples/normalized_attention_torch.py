"""Normalised attention in plain PyTorch, as a user would write it: ``rw check --model normalized_attention``.

Scores x̂_jᵀ W x̂_N with every column divided by its length, x̂_j = x̃_j / ‖x̃_j‖ (paper Fig 6), attention
S = softmax over the N columns, prediction f = V X S with the tokens themselves, V ∈ R^{K×K} and
W ∈ R^{(K+M)×(K+M)}, both zero at t = 0. Nothing from this toolkit except the config ``rw check`` passes in.

    rw check --model normalized_attention examples/normalized_attention_torch.py:model

A wrong variant, caught at the first quantity of ``FIRST_WRONG``:

    rw check --model normalized_attention examples/normalized_attention_torch.py:keys_unnormalised  # W at t = 2
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model normalized_attention`` reports as wrong.
FIRST_WRONG = {
    # x̃_jᵀ W x̂_N: the logits are 0 until W moves, but W's gradient at t = 1 is off by ‖x̃_j‖ = √(1 + μ) > 1
    "keys_unnormalised": "W",
}


class NormalizedAttention(nn.Module):
    """f(X̃) = V X S, S = softmax_j(x̂_jᵀ W x̂_N), x̂_j = x̃_j / ‖x̃_j‖."""

    def __init__(self, K: int, M: int, dtype: torch.dtype = torch.float64, keys: bool = True) -> None:
        super().__init__()
        self.K, self.keys = K, keys
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))  # zero init
        self.W = nn.Parameter(torch.zeros(K + M, K + M, dtype=dtype))

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        unit = Xt / torch.linalg.vector_norm(Xt, dim=1, keepdim=True)  # (n, K+M, N): x̂_j
        keys = unit if self.keys else Xt
        return torch.softmax(torch.einsum("nij,ik,nk->nj", keys, self.W, unit[:, :, -1]), dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = V X S, with the tokens X (not normalised)."""
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def model(config) -> NormalizedAttention:
    """The module; the checker builds X̃ and trains V and W."""
    return NormalizedAttention(config.K, config.M, config.torch_dtype)


def keys_unnormalised(config) -> NormalizedAttention:
    """Bug: only the query is normalised, the keys x̃_j keep their length."""
    return NormalizedAttention(config.K, config.M, config.torch_dtype, keys=False)
