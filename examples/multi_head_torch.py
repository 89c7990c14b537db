"""H attention heads in plain PyTorch, as a user would write them: ``rw check --model multi_head``.

Each head h has its own merged key-query W_h ((K+M)×(K+M)) and value matrix V_h (K×K), all zero at t = 0:
S_h = softmax over the N columns of x̃_jᵀ W_h x̃_N, and f = Σ_h V_h X S_h. The parameters are stacked,
V (H, K, K) and W (H, K+M, K+M), H = ``config.heads`` (``--heads``, default 2); ``attention`` returns the
heads' average, the read-out the kit compares. Nothing from this toolkit except the config ``rw check``
passes in.

    rw check --model multi_head examples/multi_head_torch.py:model
    rw check --model multi_head --heads 3 examples/multi_head_torch.py:model

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model multi_head examples/multi_head_torch.py:averaged_heads   # V at t = 1
    rw check --model multi_head examples/multi_head_torch.py:shared_softmax   # W at t = 2
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model multi_head`` reports as wrong (tests/test_check_models.py).
FIRST_WRONG = {
    "averaged_heads": "V",  # f = (1/H) Σ_h V_h X S_h: V(1) is H times too small
    # one softmax over the heads' summed logits: equal to each head's while W = 0, so W(2) is the first to differ
    "shared_softmax": "W",
}


class MultiHeadTransformer(nn.Module):
    """f(X̃) = Σ_h V_h X S_h, S_h = softmax_j(x̃_jᵀ W_h x̃_N)."""

    def __init__(self, K: int, M: int, H: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K, self.H = K, H
        self.V = nn.Parameter(torch.zeros(H, K, K, dtype=dtype))
        self.W = nn.Parameter(torch.zeros(H, K + M, K + M, dtype=dtype))

    def head_attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S_h (n, H, N)."""
        logits = torch.einsum("nij,hik,nk->nhj", Xt, self.W, Xt[:, :, -1])
        return torch.softmax(logits, dim=2)

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """The heads' average attention (n, N)."""
        return self.head_attention(Xt).mean(dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = Σ_h V_h X S_h."""
        return torch.einsum("hkl,nlj,nhj->nk", self.V, Xt[:, : self.K, :], self.head_attention(Xt))


def model(config) -> MultiHeadTransformer:
    """Protocol (a): the module; the checker trains V and W."""
    return MultiHeadTransformer(config.K, config.M, config.heads, config.torch_dtype)


class _Averaged(MultiHeadTransformer):
    """Bug: the heads' values averaged instead of added."""

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return super().forward(Xt) / self.H


class _Shared(MultiHeadTransformer):
    """Bug: one softmax over the sum of the heads' logits, shared by every head."""

    def head_attention(self, Xt: torch.Tensor) -> torch.Tensor:
        logits = torch.einsum("nij,hik,nk->nj", Xt, self.W, Xt[:, :, -1])
        return torch.softmax(logits, dim=1)[:, None, :].expand(-1, self.H, -1)


def averaged_heads(config) -> MultiHeadTransformer:
    return _Averaged(config.K, config.M, config.heads, config.torch_dtype)


def shared_softmax(config) -> MultiHeadTransformer:
    return _Shared(config.K, config.M, config.heads, config.torch_dtype)
