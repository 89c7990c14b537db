"""Per-sample losses ℓ(z) of z = e_yᵀ f (docs/theory.md#model), with a domain check that never lets NaN through.

The names are ``rwtoolkit.tasks.LOSSES`` (shared with ``rwtoolkit.engines.exact``); the formulas are
``rwtoolkit.models.ArithmeticLoss``'s, written once against the arithmetic layer and read here on tensors.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rwtoolkit.engines.numeric._arith import TorchArithmetic
from rwtoolkit.models import ArithmeticLoss
from rwtoolkit.tasks import check_loss

#: The torch arithmetic the losses are read in (``log`` and ``exp`` act on a tensor of any dtype and device).
_TORCH = TorchArithmetic()


def log_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    """The paper's loss -log(z + ε); defined only for z > -ε."""
    return ArithmeticLoss("log", eps, _TORCH).value(z)


def squared_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    """(1 - z)²: squared distance of the label score from 1 (ε unused)."""
    return ArithmeticLoss("squared", eps, _TORCH).value(z)


def exp_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    """exp(-z), the exponential loss (ε unused)."""
    return ArithmeticLoss("exp", eps, _TORCH).value(z)


def _derivative(name: str) -> Callable[[torch.Tensor, float], torch.Tensor]:
    def derivative(z: torch.Tensor, eps: float) -> torch.Tensor:
        return ArithmeticLoss(name, eps, _TORCH).derivative(z)

    derivative.__doc__ = f"ℓ'(z) of the {name} loss (``rwtoolkit.models.ArithmeticLoss``)."
    return derivative


#: One torch implementation per name of ``rwtoolkit.tasks.LOSSES``: ``rwtoolkit.models.ArithmeticLoss`` on tensors.
LOSS_FUNCTIONS = {"log": log_loss, "squared": squared_loss, "exp": exp_loss}

#: ℓ'(z) of each loss of ``LOSS_FUNCTIONS``, in closed form (the batched engine's gradient uses it).
LOSS_DERIVATIVES = {name: _derivative(name) for name in LOSS_FUNCTIONS}


class Diverged(ValueError):
    """A run left the loss domain or stopped being finite at ``step`` (one line); every torch engine raises
    or reports it (``TrainResult.diverged``) so that no NaN reaches an output file."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


class SampleLoss:
    """ℓ applied per sample, checked: the log-loss domain z+ε > 0 first, then finiteness of ℓ(z)."""

    def __init__(self, loss: str | Callable, eps: float) -> None:
        check_loss(loss)
        self.name = loss if isinstance(loss, str) else getattr(loss, "__name__", "callable")
        self.is_log = loss == "log"
        self.eps = float(eps)
        self._fn = LOSS_FUNCTIONS[loss] if isinstance(loss, str) else (lambda z, eps: loss(z))

    def __call__(self, z: torch.Tensor, step: int) -> torch.Tensor:
        """ℓ(z) per sample (n,), or ``Diverged`` naming the step and how many samples are out of domain."""
        if self.is_log:
            bad = int((z + self.eps <= 0).sum())
            if bad:
                raise Diverged(
                    f"log-loss -log(z+eps) is undefined at step {step}: z+eps <= 0 for {bad} of "
                    f"{z.numel()} training samples (z = e_y^T f, eps={self.eps:g}); lower eta or raise eps",
                    step,
                )
        values = self._fn(z, self.eps)
        if not isinstance(values, torch.Tensor) or values.shape != z.shape:
            raise ValueError(
                f"loss {self.name!r} must map a tensor of shape {tuple(z.shape)} to one of the same shape"
            )
        bad = int((~torch.isfinite(values)).sum())
        if bad:
            raise Diverged(
                f"loss {self.name!r} is not finite at step {step} for {bad} of {z.numel()} training samples",
                step,
            )
        return values


class TensorLoss(ArithmeticLoss):
    """ℓ and ℓ' of a loss of ``LOSS_FUNCTIONS`` on tensors, as ``rwtoolkit.models.ElementLoss`` (the generic engines):
    ``rwtoolkit.models.ArithmeticLoss`` in the torch arithmetic.

    >>> TensorLoss("log", 0.5).derivative(torch.tensor([0.5])).tolist()
    [-1.0]
    """

    def __init__(self, name: str, eps: float) -> None:
        check_loss(name)
        super().__init__(name, float(eps), _TORCH)
