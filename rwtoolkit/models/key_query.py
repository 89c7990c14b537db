"""Separate key and query matrices: logits X̃ᵀ W_Kᵀ W_Q x̃_N, with W_K, W_Q ∈ R^{d×(K+M)} (docs/guide/models.md).

The parameterisation most implementations use. The logits are those of the merged model with W = W_Kᵀ W_Q,
but gradient descent on (W_K, W_Q) is not gradient descent on W: with G = ∂L/∂W the factors move by
∇_{W_K} L = W_Q Gᵀ and ∇_{W_Q} L = W_K G. In particular W_K = W_Q = 0 is a stationary point of the logits:
from the zero initialisation both gradients vanish at every step, the logits stay 0 and the attention stays
uniform (1/N on every position) for every t, while V learns the token average. Only a non-zero initial
W_K, W_Q (``rw derive --model key_query --init gaussian``) lets the attention move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class KeyQuery(Model):
    """Logits (W_K X̃)ᵀ (W_Q x̃_N), attention S = softmax(logits), prediction f = V X S; head dimension d.

    >>> KeyQuery(d=2).shapes(Sizes(K=3, M=4, N=4))
    {'V': (3, 3), 'W_K': (2, 7), 'W_Q': (2, 7)}
    """

    name: ClassVar[str] = "key_query"
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ("d",)
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": ("label", "token"),
        "W_K": (None, "embed"),
        "W_Q": (None, "embed"),
    }

    def __init__(self, d: int = 2) -> None:
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ValueError(f"head dimension d={d!r} is out of range: d must be an integer >= 1")
        self.d = d

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return {"d": self.d}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        return {"V": (K, K), "W_K": (self.d, D), "W_Q": (self.d, D)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        keys = tape.matmul(params["W_K"], inputs.Xt)  # (n, d, N) W_K x̃_j
        query = tape.matmul(params["W_Q"], inputs.xN)  # (d,) W_Q x̃_N
        logits = tape.matmul(tape.swap(keys), query)  # (n, N)
        S = tape.softmax(logits)
        XS = tape.attend(inputs.X, S)
        f = tape.matmul(XS, tape.swap(params["V"]))
        return Readouts(logits=logits, S=S, f=f)
