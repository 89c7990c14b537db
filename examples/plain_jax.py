"""The one-layer softmax transformer in JAX: pure functions, ``jax.grad`` of the user's own loss, a jitted step.

Nothing from this toolkit except the config ``rw check`` passes in and the ``rwcheck.Functional`` wrapper.
x64 is switched on at import (JAX computes in float32 otherwise, and ``rw check`` refuses that in float64).
The functions are jitted once at module level, with the bug switches static: each shape of the population
compiles once, and every configuration of that shape reuses it.

    rw check examples/plain_jax.py:model

The keyword arguments of ``functional`` exist so that examples/bugs_jax.py can plant one mistake at a time,
in the same places as the PyTorch twins of examples/bugs.py.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from rwcheck import Functional

jax.config.update("jax_enable_x64", True)

#: The bug switches (static arguments of the jitted functions; all False/1 is the correct model).
SWITCHES = ("keys_only", "transposed", "eps_outside", "summed", "unit_norm")


def sine_positions(M: int, N: int, shift: float = 0.0) -> jnp.ndarray:
    """[p_i]_m = sin(π (i + shift) m / M), i = 1..N, m = 1..M: orthogonal, ‖p_i‖² = M/2 when shift = 0 (M > N)."""
    i = jnp.arange(1, N + 1) + shift
    m = jnp.arange(1, M + 1)
    return jnp.sin(jnp.pi * jnp.outer(m, i) / M)


@partial(jax.jit, static_argnames=("K", "keys_only", "unit_norm"))
def attention(params, Xt, K, keys_only=False, unit_norm=False):
    """S (n, N): softmax over j of x̃_jᵀ W x̃_N."""
    if unit_norm:  # bug: the positional rows rescaled to unit norm instead of ‖p_i‖² = μ
        Xt = Xt.at[:, K:, :].divide(jnp.linalg.norm(Xt[0, K:, :], axis=0))
    logits = jnp.einsum("nij,ik,nk->nj", Xt, params["W"], Xt[:, :, -1])
    if keys_only:  # bug: the softmax skips the query column
        return jnp.concatenate(
            [jax.nn.softmax(logits[:, :-1], axis=1), jnp.zeros_like(logits[:, -1:])], axis=1
        )
    return jax.nn.softmax(logits, axis=1)


@partial(jax.jit, static_argnames=("K", "keys_only", "transposed", "unit_norm"))
def forward(params, Xt, K, keys_only=False, transposed=False, unit_norm=False):
    """f (n, K) = V X S."""
    S = attention(params, Xt, K, keys_only, unit_norm)
    V = params["V"].T if transposed else params["V"]
    return jnp.einsum("kl,nlj,nj->nk", V, Xt[:, :K, :], S)


@partial(jax.jit, static_argnames=("K", "keys_only", "transposed", "eps_outside", "summed", "unit_norm"))
def loss(
    params,
    Xt,
    y,
    pi,
    eps,
    K,
    keys_only=False,
    transposed=False,
    eps_outside=False,
    summed=False,
    unit_norm=False,
):
    """Σ_n π_n (−log(z_n + ε)), z_n = f_n[y_n]."""
    z = forward(params, Xt, K, keys_only, transposed, unit_norm)[jnp.arange(y.shape[0]), y]
    per_input = -jnp.log(z) + eps if eps_outside else -jnp.log(z + eps)
    return jnp.sum(per_input) if summed else jnp.sum(pi * per_input)


@partial(jax.jit, static_argnames=("K", "w_updates", *SWITCHES))
def step(params, Xt, y, pi, eps, eta, K, w_updates=1, **switches):
    """One full-batch GD step on the loss (``jax.grad``); the W update taken ``w_updates`` times."""
    g = jax.grad(loss)(params, Xt, y, pi, eps, K, **switches)
    return {"V": params["V"] - eta * g["V"], "W": params["W"] - w_updates * eta * g["W"]}


def functional(config, P=None, w_updates: int = 1, dtype=jnp.float64, **switches) -> Functional:
    """The implementation for ``config``: zero parameters and the jitted functions bound to its population."""
    K = config.K
    M = config.M if P is None else P.shape[0]
    y = jnp.asarray(config.labels)
    pi = jnp.asarray(config.weights, dtype=dtype)
    eps, eta = float(config.eps), float(config.eta)
    view = {k: v for k, v in switches.items() if k in ("keys_only", "unit_norm")}
    fwd = {k: v for k, v in switches.items() if k in ("keys_only", "transposed", "unit_norm")}
    zeros = {"V": jnp.zeros((K, K), dtype=dtype), "W": jnp.zeros((K + M, K + M), dtype=dtype)}
    return Functional(
        zeros,
        forward=lambda params, Xt: forward(params, jnp.asarray(Xt, dtype=dtype), K, **fwd),
        attention=lambda params, Xt: attention(params, jnp.asarray(Xt, dtype=dtype), K, **view),
        loss=lambda params, Xt: loss(params, jnp.asarray(Xt, dtype=dtype), y, pi, eps, K, **switches),
        step=lambda params, Xt: step(
            params, jnp.asarray(Xt, dtype=dtype), y, pi, eps, eta, K, w_updates, **switches
        ),
        P=P,
    )


def model(config) -> Functional:
    """The correct implementation with the config's P."""
    return functional(config)


def own_sine(config) -> Functional:
    """The correct implementation keeping its own sine P, M = N + 3 (so M ≠ N and μ = M/2)."""
    return functional(config, P=sine_positions(config.N + 3, config.N))


def shifted_sine(config) -> Functional:
    """Bug: its own sine P shifted by half a position: the columns are not orthogonal."""
    return functional(config, P=sine_positions(config.N + 3, config.N, shift=0.5))


def float32_by_accident(config) -> Functional:
    """Every array float32 (what JAX gives with x64 off): ``rw check`` refuses it in float64, with the reason."""
    return functional(config, dtype=jnp.float32)
