"""Makkuva et al.'s parameterisation in plain PyTorch: ``rw check --model tied_embedding`` / ``untied_embedding``.

Each token position j = 1..N−1 is embedded as u_j = E x_j + p_j (E trained, p_j the config's position),
the last token attends over the token positions with scores u_jᵀ W u_q, the residual keeps u_q, and the
read-out is a softmax over the K next symbols: z = u_q + W_V Σ_j S_j u_j, f = softmax(R z + b), with
R = Eᵀ (weight tying) or a matrix A of its own. The kit hands X̃ = [X; P], whose last column is the slot
N with no token: this model never attends to it (S_N = 0). From zero this model does not move on a task
whose next symbol is uniform (f = 1/K and the read-out's gradient vanishes), so the kit draws finite tasks
for it. Nothing from this toolkit except the config ``rw check`` passes in.

    rw check --model tied_embedding examples/tied_embedding_torch.py:tied
    rw check --model untied_embedding examples/tied_embedding_torch.py:untied

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model tied_embedding examples/tied_embedding_torch.py:detached_readout
    rw check --model tied_embedding examples/tied_embedding_torch.py:slot_attended
    rw check --model untied_embedding examples/tied_embedding_torch.py:slot_as_query
    rw check --model untied_embedding examples/tied_embedding_torch.py:value_dropped
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> (the model it implements, the first quantity ``rw check`` reports as wrong).
FIRST_WRONG = {
    "detached_readout": ("tied_embedding", "E"),  # the tied read-out Eᵀ gets no gradient: E(1) = 0
    "slot_attended": (
        "tied_embedding",
        "S",
    ),  # the softmax runs over the empty slot N too: S_N = 1/N at t = 0
    "slot_as_query": ("untied_embedding", "S"),  # the slot N (no token) queries and is attended: S_N ≠ 0
    "value_dropped": ("untied_embedding", "W_V"),  # z = u_q without the attended values: W_V never moves
}


class TiedEmbedding(nn.Module):
    """u_j = E x_j + p_j, S = softmax_j(u_jᵀ W u_q), z = u_q + W_V Σ_j S_j u_j, f = softmax(R z + b)."""

    tied = True
    detach_readout = attend_slot = slot_query = drop_value = False

    def __init__(self, K: int, M: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.K = K
        self.E = nn.Parameter(torch.zeros(M, K, dtype=dtype))
        self.W = nn.Parameter(torch.zeros(M, M, dtype=dtype))
        self.W_V = nn.Parameter(torch.zeros(M, M, dtype=dtype))
        self.b = nn.Parameter(torch.zeros(K, dtype=dtype))
        if not self.tied:
            self.A = nn.Parameter(torch.zeros(K, M, dtype=dtype))

    @classmethod
    def for_config(cls, config) -> TiedEmbedding:
        """The module at zero for ``config`` (K tokens, M positional rows, the check's dtype)."""
        return cls(config.K, config.M, config.torch_dtype)

    def embedded(self, Xt: torch.Tensor) -> torch.Tensor:
        """u (n, M, N−1), or (n, M, N) with the slot when the slot takes part."""
        last = Xt.shape[2] if (self.attend_slot or self.slot_query) else Xt.shape[2] - 1
        X, P = Xt[:, : self.K, :last], Xt[:, self.K :, :last]
        return torch.einsum("mk,nkj->nmj", self.E, X) + P

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """S (n, N): the attention of the last token (the slot N gets 0)."""
        u = self.embedded(Xt)
        scores = torch.einsum("nmj,ml,nl->nj", u, self.W, u[:, :, -1])
        S = torch.softmax(scores, dim=1)
        if S.shape[1] == Xt.shape[2]:
            return S
        return torch.cat([S, torch.zeros(S.shape[0], 1, dtype=S.dtype)], dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K): the predicted law of the next symbol."""
        u = self.embedded(Xt)
        S = self.attention(Xt)[:, : u.shape[2]]
        z = u[:, :, -1]
        if not self.drop_value:
            z = z + torch.einsum("ml,nlj,nj->nm", self.W_V, u, S)
        R = self.E.T if self.tied else self.A
        if self.detach_readout:
            R = R.detach()
        return torch.softmax(z @ R.T + self.b, dim=1)


class UntiedEmbedding(TiedEmbedding):
    tied = False


def tied(config) -> TiedEmbedding:
    """Protocol (a): the weight-tied module; the checker trains E, W, W_V and b."""
    return TiedEmbedding.for_config(config)


def untied(config) -> UntiedEmbedding:
    """Protocol (a): the untied module; the checker trains E, W, W_V, b and A."""
    return UntiedEmbedding.for_config(config)


class _Detached(TiedEmbedding):
    detach_readout = True


class _SlotAttended(TiedEmbedding):
    attend_slot = True

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        u = self.embedded(Xt)
        S = self.attention(Xt)
        z = u[:, :, -2] + torch.einsum("ml,nlj,nj->nm", self.W_V, u, S)  # the last token still queries
        return torch.softmax(z @ self.E + self.b, dim=1)

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        u = self.embedded(Xt)
        return torch.softmax(torch.einsum("nmj,ml,nl->nj", u, self.W, u[:, :, -2]), dim=1)


class _SlotAsQuery(UntiedEmbedding):
    slot_query = True


class _ValueDropped(UntiedEmbedding):
    drop_value = True


def detached_readout(config) -> TiedEmbedding:
    """Bug: the tied read-out Eᵀ detached from the graph (only the embedding path trains E)."""
    return _Detached.for_config(config)


def slot_attended(config) -> TiedEmbedding:
    """Bug: the attention's softmax runs over the empty slot N as well as the tokens."""
    return _SlotAttended.for_config(config)


def slot_as_query(config) -> UntiedEmbedding:
    """Bug: the slot N (no token) is the query and the read-out position, not the last token."""
    return _SlotAsQuery.for_config(config)


def value_dropped(config) -> UntiedEmbedding:
    """Bug: the residual alone is read out, z = u_q: the attended values never reach the prediction."""
    return _ValueDropped.for_config(config)
