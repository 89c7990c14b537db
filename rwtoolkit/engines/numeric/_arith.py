"""The torch arithmetic of ``rwtoolkit.models``: every registered model trains on torch tensors (CPU or CUDA).

The forward pass and its gradient are the model's one definition (``rwtoolkit.models``) run on tensors; the
tape's reverse pass gives the gradient, and tests/test_models.py shows it equal to torch autograd of the
same forward. Softmax is torch's (stable); ``sign`` is the float's sign.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch


class TorchArithmetic:
    """Tensors of one dtype on one device.

    >>> ar = TorchArithmetic(torch.float64, "cpu")
    >>> ar.softmax(ar.asarray([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    #: Floats: GELU and layer norm run here (the operations of rwtoolkit.models.ExtendedArithmetic below).
    exact = False

    def __init__(self, dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu") -> None:
        self.dtype, self.device = dtype, torch.device(device)
        self.name = f"torch-{str(dtype).removeprefix('torch.')}"

    def asarray(self, values: Any) -> torch.Tensor:
        if isinstance(values, torch.Tensor):
            return values.to(dtype=self.dtype, device=self.device)
        data = np.asarray(values, dtype=object).astype(np.float64)
        return torch.as_tensor(data, dtype=self.dtype, device=self.device)

    def zeros(self, shape: Sequence[int]) -> torch.Tensor:
        return torch.zeros(tuple(shape), dtype=self.dtype, device=self.device)

    def exp(self, a: torch.Tensor) -> torch.Tensor:
        return torch.exp(a)

    def log(self, a: torch.Tensor) -> torch.Tensor:
        return torch.log(a)

    def sqrt(self, a: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(a)

    def softmax(self, a: torch.Tensor) -> torch.Tensor:
        return torch.softmax(a, dim=-1)

    def erf(self, a: torch.Tensor) -> torch.Tensor:
        return torch.erf(a)

    def pi(self) -> float:
        return math.pi

    def masked_softmax(self, a: torch.Tensor, mask: np.ndarray) -> torch.Tensor:
        keep = torch.as_tensor(np.asarray(mask, dtype=bool), device=a.device)
        return torch.softmax(a.masked_fill(~keep, float("-inf")), dim=-1)

    def log_softmax(self, a: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(a, dim=-1)

    def concat(self, arrays: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.cat(list(arrays), dim=axis)

    def sum(self, a: torch.Tensor, axis: int | tuple[int, ...], keepdims: bool = False) -> torch.Tensor:
        return a.sum(dim=axis, keepdim=keepdims)

    def apply(self, fn: Callable[[Any], Any], a: torch.Tensor) -> torch.Tensor:
        return fn(a)

    def sign(self, x: Any) -> int | None:
        return int(torch.sign(torch.as_tensor(x)).item())

    def positive(self, a: torch.Tensor) -> torch.Tensor:
        return (a > 0).to(a.dtype)

    def to_float(self, a: torch.Tensor) -> np.ndarray:
        return a.detach().to("cpu", torch.float64).numpy()

    def predict(self, f: torch.Tensor) -> np.ndarray:
        return torch.argmax(f, dim=-1).cpu().numpy()  # torch returns the first maximal index
