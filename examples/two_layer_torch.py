"""A two-layer attention-only transformer in plain PyTorch, as a user would write it: ``rw check --model two_layer``.

Layer 1 is causal at every position (a_i = Σ_{j≤i} softmax_j(x̃_jᵀ A1 x̃_i) x̃_j, a masked softmax), the
residual stream is the concatenation h_i = [x̃_i; a_i], layer 2 attends from the last position with
scores h_jᵀ A2 h_N, A2 = [[A2xx, A2xa], [A2ax, A2aa]], and f = V X S reads the tokens. Every parameter is
zero at t = 0. Nothing from this toolkit except the config ``rw check`` passes in.

    rw check --model two_layer examples/two_layer_torch.py:model

Wrong variants, each caught at the first quantity of ``FIRST_WRONG``:

    rw check --model two_layer examples/two_layer_torch.py:non_causal      # A2ax at t = 2
    rw check --model two_layer examples/two_layer_torch.py:value_reads_a   # V at t = 1
"""

from __future__ import annotations

import torch
from torch import nn

#: factory name -> the first quantity ``rw check --model two_layer`` reports as wrong.
FIRST_WRONG = {
    # layer 1 attends to every position: a_i differs for i < N from t = 0 (a_N does not: the last position
    # sees every position either way), and only A2's gradient sees a: A2ax, the block reading a_j, at t = 2
    "non_causal": "A2ax",
    # f reads the tokens of layer 1's output instead of the input's: V(1) is wrong
    "value_reads_a": "V",
}


class TwoLayer(nn.Module):
    """f(X̃) = V X softmax_j(h_jᵀ A2 h_N), h_i = [x̃_i; a_i], a_i causal attention of layer 1."""

    causal = True

    def __init__(self, K: int, M: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        D = K + M
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))
        self.A1 = nn.Parameter(torch.zeros(D, D, dtype=dtype))
        self.A2 = nn.Parameter(torch.zeros(2 * D, 2 * D, dtype=dtype))

    def named_blocks(self) -> dict[str, torch.Tensor]:
        D = self.A1.shape[0]
        return {
            "A2xx": self.A2[:D, :D],
            "A2xa": self.A2[:D, D:],
            "A2ax": self.A2[D:, :D],
            "A2aa": self.A2[D:, D:],
        }

    def layer_one(self, Xt: torch.Tensor) -> torch.Tensor:
        """a (n, D, N)."""
        N = Xt.shape[2]
        scores = torch.einsum("ndj,de,nei->nij", Xt, self.A1, Xt)  # [i, j] = x̃_jᵀ A1 x̃_i
        if self.causal:
            mask = torch.ones(N, N, dtype=torch.bool).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.einsum("ndj,nij->ndi", Xt, torch.softmax(scores, dim=2))

    def attention(self, Xt: torch.Tensor) -> torch.Tensor:
        """Layer 2's attention S (n, N) from the last position."""
        h = torch.cat([Xt, self.layer_one(Xt)], dim=1)  # (n, 2D, N)
        scores = torch.einsum("ndj,de,ne->nj", h, self.A2, h[:, :, -1])
        return torch.softmax(scores, dim=1)

    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        """f (n, K) = V X S."""
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def model(config) -> nn.Module:
    """Protocol (b), the user's own loop: full-batch GD on the module, states read by block."""
    return _loop(TwoLayer(config.K, config.M, config.torch_dtype), config)


def _loop(net: TwoLayer, config):
    Xt = config.inputs()
    labels = torch.as_tensor(config.labels)
    weights = torch.as_tensor(config.weights, dtype=config.torch_dtype)
    eta = float(config.eta)
    for _ in range(config.steps + 1):
        f = net(Xt)
        state = {"V": net.V.detach().clone(), "A1": net.A1.detach().clone()}
        state.update({k: v.detach().clone() for k, v in net.named_blocks().items()})
        state["S"] = net.attention(Xt).detach()
        state["f"] = f.detach()
        loss = (weights * config.loss_fn(f.gather(1, labels[:, None])[:, 0])).sum()
        state["loss"] = loss.detach()
        yield state
        net.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= eta * p.grad


class _NonCausal(TwoLayer):
    causal = False


class _ValueReadsA(TwoLayer):
    def forward(self, Xt: torch.Tensor) -> torch.Tensor:
        a = self.layer_one(Xt)
        return torch.einsum("kl,nlj,nj->nk", self.V, a[:, : self.K, :], self.attention(Xt))


def non_causal(config):
    """Bug: layer 1 attends to every position, not only j ≤ i."""
    return _loop(_NonCausal(config.K, config.M, config.torch_dtype), config)


def value_reads_a(config):
    """Bug: the prediction reads the tokens of layer 1's output a_j instead of x_j."""
    return _loop(_ValueReadsA(config.K, config.M, config.torch_dtype), config)
