"""The one-layer softmax transformer in JAX: pure functions, ``jax.grad`` of the user's own loss, a jitted step.

Nothing from this toolkit except the config ``rw check`` passes in and the ``rwtoolkit.analyses.check.Functional`` wrapper.
x64 is switched on at import (JAX computes in float32 otherwise, and ``rw check`` refuses that in float64).
One function is jitted, at module level with the bug switches static: ``advance`` gives S, f and the loss
at θ and the next θ in one call. It runs on arrays padded to bucketed shapes (``Padding``): JAX compiles
once per shape, and the kit's some forty population shapes fall into one bucket, so a check compiles once.

    rw check examples/plain_jax.py:model

The keyword arguments of ``functional`` exist so that examples/bugs_jax.py can plant one mistake at a time,
in the same places as the PyTorch twins of examples/bugs.py.
"""

from __future__ import annotations

import os
from functools import partial

# A check runs tiny arrays once per step: XLA's compile time and its dispatch, not its code's speed, are
# what a check waits for. So this port asks for the fastest compile and one thread (more threads only wait
# on each other at this size, as the kit's torch.set_num_threads(1) does for torch). The CPU backend's
# fusion emitters (an MLIR pipeline per fused loop) more than double the compile of this small program
# (about 0.18 s against 0.07 s) for code no faster at this size, so they are off. XLA reads the flags
# when JAX is first imported, so they only act if nothing imported it before.
_FLAGS = (
    "--xla_backend_optimization_level=0",
    "--xla_cpu_use_fusion_emitters=false",
    "--xla_cpu_multi_thread_eigen=false",
    "intra_op_parallelism_threads=1",
)
_given = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join([_given, *(f for f in _FLAGS if f.split("=")[0] not in _given)]).strip()

import jax  # noqa: E402 - after XLA_FLAGS
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rwtoolkit.analyses.check import Functional  # noqa: E402

jax.config.update("jax_enable_x64", True)

#: The bug switches (static arguments of ``advance``; all False is the correct model).
SWITCHES = ("keys_only", "transposed", "eps_outside", "summed", "unit_norm")


def sine_positions(M: int, N: int, shift: float = 0.0) -> np.ndarray:
    """[p_i]_m = sin(π (i + shift) m / M), i = 1..N, m = 1..M: orthogonal, ‖p_i‖² = M/2 when shift = 0 (M > N)."""
    i = np.arange(1, N + 1) + shift
    m = np.arange(1, M + 1)
    return np.sin(np.pi * np.outer(m, i) / M)


def _bucket(size: int, floor: int) -> int:
    """The padded size: the next power of two at or above ``size``, at least ``floor``."""
    return max(floor, 1 << (size - 1).bit_length())


class Padding:
    """Static shapes for JAX: one configuration's arrays embedded in zero-padded, bucketed ones.

    JAX compiles a jitted function once per input shape, and a check draws some forty population shapes.
    Padded to powers of two (tokens to 8, positions to 64, sequence to 16, inputs to 128 at least), the
    kit's configurations fall into one bucket. The padding changes nothing: padded token and positional
    rows are zero, so their rows and columns of W and V get zero gradient and stay zero; padded positions sit
    before the sequence and are masked out of the softmax; padded inputs have probability 0.
    Packing and unpacking run in NumPy on the host, so they compile nothing.
    """

    def __init__(self, K: int, M: int, N: int, n: int) -> None:
        self.K, self.M, self.N, self.n = K, M, N, n
        self.Kb, self.Mb, self.Nb, self.nb = _bucket(K, 8), _bucket(M, 64), _bucket(N, 16), _bucket(n, 128)
        #: where the configuration's K + M coordinates sit among the padded Kb + Mb
        self.rows = np.concatenate([np.arange(K), self.Kb + np.arange(M)])
        #: which padded positions are the sequence's (the last N; the query stays the last column)
        self.valid = np.arange(self.Nb) >= self.Nb - N

    def inputs(self, Xt: np.ndarray) -> np.ndarray:
        out = np.zeros((self.nb, self.Kb + self.Mb, self.Nb), dtype=Xt.dtype)
        out[: self.n, self.rows, self.Nb - self.N :] = Xt
        out[self.n :] = out[0]  # padded inputs: copies of the first (finite everywhere), weight 0
        return out

    def vector(self, values: np.ndarray, fill: float = 0) -> np.ndarray:
        out = np.full(self.nb, fill, dtype=values.dtype)
        out[: self.n] = values
        return out

    def onehot(self, labels: np.ndarray, dtype) -> np.ndarray:
        """(nb, Kb): row n is e_{y_n} for the configuration's inputs; padded inputs pick label 0 (weight 0)."""
        out = np.zeros((self.nb, self.Kb), dtype=dtype)
        out[np.arange(self.nb), self.vector(labels)] = 1
        return out

    def params(self, params) -> dict:
        V = np.zeros((self.Kb, self.Kb))
        V[: self.K, : self.K] = np.asarray(params["V"])
        W = np.zeros((self.Kb + self.Mb,) * 2)
        W[np.ix_(self.rows, self.rows)] = np.asarray(params["W"])
        return {"V": V.astype(np.asarray(params["V"]).dtype), "W": W.astype(np.asarray(params["W"]).dtype)}

    def unpad(self, params) -> dict:
        V, W = np.asarray(params["V"]), np.asarray(params["W"])
        return {"V": V[: self.K, : self.K], "W": W[np.ix_(self.rows, self.rows)]}


