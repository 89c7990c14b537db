"""Two-layer attention-only transformer with a disentangled residual stream, the form the induction-head
analyses use (docs/guide/models.md).

Layer 1 is causal and acts at every position: a_i = Σ_{j ≤ i} σ_j(x̃_jᵀ A1 x̃_i) x̃_j, and the residual
stream keeps its input beside it, h_i = [x̃_i; a_i] (concatenated, not added). Layer 2 attends from the
last position only: its scores are h_jᵀ A2 h_N with A2 in four D×D blocks,

    h_jᵀ A2 h_N = x̃_jᵀ A2xx x̃_N + x̃_jᵀ A2xa a_N + a_jᵀ A2ax x̃_N + a_jᵀ A2aa a_N,

S = softmax over j = 1..N, and the prediction reads the token part of the attended positions, f = V X S.
An induction head is A1 attending from i to i − 1 (a_i carries x_{i−1}) and A2aa matching a_N's token
with a_j's (layer 2 attends to the positions that followed an earlier occurrence of x_{N−1}).

The causal softmax of position i is a softmax over its first i scores, taken out with constant selection
matrices, so the model is a composition of the tape's primitives and every engine differentiates it.
From zero only V moves at t = 1 (the scores are 0, the attention is uniform); the A2 blocks follow at
t = 2 (their gradient carries V) and A1 at t = 3 (its gradient carries A2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var

#: The four blocks of A2, (first, second) halves of h: x = the input x̃, a = layer 1's output.
A2_BLOCKS = ("A2xx", "A2xa", "A2ax", "A2aa")


class TwoLayer(Model):
    """Causal layer 1 at every position, layer 2 at the last, residual [x̃; a], f = V X S.

    >>> TwoLayer().shapes(Sizes(K=2, M=4, N=4))
    {'V': (2, 2), 'A1': (6, 6), 'A2xx': (6, 6), 'A2xa': (6, 6), 'A2ax': (6, 6), 'A2aa': (6, 6)}
    """

    name: ClassVar[str] = "two_layer"
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": ("label", "token"),
        "A1": ("embed", "embed"),
        **{block: ("embed", "embed") for block in A2_BLOCKS},
    }
    #: Layer 1 is causal: position i attends to j ≤ i, so the order of the positions is seen.
    POSITION_SYMMETRIC: ClassVar[bool] = False

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "A1": (D, D), **{block: (D, D) for block in A2_BLOCKS}}

    def layer_one(self, tape: Tape, A1: Var | Array, inputs: Inputs) -> tuple[Var, list[Var]]:
        """Layer 1's outputs a (n, D, N) and each position's causal attention S1_i (n, 1, i), i = 1..N."""
        ar = tape.ar
        Xt = inputs.Xt
        n, D, N = (int(s) for s in Xt.shape)
        keys = tape.matmul(Xt.swapaxes(-1, -2), tape.matmul(A1, Xt))  # (n, N, N): [j, i] = x̃_jᵀ A1 x̃_i
        scores = tape.swap(keys)  # [i, j]
        out: Var | None = None
        attention = []
        for i in range(N):
            first = ar.asarray(np.eye(N, i + 1, dtype=np.int64))  # (N, i+1): the first i+1 positions
            row = ar.asarray(np.eye(N, dtype=np.int64)[i : i + 1])  # (1, N): position i
            S_i = tape.softmax(tape.matmul(row, tape.matmul(scores, first)))  # (n, 1, i+1)
            attention.append(S_i)
            a_i = tape.matmul(tape.matmul(Xt, first), tape.swap(S_i))  # (n, D, 1): Σ_{j≤i} S_ij x̃_j
            placed = tape.matmul(a_i, row)  # (n, D, N): a_i in column i
            out = placed if out is None else tape.add(out, placed)
        if out is None:  # pragma: no cover - N >= 1 always
            raise ValueError("no positions")
        return out, attention

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        Xt, xN = inputs.Xt, inputs.xN
        n, D, N = (int(s) for s in Xt.shape)
        a, _ = self.layer_one(tape, params["A1"], inputs)
        last = tape.ar.asarray(np.eye(N, dtype=np.int64)[:, N - 1 : N])  # (N, 1)
        aN = tape.matmul(a, last)  # (n, D, 1)
        q_x = tape.add(
            tape.reshape(tape.matmul(params["A2xx"], xN), (1, D, 1)), tape.matmul(params["A2xa"], aN)
        )  # (n, D, 1)
        q_a = tape.add(
            tape.reshape(tape.matmul(params["A2ax"], xN), (1, D, 1)), tape.matmul(params["A2aa"], aN)
        )
        logits = tape.add(
            tape.matmul(Xt.swapaxes(-1, -2), q_x), tape.matmul(tape.swap(a), q_a)
        )  # (n, N, 1): h_jᵀ A2 h_N
        logits = tape.reshape(logits, (n, N))
        S = tape.softmax(logits)
        f = tape.matmul(tape.attend(inputs.X, S), tape.swap(params["V"]))  # (n, K)
        return Readouts(logits=logits, S=S, f=f)
