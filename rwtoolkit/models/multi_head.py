"""H attention heads, each with its own merged key-query W_h and value matrix V_h: f = Σ_h V_h X S_h.

S_h = softmax(X̃ᵀ W_h x̃_N), so each head is the paper's model and the prediction adds the heads' values. With
H = 1 it is the paper's model exactly (tests/test_models.py). Gradient descent treats the heads alike: a
permutation of the heads maps the loss to itself, so its fixed subspace, where every head is the same, is
invariant. From the zero initialisation (every head zero, hence identical) the heads stay identical for
every t, and the H-head model trains as the one-head model with V and W scaled (docs/guide/models.md;
proved by ``rwtoolkit.engines.exact.induction_step``, certificate ``heads``).

The read-outs ``logits`` and ``S`` are the heads' averages (what every engine's per-input and mean-attention
read-outs report); the prediction uses each head's own attention.

With a head dimension d (``--head-dim``) each head has separate key and query matrices instead, W_K,h and
W_Q,h ∈ R^{d×(K+M)}, and scores (W_K,h x̃_j)ᵀ (W_Q,h x̃_N): the parameterisation of most implementations.
From zero their gradients vanish (each carries the other factor), so the attention of every head stays
uniform for every t (``rw zoo``'s ``key_query_stuck`` covers it).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class MultiHead(Model):
    """f = Σ_h V_h X softmax(X̃ᵀ W_h x̃_N) over H heads.

    >>> MultiHead(H=2).shapes(Sizes(K=3, M=4, N=4))
    {'V': (2, 3, 3), 'W': (2, 7, 7)}
    >>> MultiHead(H=2, d=1).shapes(Sizes(K=3, M=4, N=4))
    {'V': (2, 3, 3), 'W_K': (2, 1, 7), 'W_Q': (2, 1, 7)}
    """

    name: ClassVar[str] = "multi_head"
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ("H", "d")
    #: The merged heads' axes; with a head dimension d, ``W_K`` and ``W_Q`` replace ``W`` (``axes``).
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": ("head", "label", "token"),
        "W": ("head", "embed", "embed"),
        "W_K": ("head", None, "embed"),
        "W_Q": ("head", None, "embed"),
    }

    def __init__(self, H: int = 2, d: int | None = None) -> None:
        if not isinstance(H, int) or isinstance(H, bool) or H < 1:
            raise ValueError(f"heads H={H!r} is out of range: H must be an integer >= 1")
        if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d < 1):
            raise ValueError(f"head dimension d={d!r} is out of range: d must be an integer >= 1")
        self.H, self.d = H, d

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return {"H": self.H} if self.d is None else {"H": self.H, "d": self.d}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        if self.d is None:
            return {"V": (self.H, K, K), "W": (self.H, D, D)}
        return {"V": (self.H, K, K), "W_K": (self.H, self.d, D), "W_Q": (self.H, self.d, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        H = self.H
        n, K, _ = inputs.X.shape
        D = inputs.xN.shape[0]
        if self.d is None:
            w = tape.matmul(params["W"], inputs.xN)  # (H, D): W_h x̃_N
        else:  # W_K,hᵀ (W_Q,h x̃_N): the key side of head h's scores
            query = tape.reshape(tape.matmul(params["W_Q"], inputs.xN), (H, self.d, 1))  # (H, d, 1)
            w = tape.reshape(tape.matmul(tape.swap(params["W_K"]), query), (H, D))  # (H, D)
        logits = tape.matmul(tape.reshape(w, (1, H, D)), inputs.Xt)  # (n, H, N): x̃_jᵀ W_h x̃_N
        S = tape.softmax(logits)  # (n, H, N)
        XS = tape.reshape(tape.swap(tape.matmul(inputs.X, tape.swap(S))), (n, H, K, 1))  # (n, H, K, 1): X S_h
        heads = tape.matmul(params["V"], XS)  # (n, H, K, 1): V_h X S_h
        f = tape.sum(tape.reshape(heads, (n, H, K)), 1)  # (n, K)
        mean = tape.ar.asarray(np.array(Fraction(1, H), dtype=object))
        return Readouts(logits=tape.scale(tape.sum(logits, 1), mean), S=tape.scale(tape.sum(S, 1), mean), f=f)
