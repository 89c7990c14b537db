"""Linear attention: the paper's scores without the softmax, f = V X (X̃ᵀ W x̃_N) / N (docs/guide/models.md).

The model of the linear-attention analyses of in-context learning: the attention weights are the raw
scores scaled by 1/N, so with the squared loss the population loss is a polynomial in (V, W). Zero is a
stationary point of every loss: at V = 0 and W = 0 the scores vanish, so X S = 0 and ∂L/∂V = 0, and ∂L/∂W
carries a factor V, so it vanishes too. Gradient descent from the zero initialisation therefore never
moves: f = 0 for every t (``rw zoo``'s claim ``linear_zero_fixed``, proved by the exact induction step on
the subspace {0}). Those analyses start from a non-zero initialisation for that reason, and so does
``rw check --model linear_attention`` (``rwtoolkit.analyses.check.check_settings``): from zero it would compare
zeros with zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import ClassVar

import numpy as np

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class LinearAttention(Model):
    """Scores X̃ᵀ (W x̃_N), attention S = scores / N (no softmax), prediction f = V X S.

    >>> LinearAttention().shapes(Sizes(K=3, M=4, N=4))
    {'V': (3, 3), 'W': (7, 7)}
    """

    name: ClassVar[str] = "linear_attention"
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {"V": ("label", "token"), "W": ("embed", "embed")}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "W": (D, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        w = tape.matmul(params["W"], inputs.xN)  # (D,) W x̃_N
        logits = tape.matmul(inputs.Xt.swapaxes(-1, -2), w)  # (n, N) x̃_jᵀ W x̃_N
        S = tape.scale(logits, tape.ar.asarray(np.array(Fraction(1, inputs.N), dtype=object)))
        XS = tape.attend(inputs.X, S)  # (n, K)
        f = tape.matmul(XS, tape.swap(params["V"]))  # (n, K) = (V X S)ᵀ
        return Readouts(logits=logits, S=S, f=f)
