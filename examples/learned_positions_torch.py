"""The paper's model with learned positional embeddings, in plain PyTorch: ``rw check --model learned_positions``.

The positions start at the config's P (a buffer) and move by a trained displacement ΔP (M×N, zero at
t = 0): X̃ = [X; P + ΔP], logits X̃ᵀ W x̃_N, S = softmax, f = V X S. The kit hands X̃ = [X; P] (its P) and
trains V, W and dP; ΔP first moves at t = 3, so check with --steps 3 or more. Nothing from this toolkit
except the config ``rw check`` passes in.

    rw check --model learned_positions --steps 3 examples/learned_positions_torch.py:model

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model learned_positions --steps 3 examples/learned_positions_torch.py:query_keeps_P0
    rw check --model learned_positions --steps 3 examples/learned_positions_torch.py:keys_keep_P0
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model learned_positions`` reports as wrong.
FIRST_WRONG = {
    "query_keeps_P0": "dP",  # the query column ignores ΔP: ΔP's gradient loses the query term (t = 3)
    "keys_keep_P0": "dP",  # the keys ignore ΔP: ΔP's gradient loses the key terms (t = 3)
}


class LearnedPositions(nn.Module):
    """f(X̃) = V X S, S = softmax_j(x̃_jᵀ W x̃_N), x̃ = [x; p + Δp] with Δp trained."""

    shift_keys, shift_query = True, True

    def __init__(self, K: int, M: int, N: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))
        self.W = nn.Parameter(torch.zeros(K + M, K + M, dtype=dtype))
        self.dP = nn.Parameter(torch.zeros(M, N, dtype=dtype))

    def shifted(self, Xt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(keys X̃ (n, D, N), query x̃_N (n, D)) with the learned positions."""
        pad = torch.cat([torch.zeros(self.K, self.dP.shape[1], dtype=self.dP.dtype), self.dP], dim=0)
        keys = Xt + pad if self.shift_keys else Xt
        query = (Xt + pad)[:, :, -1] if self.shift_query else Xt[:, :, -1]
        return keys, query

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        keys, query = self.shifted(Xt)
        return torch.softmax(torch.einsum("nij,ik,nk->nj", keys, self.W, query), dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def model(config) -> LearnedPositions:
    """Protocol (a): the module; the checker trains V, W and dP."""
    return LearnedPositions(config.K, config.M, config.N, config.torch_dtype)


class _QueryKeepsP0(LearnedPositions):
    shift_query = False


class _KeysKeepP0(LearnedPositions):
    shift_keys = False


def query_keeps_P0(config) -> LearnedPositions:
    """Bug: the query column keeps the initial positions."""
    return _QueryKeepsP0(config.K, config.M, config.N, config.torch_dtype)


def keys_keep_P0(config) -> LearnedPositions:
    """Bug: the keys keep the initial positions."""
    return _KeysKeepP0(config.K, config.M, config.N, config.torch_dtype)
