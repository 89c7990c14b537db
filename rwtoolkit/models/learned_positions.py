"""Learned positional embeddings: the paper's model with P trained, P(t) = P(0) + ΔP(t) (docs/guide/models.md).

The positions start at the fixed construction of the engine (the sine basis, or ``rational_positions`` in
exact arithmetic) and move with gradient descent: X̃(t) = [X; P(0) + ΔP(t)], with ΔP (M×N) a trained
parameter that starts at 0. Everything else is the paper's model: logits X̃ᵀ W x̃_N, S = softmax, f = V X S.
Once ΔP moves, P(t)ᵀP(t) is no longer μI, so the paper's reduction to (V, w_tok, c) no longer holds. The
run still depends on the start P(0) only through its Gram matrix: two starts with the same Gram differ by
an orthogonal Q (P2 = Q P1), and GD on (V, W, ΔP) is equivariant under it (W → diag(I, Q) W diag(I, Q)ᵀ,
ΔP → Q ΔP), so losses, predictions and Grams P(t)ᵀP(t) agree (tests/test_learned_positions.py). From zero,
ΔP's gradient carries W, and W's carries V, so V moves at t = 1, W at t = 2 and ΔP at t = 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class LearnedPositions(Model):
    """Logits X̃ᵀ (W x̃_N) with X̃ = [X; P(0) + ΔP], S = softmax(logits), f = V X S; ΔP trained.

    >>> LearnedPositions().shapes(Sizes(K=3, M=4, N=4))
    {'V': (3, 3), 'W': (7, 7), 'dP': (4, 4)}
    """

    name: ClassVar[str] = "learned_positions"
    #: ΔP's rows are the positional coordinates and its columns the positions: under a relabelling of the
    #: positions both move by the permutation (at P = √μ·I_N, where the coordinates are the positions).
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": ("label", "token"),
        "W": ("embed", "embed"),
        "dP": ("position", "position"),
    }

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "W": (D, D), "dP": (sizes.M, sizes.N)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        ar = tape.ar
        K, N = inputs.K, inputs.N
        D = int(inputs.xN.shape[0])
        place = ar.asarray(np.eye(D, D - K, -K, dtype=np.int64))  # (D, M): [0; I_M], the positional rows
        last = ar.asarray(np.eye(N, dtype=np.int64)[:, N - 1])  # (N,): the query column
        shift = tape.matmul(place, params["dP"])  # (D, N): [0; ΔP]
        Xt = tape.add(inputs.Xt, shift)  # (n, D, N): [X; P(0) + ΔP]
        xN = tape.add(inputs.xN, tape.matmul(shift, last))  # (D,): x̃_N = [0; p_N(0) + Δp_N]
        w = tape.matmul(params["W"], xN)  # (D,)
        logits = tape.matmul(tape.swap(Xt), w)  # (n, N)
        S = tape.softmax(logits)
        f = tape.matmul(tape.attend(inputs.X, S), tape.swap(params["V"]))  # (n, K)
        return Readouts(logits=logits, S=S, f=f)
