"""The paper's model: f = V X S(X̃ᵀ W x̃_N), with V ∈ R^{K×K} and W ∈ R^{(K+M)×(K+M)} (paper Section 2).

The full-parameter form, the definition of record. The engines' reduced coordinates (V, w_tok, c) are a
specialisation of it (docs/theory.md#reduction): from W(0) = 0 every W-gradient is u x̃_Nᵀ (Lemma B.1), so
W(t) x̃_N = w(t) carries everything and w's positional block is Σ_j c_j p_j. :func:`reduced_coordinates` maps a
full state to them; tests/test_models.py shows the reduced exact engine equal, exactly, to this definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class OneLayer(Model):
    """Logits X̃ᵀ (W x̃_N), attention S = softmax(logits), prediction f = V X S.

    >>> OneLayer().shapes(Sizes(K=3, M=4, N=4))
    {'V': (3, 3), 'W': (7, 7)}
    """

    name: ClassVar[str] = "one_layer"
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {"V": ("label", "token"), "W": ("embed", "embed")}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "W": (D, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        w = tape.matmul(params["W"], inputs.xN)  # (D,) W x̃_N
        logits = tape.matmul(inputs.Xt.swapaxes(-1, -2), w)  # (n, N) x̃_jᵀ W x̃_N
        S = tape.softmax(logits)
        XS = tape.attend(inputs.X, S)  # (n, K)
        f = tape.matmul(XS, tape.swap(params["V"]))  # (n, K) = (V X S)ᵀ
        return Readouts(logits=logits, S=S, f=f)


def reduced_coordinates(V: Array, W: Array, P: Array, mu: object) -> tuple[Array, Array, Array]:
    """(V, w_tok, c) of a full state: w = W x̃_N, w_tok = its first K entries, c_j = p_jᵀ w_pos / μ.

    Exact for PᵀP = μI and W's columns outside x̃_N unused (the state of GD from zero, docs/theory.md#reduction).
    """
    K = V.shape[0]
    xN = P[:, -1]
    w = W[:, K:] @ xN
    return V, w[:K], (P.swapaxes(-1, -2) @ w[K:]) / mu
