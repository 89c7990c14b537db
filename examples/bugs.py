"""Known bugs planted one at a time in examples/plain_torch.py; ``rw check`` names the first wrong quantity.

rw check examples/bugs.py:softmax_over_tokens_only   # S at t = 0
rw check examples/bugs.py:eps_outside_log            # loss at t = 0
rw check examples/bugs.py:eta_twice_on_W             # W x̃_N at t = 2
rw check examples/bugs.py:unit_norm_positions        # W x̃_N at t = 2
rw check examples/bugs.py:summed_loss                # V at t = 1 (loss at t = 0 when ε ≠ 1)
rw check examples/bugs.py:transposed_V               # V at t = 1
"""

from __future__ import annotations

import torch
from plain_torch import OneLayerTransformer, training

#: factory name -> the first quantity ``rw check`` reports as wrong (tests/test_check_examples.py asserts it).
FIRST_WRONG = {
    "softmax_over_tokens_only": "S",
    "eps_outside_log": "loss",
    "eta_twice_on_W": "W_xN",
    "unit_norm_positions": "W_xN",
    "summed_loss": "V",  # its loss at t = 0 equals the mean's when ε = 1 (the minimal ε); V(1) is n times too large
    "transposed_V": "V",
}


class TokensOnlySoftmax(OneLayerTransformer):
    """Bug: the softmax runs over the N-1 token columns only; the query column gets no attention."""

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        query = Xt[:, :, -1]
        logits = torch.einsum("nij,ik,nk->nj", Xt, self.W, query)
        S = torch.zeros_like(logits)
        S[:, :-1] = torch.softmax(logits[:, :-1], dim=1)
        return S


class TransposedV(OneLayerTransformer):
    """Bug: f = Vᵀ X S."""

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        S = self.attention(Xt)
        X = Xt[:, : self.K, :]
        return torch.einsum("lk,nlj,nj->nk", self.V, X, S)


def softmax_over_tokens_only(config) -> TokensOnlySoftmax:
    return TokensOnlySoftmax(config.K, config.M, config.torch_dtype)


def transposed_V(config) -> TransposedV:
    return TransposedV(config.K, config.M, config.torch_dtype)


def eps_outside_log(config):
    """Bug: -log(z) + ε instead of -log(z + ε)."""
    return training(config, loss=lambda z, eps: -torch.log(z) + eps)


def eta_twice_on_W(config):
    """Bug: the W update is applied twice per step."""
    return training(config, w_updates=2)


def unit_norm_positions(config):
    """Bug: positional embeddings rescaled to unit norm instead of ‖p_i‖² = μ."""
    P = torch.as_tensor(config.P, dtype=config.torch_dtype)
    return training(config, P=P / P.norm(dim=0, keepdim=True))


def summed_loss(config):
    """Bug: the loss is summed over the population instead of its probability-weighted mean."""
    return training(config, reduce="sum")
