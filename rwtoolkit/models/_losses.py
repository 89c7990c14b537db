"""The objectives gradient descent minimises, each written once against the arithmetic.

Two kinds (MATH §14): a loss ℓ(z) of the label score z = e_yᵀ f of a prediction f (the built-in losses below,
:class:`PredictionLoss` makes one an :class:`Objective`), and the cross-entropy on next-token logits of a model that
has them (:class:`CrossEntropy`, the objectives :data:`OBJECTIVES`: ``"lm"`` at every position, ``"last"`` at the
last). ``rwtoolkit.models.evaluate`` reads either through :class:`Objective`: the population loss and the cotangent
that seeds the tape's reverse pass.

The built-in losses ℓ(z) of the label score z = e_yᵀ f and their derivatives, written once against the arithmetic.

One definition per name of ``rwtoolkit.tasks.LOSSES``: ℓ and ℓ' as formulas in the operations of
:class:`~rwtoolkit.models.Arithmetic` (its ``log`` and ``exp``, and the arrays' own ``+ - * / **``). Every engine reads
them through its arithmetic: torch tensors (``rwtoolkit.engines.numeric``: ``TensorLoss``, ``SampleLoss``, the
batched engine), arb balls (``rwtoolkit.engines.balls``), mpmath and dual numbers (the exact engine's analyses), and
SymPy expressions, from which the exact engine takes the formulas it differentiates and evaluates
(``rwtoolkit.engines.exact.make_loss``).

>>> import numpy as np
>>> from rwtoolkit.models import FLOAT64
>>> loss = ArithmeticLoss("squared", 0.1, FLOAT64)
>>> loss.value(np.array([0.5])).tolist(), loss.derivative(np.array([0.5])).tolist()
([0.25], [-1.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rwtoolkit.models._arith import Arithmetic, Array

if TYPE_CHECKING:
    from rwtoolkit.models._model import Inputs, Model, Readouts
    from rwtoolkit.models._tape import Var

#: The losses written here: the names of ``rwtoolkit.tasks.LOSSES`` (tests/test_loss_names.py holds them equal;
#: the table is not imported, since ``rwtoolkit.tasks`` loads SymPy and this module serves torch alone too).
BUILT_IN = ("log", "squared", "exp")


class ElementLoss(Protocol):
    """ℓ and ℓ' applied to an array z of label values z = e_yᵀ f, in the arrays' arithmetic."""

    def value(self, z: Array) -> Array: ...

    def derivative(self, z: Array) -> Array: ...


class LossArithmetic(Protocol):
    """What a loss reads of an arithmetic (every :class:`~rwtoolkit.models.Arithmetic` has it): elementwise log, exp."""

    def log(self, a: Array) -> Array: ...

    def exp(self, a: Array) -> Array: ...


class ArithmeticLoss:
    """ℓ and ℓ' of the built-in loss ``name`` on arrays of ``arithmetic`` (an ``ElementLoss``).

    ``eps`` is ε of the log-loss −log(z + ε) (the other losses do not read it), an element of the arithmetic
    or a number its arrays add to. ℓ and ℓ':

    - ``"log"``: −log(z + ε) and −1/(z + ε) (defined for z > −ε; the callers check the domain);
    - ``"squared"``: (1 − z)² and 2(z − 1);
    - ``"exp"``: exp(−z) and −exp(−z).
    """

    def __init__(self, name: str, eps: Any, arithmetic: LossArithmetic) -> None:
        if name not in BUILT_IN:
            raise ValueError(f"loss={name!r} is not one of {', '.join(BUILT_IN)}")
        self.name, self.eps, self.ar = name, eps, arithmetic

    def value(self, z: Array) -> Array:
        if self.name == "log":
            return -self.ar.log(z + self.eps)
        if self.name == "squared":
            gap = 1 - z
            return gap * gap  # (1 − z)², as a product: dual numbers have no power
        return self.ar.exp(-z)

    def derivative(self, z: Array) -> Array:
        if self.name == "log":
            return -1 / (z + self.eps)
        if self.name == "squared":
            return 2 * (z - 1)
        return -self.ar.exp(-z)


#: The objectives on next-token logits (``Readouts.token_logits``; MATH §14): ``"lm"``, the cross-entropy at every
#: position (the language-model objective), and ``"last"``, at the last position only.
OBJECTIVES = ("lm", "last")


class _Batch(Protocol):
    """What an objective reads of a population (``rwtoolkit.models.Batch``): the inputs (their token ids), the
    labels (n,) and the exact weights (n,)."""

    @property
    def inputs(self) -> Inputs: ...

    @property
    def labels(self) -> np.ndarray: ...

    @property
    def weights(self) -> Array: ...

    @property
    def size(self) -> int: ...


class Objective(Protocol):
    """What gradient descent reads of an objective (``rwtoolkit.models.evaluate``).

    ``apply`` gives the population loss at a forward pass's read-outs ``out`` on ``batch`` and, with ``gradient``,
    the read-out whose cotangent seeds the tape's reverse pass and that cotangent ∂L/∂(read-out) (else None, None).
    """

    def apply(
        self, arithmetic: Arithmetic, out: Readouts, batch: _Batch, gradient: bool
    ) -> tuple[Any, Var | None, Array | None]: ...


class PredictionLoss:
    """L(θ) = Σ_n w_n ℓ(z_n) of a loss ℓ of the label score z_n = e_{y_n}ᵀ f_n (``loss``: an ``ElementLoss``,
    such as :class:`ArithmeticLoss`), seeded at the prediction f with ∂L/∂f_n = w_n ℓ'(z_n) e_{y_n}: the objective
    of every model of record (``evaluate`` wraps an ``ElementLoss`` in it)."""

    def __init__(self, loss: ElementLoss) -> None:
        self.loss = loss

    def apply(
        self, arithmetic: Arithmetic, out: Readouts, batch: _Batch, gradient: bool
    ) -> tuple[Any, Var | None, Array | None]:
        f = out.f.value
        rows = np.arange(batch.size)
        z = f[rows, batch.labels]
        total = arithmetic.sum(batch.weights * self.loss.value(z), 0)
        if not gradient:
            return total, None, None
        seed = arithmetic.zeros(tuple(f.shape))
        seed[rows, batch.labels] = batch.weights * self.loss.derivative(z)
        return total, out.f, seed


class CrossEntropy:
    """The cross-entropy on next-token logits, ``name`` one of :data:`OBJECTIVES` (MATH §14).

    Each sequence x_1..x_N of the population, with its exact probability π(x), is seen as its first L = N − 1
    tokens and the label x_N; the logits at position i (``Readouts.token_logits[:, i - 1]``) predict x_{i+1}, so
    the targets at every position are x_2..x_N (:meth:`targets`). With p_i = softmax(logits_i):

    - ``"lm"``: L(θ) = Σ_x π(x) (1/L) Σ_{i=1}^{L} −log p_i[x_{i+1}];
    - ``"last"``: L(θ) = Σ_x π(x) (−log p_L[x_{L+1}]), the position L only.

    The seed is ∂L/∂logits_i = π(x) (p_i − e_{x_{i+1}}) / L (1 for ``"last"``, 0 at the other positions): rational
    in the exponentials of the logits, so exact gradient descent needs no logarithm. The loss value is a sum of
    logarithms: ``log`` (an elementwise logarithm of arrays of the arithmetic) takes them, by default the
    arithmetic's own ``log`` (floats, balls); the exact engine passes SymPy's exact one.

    >>> import numpy as np
    >>> from rwtoolkit.models import FLOAT64
    >>> CrossEntropy("lm").targets(np.array([[0, 1]]), np.array([1])).tolist()
    [[1, 1]]
    """

    def __init__(self, name: str, log: Callable[[Array], Array] | None = None) -> None:
        if name not in OBJECTIVES:
            raise ValueError(f"objective={name!r} is not one of {', '.join(OBJECTIVES)}")
        self.name, self._log = name, log

    def targets(self, tokens: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The target tokens (n, m) of the positions the objective reads: x_2..x_N at the L positions for
        ``"lm"`` (m = L), x_N at position L for ``"last"`` (m = 1); ``tokens`` (n, L), ``labels`` (n,)."""
        full = np.concatenate([np.asarray(tokens)[:, 1:], np.asarray(labels).reshape((-1, 1))], axis=1)
        return full if self.name == "lm" else full[:, -1:]

    def apply(
        self, arithmetic: Arithmetic, out: Readouts, batch: _Batch, gradient: bool
    ) -> tuple[Any, Var | None, Array | None]:
        logits = out.token_logits
        tokens = batch.inputs.tokens
        if logits is None or tokens is None:
            raise ValueError(
                f"objective {self.name!r} reads next-token logits at every position (Readouts.token_logits): "
                "this model gives a prediction f only; train it on a loss of f (--loss)"
            )
        n, L, S = (int(x) for x in logits.value.shape)
        target = self.targets(tokens, batch.labels)
        m = int(target.shape[1])
        if target.shape[0] != n or L != int(tokens.shape[1]):
            raise ValueError(
                f"objective {self.name!r}: the logits have shape {(n, L, S)}, the population's tokens "
                f"{tuple(tokens.shape)}: a sequence model gives (n, L, S) for n sequences of L tokens"
            )
        p = arithmetic.softmax(logits.value[:, L - m :, :])  # (n, m, S)
        picked = p[np.arange(n)[:, None], np.arange(m)[None, :], target]  # p_i[x_{i+1}], (n, m)
        logs = arithmetic.log(picked) if self._log is None else self._log(picked)
        total = -arithmetic.sum(batch.weights * arithmetic.sum(logs, 1), 0) / m
        if not gradient:
            return total, None, None
        onehot = arithmetic.asarray((target[..., None] == np.arange(S)).astype(np.int64))
        seed = (p - onehot) * (batch.weights.reshape((-1, 1, 1)) / m)
        if m < L:
            full = arithmetic.zeros((n, L, S))
            full[:, L - m :, :] = seed
            seed = full
        return total, logits, seed


