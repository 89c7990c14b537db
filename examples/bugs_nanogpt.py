"""Planted bugs in the training loop of examples/nanogpt_attention.py and in its JAX port, one per factory.

``rw check`` fails each at the first quantity it moves, against the model traced from the PyTorch factory:

    rw check examples/bugs_nanogpt.py:last_position_only --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:unweighted_mean --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:momentum_left_on --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:jax_mask_off_by_one --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:jax_no_sqrt_d --model examples/nanogpt_attention.py:one_layer

and two bugs of a hand-written Adam, checked against the engine's Adam (``--optimizer adam``):

    rw check examples/bugs_nanogpt.py:adam_without_bias_correction --model ... --optimizer adam
    rw check examples/bugs_nanogpt.py:adam_eps_inside_the_root --model ... --optimizer adam
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nanogpt_attention as torch_example  # noqa: E402


def last_position_only(config: Any) -> Iterator[dict]:
    """The loss at the last position only (every other next-token prediction left out): the loss at t = 0 moves."""
    return torch_example.training(config, last_only=True)


def unweighted_mean(config: Any) -> Iterator[dict]:
    """A plain mean over the sequences instead of their exact probabilities: the loss at t = 0 moves."""
    return torch_example.training(config, weighted=False)


def momentum_left_on(config: Any) -> Iterator[dict]:
    """SGD with momentum 0.9 left on: the first step is plain GD's (the buffer starts at the gradient), the
    second is not: θ(2) moves."""
    return torch_example.training(config, momentum=0.9)


def jax_mask_off_by_one(config: Any) -> Iterator[dict]:
    """The JAX port with the causal mask one position too far (each position also sees the next token)."""
    import nanogpt_attention_jax as port

    return port.training(config, mask_offset=1)


def jax_no_sqrt_d(config: Any) -> Iterator[dict]:
    """The JAX port with the scores not divided by √(head size)."""
    import nanogpt_attention_jax as port

    return port.training(config, scale=1.0)


class HandAdam:
    """Adam written by hand as a researcher might, with two switches for its classic mistakes: the bias correction
    left out, and ε inside the square root (√(v̂ + ε) instead of √v̂ + ε)."""

    def __init__(
        self, params: Any, config: Any, bias_correction: bool = True, eps_inside: bool = False
    ) -> None:
        self.params = list(params)
        self.lr = float(config.eta)
        self.beta1, self.beta2 = config.optimizer["betas"]
        self.eps = config.optimizer["eps"]
        self.bias_correction, self.eps_inside = bias_correction, eps_inside
        self.m = [p.detach() * 0 for p in self.params]
        self.v = [p.detach() * 0 for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        self.t += 1
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                m.mul_(self.beta1).add_(p.grad, alpha=1 - self.beta1)
                v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
                m_hat, v_hat = m, v
                if self.bias_correction:
                    m_hat = m / (1 - self.beta1**self.t)
                    v_hat = v / (1 - self.beta2**self.t)
                denom = (v_hat + self.eps).sqrt() if self.eps_inside else v_hat.sqrt() + self.eps
                p -= self.lr * m_hat / denom


def adam_without_bias_correction(config: Any) -> Iterator[dict]:
    """A hand-written Adam without the bias correction: θ(1) moves (its first step is (1−β₁)/√(1−β₂) ≈ 3.2 times
    too short)."""
    return torch_example.training(
        config, optimizer=lambda net, c: HandAdam(net.parameters(), c, bias_correction=False)
    )


def adam_eps_inside_the_root(config: Any) -> Iterator[dict]:
    """A hand-written Adam with ε inside the square root: θ(1) moves (by about ε/(2v̂) relative)."""
    return torch_example.training(
        config, optimizer=lambda net, c: HandAdam(net.parameters(), c, eps_inside=True)
    )


def adam_by_hand(config: Any) -> Iterator[dict]:
    """The same hand-written Adam without either mistake: it passes, as torch.optim.Adam does."""
    assert math.isfinite(config.optimizer["eps"])
    return torch_example.training(config, optimizer=lambda net, c: HandAdam(net.parameters(), c))
