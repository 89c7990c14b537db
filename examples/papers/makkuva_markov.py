"""Makkuva et al. (2024), *Attention with Markov*: the paper's one-layer transformer on the binary source (issue 42).

The paper's model (its architecture figure, whose source is in the authors' repository github.com/Bond1995/Markov,
``Figures/architecture/architecture.tex``: Embedding → x_n, Attention → y_n, FF → z_n, Linear → logit_n, σ(·)), on a
binary sequence x_1..x_N, x_n ∈ {0, 1}, at every position n (docs/guide/papers-models.md: what was verified where):

    x_n     = x_n e + p_n                                   embedding: one vector e ∈ R^d, positions p_n ∈ R^d
    y_n     = x_n + W_O Σ_{i≤n} att_{n,i} W_V x_i           att_{n,i} = softmax_i(⟨W_Q x_n, W_K x_i⟩ / √d)
    z_n     = y_n + W_2 ReLU(W_1 y_n)                       the feed-forward block
    logit_n = ⟨a, z_n⟩ + b                                  the linear read-out; tied: a = e
    P(x_{n+1} = 1 | x_1..x_n) = σ(logit_n)

and the loss the binary cross-entropy at every position, averaged over n. σ(ℓ) is the softmax of the two logits
(0, ℓ), so the module returns the logits (0, logit_n) and the toolkit's ``lm`` objective (softmax cross-entropy at
every position) is the paper's loss exactly. In the same way the embedding is the table with rows (0, e): token 0
embeds to p_n, token 1 to e + p_n; the read-out is the same form, rows (0, a), with biases (0, b). Tied, the
read-out's table IS the embedding's (one parameter ``e``); untied, ``a`` is a second parameter.

The layer norm of the paper's code (Bond1995/Markov, nanoGPT's pre-norms before the attention and the
feed-forward block, and a final norm before the read-out, eps 1e-5) is in ``tied`` and ``untied``; ``tied_no_norm``
and ``untied_no_norm`` leave it out (the form of the equations above, which the exact arithmetic can run: √(var + ε)
is irrational in general, so only floats and balls run the normed model).

Choices the paper leaves open, the smallest that keeps its structure: d = 4, one head (d_h = d), feed-forward width
r = d = 4, no biases but b (the paper's), ReLU (the equations'; the code's GELU is left out), and the code's
initialisation: N(0, 0.02²) entries for e, p, W_Q, W_K, W_V, W_1 and a, N(0, (0.02/√2)²) for the maps into the
residual stream W_O and W_2, b = 0, layer norms γ = 1, β = 0; drawn under a fixed seed, the global generator left
as it was. The paper's model is binary: S ≠ 2 is refused.

    tied(S, L)            a = e, with layer norms (floats and balls)
    untied(S, L)          a separate read-out a, with layer norms (floats and balls)
    tied_no_norm(S, L)    a = e, no layer norm (every engine)
    untied_no_norm(S, L)  a separate read-out a, no layer norm (every engine)

    rw certify --model examples/papers/makkuva_markov.py:tied_no_norm --spec binary.json --init own --steps 20 --out DIR
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

#: The width of the residual stream and of the feed-forward block; the standard deviation of the initialisation.
D_MODEL, D_FF, INIT_STD = 4, 4, 0.02


class AttentionWithMarkov(nn.Module):
    """The one-layer transformer of Makkuva et al. on binary sequences, returning the logits (0, logit_n)."""

    tril: torch.Tensor
    zero_row: torch.Tensor
    zero: torch.Tensor

    def __init__(self, L: int, tied: bool, norm: bool, d: int = D_MODEL, r: int = D_FF) -> None:
        super().__init__()
        self.d = d
        self.e = nn.Parameter(torch.empty(1, d))  # the embedding vector e (a row)
        self.p = nn.Parameter(torch.empty(L, d))  # the positional embeddings p_1..p_L
        self.W_Q = nn.Linear(d, d, bias=False)
        self.W_K = nn.Linear(d, d, bias=False)
        self.W_V = nn.Linear(d, d, bias=False)
        self.W_O = nn.Linear(d, d, bias=False)
        self.W_1 = nn.Linear(d, r, bias=False)
        self.W_2 = nn.Linear(r, d, bias=False)
        self.a = None if tied else nn.Parameter(torch.empty(1, d))  # the read-out a (tied: a = e)
        self.b = nn.Parameter(torch.zeros(1))
        self.ln_1 = nn.LayerNorm(d) if norm else nn.Identity()
        self.ln_2 = nn.LayerNorm(d) if norm else nn.Identity()
        self.ln_f = nn.LayerNorm(d) if norm else nn.Identity()
        self.register_buffer("tril", torch.tril(torch.ones(L, L)))
        self.register_buffer("zero_row", torch.zeros(1, d))
        self.register_buffer("zero", torch.zeros(1))
        for w in (self.e, self.p, self.W_Q.weight, self.W_K.weight, self.W_V.weight, self.W_1.weight):
            nn.init.normal_(w, std=INIT_STD)
        for w in (self.W_O.weight, self.W_2.weight):
            nn.init.normal_(w, std=INIT_STD / math.sqrt(2))
        if self.a is not None:
            nn.init.normal_(self.a, std=INIT_STD)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """W_O Σ_{i≤n} softmax_i(⟨W_Q x_n, W_K x_i⟩ / √d) W_V x_i at every n."""
        T = x.size(1)
        scores = self.W_Q(x) @ self.W_K(x).transpose(-2, -1) / math.sqrt(self.d)
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return self.W_O(F.softmax(scores, dim=-1) @ self.W_V(x))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (n, L, 2) = (0, logit_n) of the binary token ids ``idx`` (n, L)."""
        T = idx.size(1)
        table = torch.cat([self.zero_row, self.e])  # token 0 -> 0, token 1 -> e
        x = F.embedding(idx, table) + self.p[:T]
        y = x + self.attention(self.ln_1(x))
        z = y + self.W_2(F.relu(self.W_1(self.ln_2(y))))
        readout = table if self.a is None else torch.cat([self.zero_row, self.a])
        return self.ln_f(z) @ readout.T + torch.cat([self.zero, self.b])


def build(S: int, L: int, tied: bool, norm: bool, seed: int = 0) -> AttentionWithMarkov:
    """A float64 :class:`AttentionWithMarkov` drawn under ``seed`` (the global generator kept); binary only."""
    if S != 2:
        raise ValueError(f"S={S}: the model of Makkuva et al. reads binary sequences; S must be 2")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return AttentionWithMarkov(L, tied, norm).double()


def tied(S: int, L: int) -> nn.Module:
    """The paper's model with weight tying (a = e) and the code's layer norms: floats and balls."""
    return build(S, L, tied=True, norm=True)


def untied(S: int, L: int) -> nn.Module:
    """The paper's model without weight tying (a separate read-out a), with the code's layer norms."""
    return build(S, L, tied=False, norm=True)


def tied_no_norm(S: int, L: int) -> nn.Module:
    """The paper's equations with weight tying (a = e) and no layer norm: every engine, the exact one too."""
    return build(S, L, tied=True, norm=False)


def untied_no_norm(S: int, L: int) -> nn.Module:
    """The paper's equations without weight tying and without layer norm: every engine."""
    return build(S, L, tied=False, norm=False)
