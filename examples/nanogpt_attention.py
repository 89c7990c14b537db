"""A nanoGPT-style transformer, written as the field's codebases write it, for ``--model`` (issue 41).

Token and positional embeddings (``nn.Embedding``), per-head query, key, value and output maps (bias-free
``nn.Linear``), scores divided by √(head size), a causal ``masked_fill(-inf)`` with a registered ``tril`` buffer,
residual addition and an unembedding ``nn.Linear``; optionally a feed-forward block (ReLU or GELU) and
``nn.LayerNorm`` before each block and the unembedding. Nothing from this toolkit is imported: the toolkit traces
the module (``rwtoolkit.models.traced.program_factory``).

A factory takes the alphabet size S and the sequence length L and returns the module, mapping token ids (n, L)
int64 to logits (n, L, S). Its parameters are drawn by PyTorch's own initialisers under a fixed seed (the global
generator is left as it was), so the same factory gives the same start every time.

    one_layer(S, L)     one attention-only layer (2 heads of size 2, d_model 4)
    two_layer(S, L)     two attention-only layers
    with_mlp(S, L)      one layer with a ReLU feed-forward block
    with_layer_norm(S, L)  one layer with layer norms and a GELU feed-forward block (floats and balls only)

The training loop a researcher writes for it, full-batch on the population of sequences ``rw check`` hands over
(``config.tokens``, ``config.labels``, their exact probabilities ``config.weights``), with ``F.cross_entropy`` at
every position and ``torch.optim.SGD``; ``rw check`` compares it with the model traced from the same factory:

    rw check examples/nanogpt_attention.py:training --model examples/nanogpt_attention.py:one_layer
    rw check examples/nanogpt_attention.py:training_two_layer --model examples/nanogpt_attention.py:two_layer
    rw check examples/nanogpt_attention.py:training --model examples/nanogpt_attention.py:one_layer --optimizer adam

examples/bugs_nanogpt.py plants three loop bugs (the loss at the last position only; an unweighted mean over
the population; momentum left on) that ``rw check`` fails at their first quantity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

#: The width of the residual stream and the number of heads (head size D_MODEL // N_HEAD) of the examples.
D_MODEL, N_HEAD = 4, 2


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, nanoGPT's: q, k, v per head, softmax((q kᵀ) / √hs) with the future
    masked to −∞, then the output map."""

    def __init__(self, d_model: int, n_head: int, L: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(d_model, d_model, bias=False)
        self.key = nn.Linear(d_model, d_model, bias=False)
        self.value = nn.Linear(d_model, d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(L, L)).view(1, 1, L, L))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        hs = C // self.n_head
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.tril[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    """The feed-forward block: Linear(d, 4d), ReLU or GELU, Linear(4d, d)."""

    def __init__(self, d_model: int, activation: str) -> None:
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.ReLU() if activation == "relu" else nn.GELU()
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.fc(x)))


