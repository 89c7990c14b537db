"""The nanoGPT-style attention-only transformer of examples/nanogpt_attention.py, ported to plain JAX (issue 41).

No flax, nothing from this toolkit: a flat dict of parameters under the PyTorch module's names and shapes
(``wte.weight`` (S, d), ``wpe.weight`` (L, d), ``blocks.{i}.attn.{query,key,value,proj}.weight`` (d, d),
``lm_head.weight`` (S, d); ``nn.Linear`` maps x to x Wᵀ) and a pure function computing what the module's forward
computes, operation for operation: token plus position embedding, per head q, k, v, the scores times
1/√(head size) (the same float as the module's ``1.0 / math.sqrt(hs)``), the future masked to −∞
(``jnp.where(tril == 0, -inf, scores)``), ``jax.nn.softmax``, the output map, the residual, the unembedding.
So traced (``rwtoolkit.models.traced.trace_jax``) at the module's parameters, it is the same exact program.

A factory takes the alphabet size S and the sequence length L and returns ``(apply, params)``, with
``apply(params, tokens) -> logits`` (tokens (n, L) integer ids, logits (n, L, S)). The parameters are drawn from
a fixed ``jax.random.PRNGKey`` with the module's initialisers' laws (embeddings N(0, 1), linear maps
U(−1/√d, 1/√d)), as float64 numpy arrays: the same factory gives the same start every time. x64 is switched on at
import (JAX computes in float32 otherwise).

    one_layer(S, L)     one attention-only layer (2 heads of size 2, d_model 4)
    two_layer(S, L)     two attention-only layers
    params_from(module) the parameters of a PyTorch module, by name, as float64 arrays (same names)
    training(config)    the port's own training loop, for ``rw check`` against the traced PyTorch model:

    rw check examples/nanogpt_attention_jax.py:training --model examples/nanogpt_attention.py:one_layer
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

#: The width of the residual stream and the number of heads (head size D_MODEL // N_HEAD), as the module's.
D_MODEL, N_HEAD = 4, 2

Params = dict[str, Any]


def attention(
    params: Params, prefix: str, x: jax.Array, mask_offset: int = 0, scale: float | None = None
) -> jax.Array:
    """Multi-head causal self-attention: q, k, v per head, softmax(q kᵀ · 1/√hs) with the future masked to −∞,
    then the output map (nanoGPT's CausalSelfAttention). ``mask_offset`` and ``scale`` plant the port bugs of
    examples/bugs_nanogpt.py (a mask one position off; scores not divided by √hs)."""
    B, T, C = x.shape
    hs = C // N_HEAD
    q = (x @ params[prefix + "query.weight"].T).reshape(B, T, N_HEAD, hs).transpose(0, 2, 1, 3)
    k = (x @ params[prefix + "key.weight"].T).reshape(B, T, N_HEAD, hs).transpose(0, 2, 1, 3)
    v = (x @ params[prefix + "value.weight"].T).reshape(B, T, N_HEAD, hs).transpose(0, 2, 1, 3)
    att = (q @ jnp.swapaxes(k, -2, -1)) * (1.0 / math.sqrt(hs) if scale is None else scale)
    tril = jnp.tril(jnp.ones((T, T)), k=mask_offset)
    att = jnp.where(tril == 0, -jnp.inf, att)
    att = jax.nn.softmax(att, axis=-1)
    y = att @ v  # (B, nh, T, hs)
    y = y.transpose(0, 2, 1, 3).reshape(B, T, C)
    return y @ params[prefix + "proj.weight"].T


def forward(params: Params, idx: jax.Array, n_layer: int, **bug: Any) -> jax.Array:
    """Logits (B, T, S) of the token ids ``idx`` (B, T): embeddings, ``n_layer`` residual attention blocks, the
    unembedding."""
    B, T = idx.shape
    pos = jnp.arange(T)
    x = params["wte.weight"][idx] + params["wpe.weight"][pos]
    for i in range(n_layer):
        x = x + attention(params, f"blocks.{i}.attn.", x, **bug)
    return x @ params["lm_head.weight"].T


def init(S: int, L: int, n_layer: int, seed: int = 0) -> Params:
    """Parameters under the module's names and shapes, drawn from ``PRNGKey(seed)``, as float64 numpy arrays."""
    d = D_MODEL
    shapes = {"wte.weight": (S, d), "wpe.weight": (L, d)}
    for i in range(n_layer):
        for name in ("query", "key", "value", "proj"):
            shapes[f"blocks.{i}.attn.{name}.weight"] = (d, d)
    shapes["lm_head.weight"] = (S, d)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(shapes))
    params: Params = {}
    for key, (name, shape) in zip(keys, shapes.items(), strict=True):
        if name.startswith(("wte", "wpe")):
            drawn = jax.random.normal(key, shape, dtype=jnp.float64)
        else:
            bound = 1.0 / math.sqrt(shape[1])
            drawn = jax.random.uniform(key, shape, dtype=jnp.float64, minval=-bound, maxval=bound)
        params[name] = np.asarray(drawn, dtype=np.float64)
    return params


