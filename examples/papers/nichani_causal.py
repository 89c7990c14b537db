"""Nichani, Damian, Lee (2024), *How Transformers Learn Causal Structure with Gradient Descent*: the paper's
simplified two-layer transformer and its training in stages, for ``--model`` (issue 42).

The disentangled two-layer transformer of the paper (the authors' ``CatFormer``, github.com/eshnich/
transformers-learn-causal-structure, ``catformer.py``: one-hot tokens and one-hot positions concatenated, each
layer's attention output concatenated to the residual stream, attention matrices A initialised at zero) reduced as
the paper's analysis reduces it: the first layer's attention reads positions only, the second compares the current
token with the first layer's output, and the value is the token itself. At every position i, with e_s ∈ R^S one-hot:

    v_i      = Σ_{j≤i} softmax_j(A1[i, j]) e_{x_j}                 layer 1: A1 ∈ R^{L×L}, position against position
    f_i      = Σ_{j≤i} softmax_j(e_{x_i}ᵀ A2 v_j) e_{x_j}          layer 2: A2 ∈ R^{S×S}, token against layer 1's output
    logits_i = log(f_i + ε)

f_i is a probability vector (a convex combination of one-hot tokens): the paper's prediction, with the
cross-entropy −log f_i[y]. A short sequence need not contain the next token, where −log f_i[y] is +∞; the read-out
adds ε = 2⁻⁸ (an exact dyadic), so the toolkit's objective (softmax cross-entropy) is −log((f_i[y] + ε)/(1 + Sε)),
the paper's loss as ε → 0. The paper's loss is at the last position (the query x_T): ``--objective last``; ``lm``
averages every position.
The logarithm in the forward pass keeps the model to floats and balls: an exact arithmetic holds no logarithm in a
forward pass (``rw derive`` refuses it in one line, ``log at ...nichani_causal.py:...: the exact arithmetic has no
logarithm``); ``rw certify`` runs it.

Training in stages (the paper's algorithm): A1 from 0, A2 from β₀ I (β₀ = 1: with A2 = 0 the second layer's
attention is uniform whatever A1 is, so A1's gradient vanishes); first A1 alone for τ₁ steps with A2 fixed, then A2
alone for τ₂ steps with A1 fixed. The parameters are named ``A1`` and ``A2``; the stages are data the toolkit reads:

    gradient_steps(..., steps=τ₁ + τ₂, stages=STAGES(τ₁, τ₂))      STAGES(τ₁, τ₂) = [(τ₁, ["A1"]), (τ₂, ["A2"])]
    rw train --model examples/papers/nichani_causal.py:simplified --stages 'A1=100,A2=100' --steps 200 ...

Choices the paper leaves open: β₀ = 1, ε = 2⁻⁸, one head per layer; the factory's start is the paper's (A1 = 0,
A2 = β₀ I, no draw).

    simplified(S, L)   the reduced two-layer model
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: A2's start β₀ I and the read-out's smoothing ε (both exact dyadic rationals).
BETA0, EPS = 1.0, 2.0**-8


class SimplifiedTransformer(nn.Module):
    """The reduced two-layer model: position-only attention A1, then token-against-layer-1 attention A2."""

    tokens: torch.Tensor
    tril: torch.Tensor

    def __init__(self, S: int, L: int, beta0: float = BETA0, eps: float = EPS) -> None:
        super().__init__()
        self.eps = eps
        self.A1 = nn.Parameter(torch.zeros(L, L))
        self.A2 = nn.Parameter(beta0 * torch.eye(S))
        self.register_buffer("tokens", torch.eye(S))  # e_s, the one-hot rows
        self.register_buffer("tril", torch.tril(torch.ones(L, L)))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits log(f_i + ε) (n, L, S) of the token ids ``idx`` (n, L)."""
        T = idx.size(1)
        future = self.tril[:T, :T] == 0
        e = F.embedding(idx, self.tokens)  # (n, T, S)
        first = F.softmax(self.A1[:T, :T].masked_fill(future, float("-inf")), dim=-1)  # (T, T)
        v = (first.unsqueeze(-1) * e.unsqueeze(1)).sum(
            -2
        )  # (n, T, S): layer 1's output Σ_j first[i, j] e_{x_j}
        scores = (e @ self.A2) @ v.transpose(-2, -1)  # (n, T, T): e_{x_i}ᵀ A2 v_j
        f = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ e
        return torch.log(f + self.eps)


def STAGES(tau1: int, tau2: int) -> list[tuple[int, list[str]]]:
    """The paper's stages as ``gradient_steps(stages=...)`` reads them: A1 for ``tau1`` steps, then A2."""
    return [(tau1, ["A1"]), (tau2, ["A2"])]


def simplified(S: int, L: int) -> nn.Module:
    """The reduced two-layer model at the paper's start (A1 = 0, A2 = β₀ I), float64."""
    return SimplifiedTransformer(S, L).double()
