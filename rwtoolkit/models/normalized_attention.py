"""Normalised attention: the paper's model with every x̃_j divided by its length inside the softmax (paper Fig 6).

The scores are x̂_jᵀ W x̂_N with x̂_j = x̃_j / ‖x̃_j‖; the prediction still reads the tokens, f = V X S. This is
``rw train --normalize-attention`` of the paper's model (the reduced ``FastModel``) written once as a model of
record, so every engine runs it. With PᵀP = μI the lengths are √(1 + μ) for a token column and √μ for the
query column, so each logit of the paper's model is scaled by 1/√(μ(1 + μ)) and the query's own by 1/μ;
at μ = 9/16 both roots are rational (5/4 and 3/4) and the exact trajectory stays in the rationals up to its
exponentials. From zero, V moves at t = 1 (Lemma C.1's V(1): S(0) is uniform whatever the lengths) and W
at t = 2, as for the paper's model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class NormalizedAttention(Model):
    """Logits x̂_jᵀ W x̂_N with x̂_j = x̃_j / ‖x̃_j‖, attention S = softmax(logits), prediction f = V X S.

    >>> NormalizedAttention().shapes(Sizes(K=3, M=4, N=4))
    {'V': (3, 3), 'W': (7, 7)}
    """

    name: ClassVar[str] = "normalized_attention"
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {"V": ("label", "token"), "W": ("embed", "embed")}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "W": (D, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        ar = tape.ar
        lengths = ar.sqrt(ar.sum(inputs.Xt * inputs.Xt, -2))  # (n, N): ‖x̃_j‖, the query's last
        w = tape.matmul(params["W"], inputs.xN)  # (D,) W x̃_N
        scores = tape.matmul(inputs.Xt.swapaxes(-1, -2), w)  # (n, N) x̃_jᵀ W x̃_N
        logits = tape.scale(scores, 1 / (lengths * lengths[:, -1:]))  # x̂_jᵀ W x̂_N
        S = tape.softmax(logits)
        f = tape.matmul(tape.attend(inputs.X, S), tape.swap(params["V"]))  # (n, K) = (V X S)ᵀ
        return Readouts(logits=logits, S=S, f=f)