def as_objective(loss: ElementLoss | Objective) -> Objective:
    """``loss`` as an :class:`Objective`: an objective as it is, an ``ElementLoss`` ℓ as its :class:`PredictionLoss`."""
    return loss if hasattr(loss, "apply") else PredictionLoss(loss)  # type: ignore[return-value]


def objective_name(model: Model, objective: str | None) -> str | None:
    """The cross-entropy objective a run of ``model`` trains on, or None: the loss of its prediction f.

    ``objective`` None is the model's default: ``"lm"`` for a model with next-token logits
    (``Model.TOKEN_LOGITS``), else None. One line where ``objective`` is not one of :data:`OBJECTIVES` or the
    model gives no next-token logits.

    >>> from rwtoolkit.models import get_model
    >>> objective_name(get_model("one_layer"), None) is None
    True
    """
    if objective is None:
        return "lm" if model.TOKEN_LOGITS else None
    if objective not in OBJECTIVES:
        raise ValueError(f"--objective={objective!r} is not one of {', '.join(OBJECTIVES)}")
    if not model.TOKEN_LOGITS:
        raise ValueError(
            f"--objective {objective}: model {model.name} gives a prediction f, no next-token logits; "
            "drop --objective (f trains on its loss: --loss, or a configuration's loss)"
        )
    return objective


__all__ = [
    "BUILT_IN",
    "OBJECTIVES",
    "ArithmeticLoss",
    "CrossEntropy",
    "LossArithmetic",
    "Objective",
    "PredictionLoss",
    "as_objective",
    "objective_name",
]
