"""H attention heads, each with its own merged key-query W_h and value matrix V_h: f = Σ_h V_h X S_h.

S_h = softmax(X̃ᵀ W_h x̃_N), so each head is the paper's model and the prediction adds the heads' values. With
H = 1 it is the paper's model exactly (tests/test_models.py). Gradient descent treats the heads alike: a
permutation of the heads maps the loss to itself, so its fixed subspace, where every head is the same, is
invariant. From the zero initialisation (every head zero, hence identical) the heads stay identical for
every t, and the H-head model trains as the one-head model with V and W scaled (docs/guide/models.md;
proved by ``rwsymbolic.induction_step``, certificate ``heads``).

The read-outs ``logits`` and ``S`` are the heads' averages (what every engine's per-input and mean-attention
read-outs report); the prediction uses each head's own attention.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from rwmodels._arith import Array
from rwmodels._model import Inputs, Model, Readouts
from rwmodels._tape import Tape, Var


class MultiHead(Model):
    """f = Σ_h V_h X softmax(X̃ᵀ W_h x̃_N) over H heads.

    >>> MultiHead(H=2).shapes(3, 7)
    {'V': (2, 3, 3), 'W': (2, 7, 7)}
    """

    name: ClassVar[str] = "multi_head"
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ("H",)
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": ("head", "label", "token"),
        "W": ("head", "embed", "embed"),
    }

    def __init__(self, H: int = 2) -> None:
        if not isinstance(H, int) or isinstance(H, bool) or H < 1:
            raise ValueError(f"heads H={H!r} is out of range: H must be an integer >= 1")
        self.H = H

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return {"H": self.H}

    def shapes(self, K: int, D: int) -> dict[str, tuple[int, ...]]:
        return {"V": (self.H, K, K), "W": (self.H, D, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        H = self.H
        n, K, _ = inputs.X.shape
        D = inputs.xN.shape[0]
        w = tape.matmul(params["W"], inputs.xN)  # (H, D): W_h x̃_N
        logits = tape.matmul(tape.reshape(w, (1, H, D)), inputs.Xt)  # (n, H, N): x̃_jᵀ W_h x̃_N
        S = tape.softmax(logits)  # (n, H, N)
        XS = tape.reshape(tape.swap(tape.matmul(inputs.X, tape.swap(S))), (n, H, K, 1))  # (n, H, K, 1): X S_h
        heads = tape.matmul(params["V"], XS)  # (n, H, K, 1): V_h X S_h
        f = tape.sum(tape.reshape(heads, (n, H, K)), 1)  # (n, K)
        mean = tape.ar.asarray(np.array(Fraction(1, H), dtype=object))
        return Readouts(logits=tape.scale(tape.sum(logits, 1), mean), S=tape.scale(tape.sum(S, 1), mean), f=f)
