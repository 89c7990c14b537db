"""A plain JAX function traced onto the tape through its jaxpr (issue 41, item 2): trace_jax / program_factory.

The oracles are JAX itself (``apply(params, tokens)`` in float64 and ``jax.grad``) and the PyTorch module the port
copies, traced independently by ``trace_torch``: at the same dyadic start both traces give the same exact logits.
"""

from __future__ import annotations

import importlib.util
import inspect
from fractions import Fraction
from itertools import product
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

from rwtoolkit.engines.exact import EXACT  # noqa: E402
from rwtoolkit.models import FLOAT64, Tape  # noqa: E402
from rwtoolkit.models.traced import program_factory  # noqa: E402
from rwtoolkit.models.traced._jax import trace_jax  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
S, L = 2, 4
#: Every sequence of length L over S tokens (n = 16; the trace has a symbolic batch size).
TOKENS = np.array(list(product(range(S), repeat=L)), dtype=np.int64)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PORT = _load("nanogpt_attention_jax")


@pytest.fixture(scope="module")
def traced():
    """name -> (apply, params, program), each factory of the port traced once (through program_factory)."""
    out = {}
    for name in ("one_layer", "two_layer"):
        factory = getattr(PORT, name)
        apply, params = factory(S, L)
        out[name] = (apply, params, program_factory(factory)(S, L))
    return out


