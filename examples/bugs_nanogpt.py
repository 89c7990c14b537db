"""Planted bugs in the training loop of examples/nanogpt_attention.py and in its JAX port, one per factory.

``rw check`` fails each at the first quantity it moves, against the model traced from the PyTorch factory:

    rw check examples/bugs_nanogpt.py:last_position_only --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:unweighted_mean --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:momentum_left_on --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:jax_mask_off_by_one --model examples/nanogpt_attention.py:one_layer
    rw check examples/bugs_nanogpt.py:jax_no_sqrt_d --model examples/nanogpt_attention.py:one_layer
"""

from __future__ import annotations

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
