"""A single-layer transformer with a trained token embedding and a logit read-out, tied or untied: the
parameterisation of Makkuva et al., *Attention with Markov* (2024), attention only (docs/guide/models.md).

Each token position j = 1..N−1 is embedded as u_j = E x_j + p_j: a trained embedding E (M×K) of the
one-hot token x_j, added to its fixed position p_j (the columns of P). The last token, u_q with q = N−1,
attends causally over every token position, and the residual stream keeps it:

    a = Σ_{j ≤ N−1} σ_j(u_jᵀ W u_q) u_j,        z = u_q + W_V a,        f = softmax(R z + b),

with f_k the predicted probability that the next symbol is k. With *weight tying* (``tied_embedding``) the
read-out is the embedding itself, R = Eᵀ; without it (``untied_embedding``) R = A is a parameter of its
own. For K = 2 and e_0 = 0 this is the paper's σ(⟨e, z⟩ + b) of a binary source with x_n e + p_n as the
embedding (their feed-forward layer and layer norm left out). The slot N, which carries no token in this
toolkit's inputs, is not attended: S_N = 0 and its logit reads 0.

Weight tying is what makes the read-out quadratic in E: R z contains Eᵀ E x_q, so at E = 0 the loss's
curvature along E has a term Σ_{k,l} P(x_q = l)(f_k − P(y = k | x_q = l)) e_kᵀ e_l that the untied model
has only as a bilinear (indefinite) A–E term. ``rw zoo``'s claim ``makkuva_unigram_point_tied`` computes
the exact Hessian at the unigram point E = 0 (f = π for every input) on binary (p, q) sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class TiedEmbedding(Model):
    """u_j = E x_j + p_j, a = Σ_j σ_j(u_jᵀ W u_q) u_j, z = u_q + W_V a, f = softmax(Eᵀ z + b) (module text).

    >>> TiedEmbedding().shapes(Sizes(K=2, M=4, N=4))
    {'E': (4, 2), 'W': (4, 4), 'W_V': (4, 4), 'b': (2,)}
    """

    name: ClassVar[str] = "tied_embedding"
    #: Whether the read-out is Eᵀ (tied) or a parameter A of its own.
    TIED: ClassVar[bool] = True
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "E": ("position", "token"),
        "W": ("position", "position"),
        "W_V": ("position", "position"),
        "b": ("label",),
    }
    #: The query is the last token, a key position: only symmetries that fix the positions act.
    POSITION_SYMMETRIC: ClassVar[bool] = False

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, M = sizes.K, sizes.M
        shapes: dict[str, tuple[int, ...]] = {"E": (M, K), "W": (M, M), "W_V": (M, M), "b": (K,)}
        if not self.TIED:
            shapes["A"] = (K, M)
        return shapes

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        ar = tape.ar
        X, Xt = inputs.X, inputs.Xt
        n, K, N = (int(s) for s in X.shape)
        if N < 2:
            raise ValueError(f"--model {self.name} needs N >= 2 (one token at least), not N={N}")
        tokens = ar.asarray(np.eye(N, N - 1, dtype=np.int64))  # (N, N-1): the token positions 1..N-1
        last = ar.asarray(np.eye(N - 1, dtype=np.int64)[:, N - 2 :])  # (N-1, 1): the last token
        u = tape.matmul(tape.add(tape.matmul(params["E"], X), Xt[:, K:, :]), tokens)  # (n, M, N-1)
        uq = tape.matmul(u, last)  # (n, M, 1)
        scores = tape.matmul(tape.swap(tape.matmul(params["W"], uq)), u)  # (n, 1, N-1): u_jᵀ W u_q
        S1 = tape.softmax(scores)
        z = tape.add(uq, tape.matmul(params["W_V"], tape.matmul(u, tape.swap(S1))))  # (n, M, 1)
        R = tape.swap(params["E"]) if self.TIED else params["A"]  # (K, M)
        f = tape.softmax(tape.add(tape.reshape(tape.matmul(R, z), (n, K)), params["b"]))
        slot = ar.asarray(np.eye(N - 1, N, dtype=np.int64))  # (N-1, N): the slot N gets 0
        logits = tape.reshape(tape.matmul(scores, slot), (n, N))
        S = tape.reshape(tape.matmul(S1, slot), (n, N))
        return Readouts(logits=logits, S=S, f=f)


class UntiedEmbedding(TiedEmbedding):
    """The same model with a read-out A (K×M) of its own: f = softmax(A z + b).

    >>> UntiedEmbedding().shapes(Sizes(K=2, M=4, N=4))["A"]
    (2, 4)
    """

    name: ClassVar[str] = "untied_embedding"
    TIED: ClassVar[bool] = False
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        **TiedEmbedding.AXES,
        "A": ("label", "position"),
    }
