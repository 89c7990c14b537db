"""Edelman, Edelman, Goel, Malach, Tsilivis (2024), *The Evolution of Statistical Induction Heads*: the paper's
two-layer attention-only transformer on in-context Markov chains (ICL-MC), for ``--model`` (issue 42).

Their positional scheme is RELATIVE, not absolute: the token embedding carries no position; each attention layer
has its own table of relative position vectors r_k (k = i − j ≥ 0, Shaw et al.'s "relative position
representations" on the keys) added inside the score. Found in the authors' code,
github.com/EzraEdelman/Evolution-of-Statistical-Induction-Heads, ``mingpt/model_new.py`` (class
``Attention_Only_Transformer``, the model ``training_pipeline.py`` builds for its default "Two Layer Attention
Only Transformer", ``abs_embd = False``): there ``wpe`` is an ``nn.Embedding`` per layer indexed by i − j and the
score is (q_i·k_j + q_i·r_{i−j}) / √d_h. Layer ℓ = 1, 2, at every position i:

    h⁰_i    = E e_{x_i}                                            token embedding only
    s_ij    = (W_Q LN(h_i))·(W_K LN(h_j) + r^ℓ_{i−j}) / √d_h,   j ≤ i  (j > i masked out of the softmax)
    h^ℓ_i   = h^{ℓ−1}_i + W_O Σ_{j≤i} softmax_j(s_i·) W_V LN(h_j)
    logits_i = U LN(h²_i)                                           the softmax read-out

trained with the cross-entropy of softmax(logits_i) against x_{i+1} at every position (``--objective lm``).

``two_layer`` is that model with the code's layer norms (a pre-norm in each layer and a final norm, ``nn.LayerNorm``,
eps 1e-5): floats and balls (√(var + ε) is irrational in general: the exact arithmetic refuses it and names the
ball engine).

Choices the paper leaves open, the smallest that keeps its structure: d = 4, one head per layer (the code's
default ``n_head = 1``; head size d_h = d), relative offsets 0..L−1 (the future is masked, so its vectors are never
read), no biases (the code's), no dropout (exact population GD has none), and the code's initialisation: N(0, 0.02²)
entries for E, the relative tables, W_Q, W_K, W_V and U, N(0, 0.01²) for W_O (the code's ``c_proj``), layer norms
γ = 1, β = 0; drawn under a fixed seed, the global generator left as it was.

    two_layer(S, L)   with the code's layer norms (floats and balls)

    rw certify --model examples/papers/edelman_induction.py:two_layer --spec icl.json --init own --steps 20 --out DIR
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

#: The width of the residual stream (one head of size D_MODEL) and the initialisation's standard deviations.
D_MODEL, INIT_STD, OUT_STD = 4, 0.02, 0.01


class RelativeAttention(nn.Module):
    """One causal attention head with relative position vectors on the keys (the authors' ``Attention``)."""

    offsets: torch.Tensor
    tril: torch.Tensor

    def __init__(self, d: int, L: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.Q = nn.Linear(d, d, bias=False)
        self.K = nn.Linear(d, d, bias=False)
        self.V = nn.Linear(d, d, bias=False)
        self.c_proj = nn.Linear(d, d, bias=False)
        self.wpe = nn.Embedding(L, d)  # r_k, k = i − j = 0..L−1
        offsets = torch.arange(L).view(-1, 1) - torch.arange(L).view(1, -1)
        self.register_buffer(
            "offsets", offsets.clamp(min=0)
        )  # the future (i − j < 0) is masked; read r_0 there
        self.register_buffer("tril", torch.tril(torch.ones(L, L)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x + W_O Σ_{j≤i} softmax_j((q_i·k_j + q_i·r_{i−j}) / √d) v_j at every i."""
        T, d = x.size(1), x.size(2)
        h = self.ln(x)
        q, k, v = self.Q(h), self.K(h), self.V(h)
        rel = self.wpe(self.offsets[:T, :T])  # (T, T, d): r_{i−j}
        relative = (q.unsqueeze(-2) * rel).sum(-1)  # (n, T, T): q_i·r_{i−j}
        scores = (q @ k.transpose(-2, -1) + relative) / math.sqrt(d)
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return x + self.c_proj(F.softmax(scores, dim=-1) @ v)


class AttentionOnlyTransformer(nn.Module):
    """Token embedding, two relative-position attention layers, the final norm, the read-out."""

    def __init__(self, S: int, L: int, d: int = D_MODEL, n_layer: int = 2) -> None:
        super().__init__()
        self.wte = nn.Embedding(S, d)
        self.layers = nn.ModuleList(RelativeAttention(d, L) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, S, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=OUT_STD if name.endswith("c_proj.weight") else INIT_STD)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (n, L, S) of the token ids ``idx`` (n, L)."""
        x = self.wte(idx)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_f(x))


def build(S: int, L: int, seed: int = 0) -> AttentionOnlyTransformer:
    """A float64 :class:`AttentionOnlyTransformer` drawn under ``seed`` (the global generator kept)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return AttentionOnlyTransformer(S, L).double()


def two_layer(S: int, L: int) -> nn.Module:
    """The paper's two-layer attention-only transformer with the code's layer norms: floats and balls."""
    return build(S, L)