def _jax_logits(apply, params, tokens):
    with jax.enable_x64(True):
        return np.asarray(apply({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(tokens)))


def _dyadic(params, seed=1):
    """A small dyadic start: every entry a multiple of 1/4 in [-1/2, 1/2]."""
    rng = np.random.default_rng(seed)
    return {name: rng.integers(-2, 3, size=np.shape(v)) / 4 for name, v in params.items()}


def _exact_logits(program, values, tokens):
    tape = Tape(EXACT)
    params = {
        name: tape.input(
            EXACT.asarray(np.vectorize(Fraction, otypes=[object])(np.asarray(v, dtype=np.float64)))
        )
        for name, v in values.items()
    }
    return program.run(tape, params, tokens).value


@pytest.mark.parametrize("name", ["one_layer", "two_layer"])
def test_traced_program_gives_the_jax_logits_on_any_batch_size(traced, name):
    apply, params, program = traced[name]
    for tokens in (TOKENS, TOKENS[5:6], TOKENS[:3]):
        got = program.run(Tape(FLOAT64), program.initial, tokens).value
        want = _jax_logits(apply, params, tokens)
        assert got.shape == want.shape == (len(tokens), L, S)
        assert np.abs(got - want).max() <= 1e-12


@pytest.mark.parametrize("name", ["one_layer", "two_layer"])
def test_tape_gradient_of_the_traced_program_equals_jax_grad(traced, name):
    apply, params, program = traced[name]
    cotangent = np.random.default_rng(0).standard_normal((len(TOKENS), L, S))
    tape = Tape(FLOAT64)
    values = {k: tape.input(np.asarray(v, dtype=np.float64)) for k, v in params.items()}
    got = tape.gradient(program.run(tape, values, TOKENS), cotangent, values)
    with jax.enable_x64(True):
        want = jax.grad(lambda p: jnp.sum(apply(p, jnp.asarray(TOKENS)) * cotangent))(
            {k: jnp.asarray(v) for k, v in params.items()}
        )
    for k in params:
        assert np.abs(got[k] - np.asarray(want[k])).max() <= 1e-10, k


def test_parameters_keep_the_dict_names_order_and_values_and_axes_match_the_module(traced):
    apply, params, program = traced["one_layer"]
    assert list(program.parameters) == list(params)  # the dict's order, not JAX's sorted pytree order
    assert all(program.parameters[k] == np.shape(v) for k, v in params.items())
    assert all(np.array_equal(program.initial[k], v) for k, v in params.items())
    assert program.framework == "jax"
    assert program.axes["wte.weight"] == ("token", None)
    assert program.axes["wpe.weight"] == ("position", None)
    assert program.axes["lm_head.weight"] == ("token", None)
    assert program.axes["blocks.0.attn.query.weight"] == (None, None)


@pytest.mark.parametrize("name", ["one_layer", "two_layer"])
def test_jax_and_torch_traces_give_the_same_exact_logits_at_a_dyadic_start(name):
    torch = pytest.importorskip("torch")
    module_example = _load("nanogpt_attention")
    module = getattr(module_example, name)(S, L)
    apply, params = getattr(PORT, name)(S, L)
    start = _dyadic(params)
    with torch.no_grad():
        for key, p in module.named_parameters():
            p.copy_(torch.as_tensor(start[key]))
    from_torch = program_factory(lambda S_, L_: module)(S, L)
    from_jax = trace_jax(apply, start, S, L)
    assert list(from_torch.parameters) == list(from_jax.parameters)
    assert from_torch.axes == from_jax.axes
    tokens = TOKENS if name == "one_layer" else TOKENS[[0, 6, 9, 15]]
    a = _exact_logits(from_jax, start, tokens)
    b = _exact_logits(from_torch, start, tokens)
    assert any(isinstance(x, sp.Expr) for x in a.ravel())  # the exponentials of the scores are exact atoms
    for x, y in zip(a.ravel(), b.ravel(), strict=True):
        assert x == y or sp.simplify(sp.sympify(x) - sp.sympify(y)) == 0
    assert np.abs(EXACT.to_float(a) - _jax_logits(apply, start, tokens)).max() <= 1e-12


def test_an_unsupported_primitive_is_refused_in_one_line_naming_it_and_its_line():
    def apply(p, tokens):
        x = p["E"][tokens]
        x = jnp.sort(x, axis=-1)  # the line the refusal names
        return x @ p["U"].T

    line = inspect.getsourcelines(apply)[1] + 2
    params = {"E": np.eye(2), "U": np.eye(2)}
    with pytest.raises(ValueError) as caught:
        trace_jax(apply, params, 2, 3)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("jax op 'sort' at ")
    assert f"test_traced_jax.py:{line} " in message
    assert "not in the op table" in message


def test_reduce_max_outside_the_softmax_pattern_is_refused_naming_it_and_its_line():
    def apply(p, tokens):
        x = p["E"][tokens]
        return x - jnp.max(x, axis=-1, keepdims=True)  # a max that no softmax follows

    line = inspect.getsourcelines(apply)[1] + 2
    with pytest.raises(ValueError, match=rf"^jax op 'reduce_max' at \S*test_traced_jax.py:{line} .*softmax"):
        trace_jax(apply, {"E": np.eye(2)}, 2, 3)


def test_jax_nn_functions_one_hot_einsum_and_slices_trace_to_their_values_and_gradients():
    """one_hot, einsum, log_softmax, relu, GELU's erf form, mean, concatenate, a slice, jnp.take and a constant
    table trace; the program's values and gradients are JAX's."""
    d = 3

    def apply(p, tokens):
        n = tokens.shape[0]
        x = jax.nn.one_hot(tokens, S) @ p["E"] + p["P"][:L]  # (n, L, d)
        h = jnp.einsum("nld,de->nle", x, p["W"])
        h = jnp.concatenate([jax.nn.relu(h[..., :2]), jax.nn.gelu(h[..., 2:], approximate=False)], axis=-1)
        h = h - h.mean(axis=-1, keepdims=True) + jnp.take(p["E"], tokens, axis=0)
        s = jnp.einsum("nid,njd->nij", h, x) / jnp.sqrt(2.0)
        a = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((L, L), bool)), s, -jnp.inf), axis=-1)
        y = (a @ h).reshape(n, L * d).reshape(n, L, d)
        return jax.nn.log_softmax(y @ p["U"].T, axis=-1) ** 2

    rng = np.random.default_rng(3)
    params = {
        "E": rng.standard_normal((S, d)),
        "P": rng.standard_normal((L + 2, d)),
        "W": rng.standard_normal((d, d)),
        "U": rng.standard_normal((S, d)),
    }
    program = trace_jax(apply, params, S, L)
    ops = {node.op for node in program.nodes}
    assert {"one_hot", "gelu", "relu", "softmax", "log_softmax", "masked_fill", "concat", "slice"} <= ops
    tape = Tape(FLOAT64)
    values = {k: tape.input(v) for k, v in params.items()}
    out = program.run(tape, values, TOKENS)
    assert np.abs(out.value - _jax_logits(apply, params, TOKENS)).max() <= 1e-12
    cotangent = rng.standard_normal(out.shape)
    got = tape.gradient(out, cotangent, values)
    with jax.enable_x64(True):
        want = jax.grad(lambda p: jnp.sum(apply(p, jnp.asarray(TOKENS)) * cotangent))(
            {k: jnp.asarray(v) for k, v in params.items()}
        )
    for k in params:
        assert np.abs(got[k] - np.asarray(want[k])).max() <= 1e-10, k
    assert program.axes["E"] == ("token", None) and program.axes["U"] == ("token", None)


