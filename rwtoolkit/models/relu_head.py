"""A ReLU read-out on the paper's attention: f = A·ReLU(V X S) (paper Fig 10), optionally with normalised attention.

The attention and the attended tokens are the paper's model (or ``normalized_attention``'s with ``normalize``):
S = softmax over the N columns of the logits, h = V X S ∈ R^m with V ∈ R^{m×K}, and the prediction is
f = A ReLU(h) with A ∈ R^{K×m}, m the width (``width``, default K). This is ``rw train --relu-width m`` (with
``--normalize-attention``) of the paper's model written once as a model of record. From zero nothing moves:
h = 0, so ReLU(h) = 0 and ReLU'(0) = 0 (torch's convention) kill both A's and V's gradients; the runs of the
paper start from a Gaussian initialisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rwtoolkit.models._arith import Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var
from rwtoolkit.models.normalized_attention import NormalizedAttention
from rwtoolkit.models.one_layer import OneLayer


class ReluHead(Model):
    """f = A ReLU(V X S) with the paper's attention S (normalised with ``normalize``); width m of h = V X S.

    >>> ReluHead(width=5).shapes(Sizes(K=3, M=4, N=4))
    {'V': (5, 3), 'W': (7, 7), 'A': (3, 5)}
    """

    name: ClassVar[str] = "relu_head"
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ("width", "normalize")
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {
        "V": (None, "token"),
        "W": ("embed", "embed"),
        "A": ("label", None),
    }

    def __init__(self, width: int | None = None, normalize: bool = False) -> None:
        if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
            raise ValueError(
                f"width={width!r} is out of range: the ReLU layer's width must be an integer >= 1"
            )
        self.width, self.normalize = width, bool(normalize)

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return {"width": self.width, "normalize": self.normalize}

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        K, D = sizes.K, sizes.D
        m = K if self.width is None else self.width
        return {"V": (m, K), "W": (D, D), "A": (K, m)}

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        attention = NormalizedAttention() if self.normalize else OneLayer()
        inner = attention.forward(tape, params, inputs)  # its f is h = (V X S)ᵀ, (n, m)
        f = tape.matmul(tape.relu(inner.f), tape.swap(params["A"]))  # (n, K) = (A ReLU(h))ᵀ
        return Readouts(logits=inner.logits, S=inner.S, f=f)