class Block(nn.Module):
    """x + attn(ln(x)), then x + mlp(ln(x)) where the block has a feed-forward part (ln: identity without norms)."""

    def __init__(self, d_model: int, n_head: int, L: int, mlp: str | None, norm: bool) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model) if norm else nn.Identity()
        self.attn = CausalSelfAttention(d_model, n_head, L)
        self.ln2 = nn.LayerNorm(d_model) if norm and mlp else nn.Identity()
        self.mlp = MLP(d_model, mlp) if mlp else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        if self.mlp is not None:
            x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    """Token and position embeddings, ``n_layer`` blocks, an optional final layer norm, the unembedding."""

    def __init__(
        self, S: int, L: int, n_layer: int, mlp: str | None = None, norm: bool = False, d_model: int = D_MODEL
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(S, d_model)
        self.wpe = nn.Embedding(L, d_model)
        self.blocks = nn.ModuleList(Block(d_model, N_HEAD, L, mlp, norm) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model) if norm else nn.Identity()
        self.lm_head = nn.Linear(d_model, S, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, S) of the token ids ``idx`` (B, T)."""
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build(S: int, L: int, n_layer: int, mlp: str | None = None, norm: bool = False, seed: int = 0) -> GPT:
    """A float64 :class:`GPT` drawn by PyTorch's initialisers under ``seed`` (the global generator kept)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(S, L, n_layer, mlp, norm).double()


def one_layer(S: int, L: int) -> nn.Module:
    """One attention-only layer: embeddings, causal self-attention with a residual, the unembedding."""
    return build(S, L, 1)


def two_layer(S: int, L: int) -> nn.Module:
    """Two attention-only layers."""
    return build(S, L, 2)


def with_mlp(S: int, L: int) -> nn.Module:
    """One layer with a ReLU feed-forward block (exact arithmetic decides each ReLU's sign)."""
    return build(S, L, 1, mlp="relu")


def with_layer_norm(S: int, L: int) -> nn.Module:
    """One layer with pre-norms, a final norm and a GELU feed-forward block: floats and balls (an exact
    arithmetic refuses GELU and layer norm and names the ball engine)."""
    return build(S, L, 1, mlp="gelu", norm=True)


def make_optimizer(net: nn.Module, config: Any, momentum: float = 0.0) -> torch.optim.Optimizer:
    """``torch.optim.Adam`` where the check asks for Adam (``rw check --optimizer adam``: ``config.optimizer``),
    else ``torch.optim.SGD`` at lr η."""
    rule = config.optimizer or {"name": "gd"}
    if rule["name"] == "adam":
        return torch.optim.Adam(
            net.parameters(), lr=float(config.eta), betas=tuple(rule["betas"]), eps=rule["eps"]
        )
    return torch.optim.SGD(net.parameters(), lr=float(config.eta), momentum=momentum)


def train(
    net: nn.Module,
    config: Any,
    last_only: bool = False,
    weighted: bool = True,
    momentum: float = 0.0,
    optimizer: Callable[[nn.Module, Any], Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Full-batch training of ``net`` on the population ``config`` hands over, yielding the state at t = 0, 1, …:
    every parameter by its name, the logits and the loss.

    The loss is the cross-entropy of the logits at position i against token i + 1, averaged over the positions
    and weighted by each sequence's exact probability; one step of ``torch.optim.SGD`` at lr η, or of
    ``torch.optim.Adam`` (:func:`make_optimizer`). The keyword arguments plant one mistake each
    (examples/bugs_nanogpt.py): the loss at the last position only, an unweighted mean over the sequences,
    momentum left on, a hand-written optimizer.
    """
    seqs = torch.as_tensor(config.sequences)  # (n, L + 1): x_1..x_N
    x, y = seqs[:, :-1], seqs[:, 1:]  # inputs x_1..x_L, next tokens x_2..x_N
    weights = torch.as_tensor(config.weights, dtype=torch.float64)
    opt = make_optimizer(net, config, momentum) if optimizer is None else optimizer(net, config)
    while True:
        logits = net(x)  # (n, L, S)
        B, T, S = logits.shape
        ce = F.cross_entropy(logits.reshape(B * T, S), y.reshape(B * T), reduction="none").view(B, T)
        per_sequence = ce[:, -1] if last_only else ce.mean(dim=1)
        loss = (weights * per_sequence).sum() if weighted else per_sequence.mean()
        state = {name: p.detach().clone() for name, p in net.named_parameters()}
        yield {**state, "token_logits": logits.detach(), "loss": loss.item()}
        opt.zero_grad()
        loss.backward()
        opt.step()


def training(
    config: Any, build_net: Callable[[int, int], nn.Module] = one_layer, **bug: Any
) -> Iterator[dict]:
    """``rw check``'s training-loop protocol: :func:`train` on a fresh one-layer model (the factory's own start)."""
    return train(build_net(config.K, config.L), config, **bug)


def training_two_layer(config: Any) -> Iterator[dict]:
    """:func:`training` of the two-layer model."""
    return training(config, two_layer)
