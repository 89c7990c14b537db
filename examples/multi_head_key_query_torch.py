"""H heads with separate key and query per head, in plain PyTorch: ``rw check --model multi_head --head-dim d``.

Head h has W_K,h and W_Q,h (d × (K+M)) and V_h (K × K), all zero at t = 0; its scores are
(W_K,h x̃_j)ᵀ (W_Q,h x̃_N), S_h = softmax over the N columns, and f = Σ_h V_h X S_h. The parameters are
stacked: V (H, K, K), W_K and W_Q (H, d, K+M), with H = ``config.heads`` and d = ``config.head_dim``;
``attention`` returns the heads' average. Nothing from this toolkit except the config ``rw check``
passes in.

    rw check --model multi_head --head-dim 2 examples/multi_head_key_query_torch.py:model

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model multi_head --head-dim 2 examples/multi_head_key_query_torch.py:averaged_heads  # V, t = 1
    rw check --model multi_head --head-dim 2 examples/multi_head_key_query_torch.py:default_init    # W_K, t = 0
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model multi_head --head-dim d`` reports as wrong.
FIRST_WRONG = {
    "averaged_heads": "V",  # f = (1/H) Σ_h V_h X S_h: V(1) is H times too small
    "default_init": "W_K",  # nn.Linear's random start instead of zero: W_K(0) ≠ 0
}


class KeyQueryHeads(nn.Module):
    """f(X̃) = Σ_h V_h X S_h, S_h = softmax_j((W_K,h x̃_j)ᵀ (W_Q,h x̃_N))."""

    def __init__(self, K: int, M: int, H: int, d: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K, self.H = K, H
        self.V = nn.Parameter(torch.zeros(H, K, K, dtype=dtype))
        self.W_K = nn.Parameter(torch.zeros(H, d, K + M, dtype=dtype))
        self.W_Q = nn.Parameter(torch.zeros(H, d, K + M, dtype=dtype))

    def head_attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S_h (n, H, N)."""
        keys = torch.einsum("hde,nej->nhdj", self.W_K, Xt)
        query = torch.einsum("hde,ne->nhd", self.W_Q, Xt[:, :, -1])
        return torch.softmax(torch.einsum("nhdj,nhd->nhj", keys, query), dim=2)

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        return self.head_attention(Xt).mean(dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("hkl,nlj,nhj->nk", self.V, Xt[:, : self.K, :], self.head_attention(Xt))


def model(config) -> KeyQueryHeads:
    """Protocol (a): the module; the checker trains V, W_K and W_Q."""
    return KeyQueryHeads(config.K, config.M, config.heads, config.head_dim, config.torch_dtype)


class _Averaged(KeyQueryHeads):
    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return super().forward(Xt) / self.H


def averaged_heads(config) -> KeyQueryHeads:
    """Bug: the heads' values averaged instead of added."""
    return _Averaged(config.K, config.M, config.heads, config.head_dim, config.torch_dtype)


def default_init(config) -> KeyQueryHeads:
    """Bug: keys and queries started at a random initialisation, not at zero."""
    net = KeyQueryHeads(config.K, config.M, config.heads, config.head_dim, config.torch_dtype)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        net.W_K.copy_(0.1 * torch.randn(net.W_K.shape, generator=generator, dtype=net.W_K.dtype))
        net.W_Q.copy_(0.1 * torch.randn(net.W_Q.shape, generator=generator, dtype=net.W_Q.dtype))
    return net