def build(S: int, L: int, n_layer: int, seed: int = 0) -> tuple[Callable[[Params, Any], jax.Array], Params]:
    """``(apply, params)`` of the ``n_layer``-layer model."""

    def apply(params: Params, tokens: Any) -> jax.Array:
        return forward(params, tokens, n_layer)

    return apply, init(S, L, n_layer, seed)


def one_layer(S: int, L: int) -> tuple[Callable[[Params, Any], jax.Array], Params]:
    """One attention-only layer: embeddings, causal self-attention with a residual, the unembedding."""
    return build(S, L, 1)


def two_layer(S: int, L: int) -> tuple[Callable[[Params, Any], jax.Array], Params]:
    """Two attention-only layers."""
    return build(S, L, 2)


def params_from(module: Any) -> Params:
    """The parameters of a PyTorch module (examples/nanogpt_attention.py's), by name, as float64 arrays: the port
    at the module's own start."""
    return {name: p.detach().cpu().double().numpy().copy() for name, p in module.named_parameters()}


def loss_fn(
    params: Params, x: jax.Array, y: jax.Array, weights: jax.Array, n_layer: int, **bug: Any
) -> jax.Array:
    """The cross-entropy of the logits at position i against token i + 1, averaged over the positions, weighted
    by each sequence's probability."""
    logp = jax.nn.log_softmax(forward(params, x, n_layer, **bug), axis=-1)  # (n, L, S)
    ce = -jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]  # (n, L)
    return jnp.sum(weights * ce.mean(axis=1))


def training(config: Any, **bug: Any) -> Iterator[dict[str, Any]]:
    """``rw check``'s training-loop protocol: full-batch GD with ``jax.grad`` from ``config.start`` (the PyTorch
    model's own start, under the same names), yielding every parameter, the logits and the loss at t = 0, 1, …"""
    params = {name: jnp.asarray(value) for name, value in config.start.items()}
    n_layer = len({name.split(".")[1] for name in params if name.startswith("blocks.")})
    seqs = jnp.asarray(config.sequences)
    x, y = seqs[:, :-1], seqs[:, 1:]
    weights, eta = jnp.asarray(config.weights), float(config.eta)
    while True:
        loss, grads, logits = _step(params, x, y, weights, n_layer, **bug)
        yield {**params, "token_logits": logits, "loss": float(loss)}
        params = {name: params[name] - eta * grads[name] for name in params}


@partial(jax.jit, static_argnames=("n_layer", "mask_offset", "scale"))
def _step(
    params: Params, x: jax.Array, y: jax.Array, weights: jax.Array, n_layer: int, **bug: Any
) -> tuple[jax.Array, Params, jax.Array]:
    """The loss, its gradient and the logits at ``params``, compiled once per shape."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, weights, n_layer, **bug)
    return loss, grads, forward(params, x, n_layer, **bug)