def test_stop_gradient_outside_the_softmax_is_refused_and_bad_arguments_are_one_line():
    def detached(p, tokens):
        return jax.lax.stop_gradient(p["E"][tokens])

    with pytest.raises(ValueError, match=r"^jax op 'stop_gradient' at \S*test_traced_jax.py:\d+ "):
        trace_jax(detached, {"E": np.eye(2)}, 2, 3)
    for args, field in (
        ((detached, [np.eye(2)], 2, 3), "params"),
        ((detached, {"E": {"inner": np.eye(2)}}, 2, 3), r"params\['E'\]"),
        ((detached, {"E": np.eye(2)}, 0, 3), "S"),
        ((None, {"E": np.eye(2)}, 2, 3), "apply"),
    ):
        with pytest.raises(ValueError, match=rf"^trace_jax: {field} ") as caught:
            trace_jax(*args)
        assert "\n" not in str(caught.value)


def test_batch_sizes_written_into_the_function_and_fused_projections_trace_for_any_batch_size():
    """``jnp.zeros((B, T, d))``, ``reshape(-1, d)``, a fused q/k/v map cut by ``jnp.split``, einsums with batch
    axes, a numpy mask captured by the closure and a hand-written layer norm (rsqrt): the program, traced once,
    gives JAX's logits and gradients at other batch sizes."""
    d, H = 4, 2

    def apply(p, t):
        B, T = t.shape
        x = jnp.zeros((B, T, d)) + p["E"][t] + p["P"][None, :T, :]
        q, k, v = jnp.split((x.reshape(-1, d) @ p["Wqkv"]).reshape(B, T, 3 * d), 3, axis=-1)
        q, k, v = (z.reshape(B, T, H, d // H) for z in (q, k, v))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (d // H) ** -0.5
        s = jnp.where(np.tril(np.ones((T, T), bool))[None, None], s, -jnp.inf)
        x = x + jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(B, T, d)
        m = x.mean(-1, keepdims=True)
        x = (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * p["g"] + p["b"]
        return jnp.einsum("btc,sc->bts", x, p["U"])

    rng = np.random.default_rng(5)
    shapes = {"E": (S, d), "P": (L, d), "Wqkv": (d, 3 * d), "U": (S, d), "g": (d,), "b": (d,)}
    params = {k: rng.standard_normal(shape) for k, shape in shapes.items()}
    program = trace_jax(apply, params, S, L)
    for tokens in (TOKENS, TOKENS[3:4]):
        tape = Tape(FLOAT64)
        values = {k: tape.input(v) for k, v in params.items()}
        out = program.run(tape, values, tokens)
        assert np.abs(out.value - _jax_logits(apply, params, tokens)).max() <= 1e-12
        cotangent = rng.standard_normal(out.shape)
        got = tape.gradient(out, cotangent, values)
        with jax.enable_x64(True):
            want = jax.grad(lambda p, t=tokens, c=cotangent: jnp.sum(apply(p, jnp.asarray(t)) * c))(
                {k: jnp.asarray(v) for k, v in params.items()}
            )
        assert max(np.abs(got[k] - np.asarray(want[k])).max() for k in params) <= 1e-10