def attention(params, Xt, valid, keys_only=False, unit_norm=False):
    """S (n, N): softmax over the valid positions j of x̃_jᵀ W x̃_N."""
    K = params["V"].shape[0]
    if unit_norm:  # bug: the positional rows rescaled to unit norm instead of ‖p_i‖² = μ
        norms = jnp.linalg.norm(Xt[0, K:, :], axis=0)
        Xt = Xt.at[:, K:, :].divide(jnp.where(norms > 0, norms, 1.0))
    logits = jnp.einsum("nij,ik,nk->nj", Xt, params["W"], Xt[:, :, -1])
    logits = jnp.where(valid, logits, -jnp.inf)
    if keys_only:  # bug: the softmax skips the query column
        return jnp.concatenate(
            [jax.nn.softmax(logits[:, :-1], axis=1), jnp.zeros_like(logits[:, -1:])], axis=1
        )
    return jax.nn.softmax(logits, axis=1)


def forward(params, Xt, valid, keys_only=False, transposed=False, unit_norm=False):
    """(S, f): the attention (n, N) and f (n, K) = V X S."""
    K = params["V"].shape[0]
    S = attention(params, Xt, valid, keys_only, unit_norm)
    V = params["V"].T if transposed else params["V"]
    return S, jnp.einsum("kl,nlj,nj->nk", V, Xt[:, :K, :], S)


def loss(
    params,
    Xt,
    valid,
    real,
    onehot,
    pi,
    eps,
    keys_only=False,
    transposed=False,
    eps_outside=False,
    summed=False,
    unit_norm=False,
):
    """Σ_n π_n (−log(z_n + ε)), z_n = f_n[y_n]; with (S, f) beside it (``has_aux``: one forward pass).

    The labels come one-hot (``onehot[n, k] = 1`` where k = y_n): z_n = Σ_k f_nk onehot_nk picks f_n[y_n]
    exactly, and lowers in a fraction of the time of the gather ``f[arange(n), y]`` and its scatter-add
    gradient (about 0.04 s against 0.22 s; a check pays it once).
    """
    S, f = forward(params, Xt, valid, keys_only, transposed, unit_norm)
    z = jnp.sum(f * onehot, axis=1)
    per_input = -jnp.log(z) + eps if eps_outside else -jnp.log(z + eps)
    value = jnp.sum(jnp.where(real, per_input, 0.0)) if summed else jnp.sum(pi * per_input)
    return value, (S, f)


@partial(jax.jit, static_argnames=("w_updates", *SWITCHES))
def advance(params, Xt, valid, real, onehot, pi, eps, eta, w_updates=1, **switches):
    """(S, f, loss) at θ and the GD step θ - η ∇L(θ) (``jax.grad``), in one compiled call; the W update
    taken ``w_updates`` times."""
    (value, (S, f)), g = jax.value_and_grad(loss, has_aux=True)(
        params, Xt, valid, real, onehot, pi, eps, **switches
    )
    new = {"V": params["V"] - eta * g["V"], "W": params["W"] - w_updates * eta * g["W"]}
    return S, f, value, new


def functional(config, P=None, w_updates: int = 1, dtype=np.float64, **switches) -> Functional:
    """The implementation for ``config``: zero parameters and the jitted functions on its padded population."""
    K, N, n = config.K, config.N, len(config.labels)
    M = config.M if P is None else P.shape[0]
    pad = Padding(K, M, N, n)
    # NumPy arrays straight into the jitted functions (jnp.asarray would compile a transfer per shape)
    valid = pad.valid
    real = pad.vector(np.ones(n, dtype=bool), fill=False)
    onehot = pad.onehot(np.asarray(config.labels), dtype)
    pi = pad.vector(np.asarray(config.weights, dtype=dtype))
    eps, eta = float(config.eps), float(config.eta)
    zeros = {"V": np.zeros((K, K), dtype=dtype), "W": np.zeros((K + M, K + M), dtype=dtype)}

    inputs: dict = {}  # the kit passes one X̃ for the whole run: padded (and sent to the device) once

    def padded(params, Xt):
        if inputs.get("Xt") is not Xt:
            inputs.update(Xt=Xt, padded=jax.device_put(pad.inputs(np.asarray(Xt, dtype=dtype))))
        return pad.params(params), inputs["padded"]

    last: dict = {}  # the kit asks for f, loss, S and the step at one θ in turn: one call per θ

    def at(params, Xt) -> dict:
        if last.get("params") is not params:
            args = (valid, real, onehot, pi, eps, eta, w_updates)
            S, f, value, new = advance(*padded(params, Xt), *args, **switches)
            last.update(params=params, S=np.asarray(S)[:n, pad.Nb - N :], f=np.asarray(f)[:n, :K])
            last.update(loss=value, step=pad.unpad(new))
        return last

    return Functional(
        zeros,
        forward=lambda params, Xt: at(params, Xt)["f"],
        attention=lambda params, Xt: at(params, Xt)["S"],
        loss=lambda params, Xt: at(params, Xt)["loss"],
        step=lambda params, Xt: at(params, Xt)["step"],
        P=None if P is None else np.asarray(P),
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
    return functional(config, dtype=np.float32)
