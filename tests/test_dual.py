"""Forward mode over any arithmetic gives the Hessian of a model's population objective (issue 43, item 1).

``rwtoolkit.models.hessian`` runs the tape's reverse pass in ``DualArithmetic`` (forward over reverse). The oracle
is independent of the tape: torch's Hessian (reverse over reverse, torch.func.jacrev twice) of the same objective written directly on the example PyTorch
module (examples/nanogpt_attention.py), the cross-entropy at every position weighted by the sequences' exact
probabilities as float64 (``CrossEntropy("lm")``'s docstring). Measured: the two differ by at most 8.9e-16
(one_layer, two_layer, with_mlp on in-context Markov chains of length 4 at the module's own start) on entries up
to 1.07; the tolerance 1e-13 is about a hundred times that, and the product rule's second term dropped makes them
differ by 0.04-0.09. Over arb balls at 128 bits the products enclose the float64 ones (to within their rounding).
"""

from __future__ import annotations

import functools
import importlib.util
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rwtoolkit.models import (
    FLOAT64,
    CrossEntropy,
    Model,
    batch,
    flatten,
    get_model,
    hessian,
    hessian_vector_products,
    rational_positions,
    unflatten,
)
from rwtoolkit.tasks import binary_markov_task, icl_markov_task

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "nanogpt_attention.py"
TOL = 1e-13


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("nanogpt_attention_oracle", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _model(name: str) -> Model:
    """The traced example model (traced once per size in this file: tracing is most of its time)."""
    return get_model(f"examples/nanogpt_attention.py:{name}")


def _setup(name: str, task: Any, ar: Any = FLOAT64) -> tuple:
    pop = task.population()
    model = _model(name)
    P = ar.asarray(rational_positions(pop.N, Fraction(1)))
    data = batch(ar, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)
    params = dict(model.own_start(ar, data.inputs.sizes, "own"))
    return pop, model, data, params


def _torch_hessian(name: str, pop: Any, params: dict[str, np.ndarray]) -> np.ndarray:
    """torch's Hessian (reverse over reverse) of Σ_x π(x) (1/L) Σ_i −log softmax(logits_i)[x_{i+1}] on the example module itself."""
    tokens = np.asarray(pop.tokens)
    labels = np.asarray(pop.labels)
    sequences = torch.as_tensor(np.concatenate([tokens, labels[:, None]], axis=1))  # x_1..x_N
    x, y = sequences[:, :-1], sequences[:, 1:]
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    net = getattr(_example(), name)(int(pop.K), tokens.shape[1])
    shapes = {key: tuple(v.shape) for key, v in params.items()}

    def objective(flat: torch.Tensor) -> torch.Tensor:
        named, start = {}, 0
        for key, shape in shapes.items():
            size = int(np.prod(shape))
            named[key] = flat[start : start + size].reshape(shape)
            start += size
        logits = torch.func.functional_call(net, named, (x,))
        n, L, S = logits.shape
        ce = F.cross_entropy(logits.reshape(n * L, S), y.reshape(n * L), reduction="none").view(n, L)
        return (weights * ce.mean(dim=1)).sum()

    theta = torch.cat([torch.as_tensor(params[key]).reshape(-1) for key in shapes])
    return torch.func.jacrev(torch.func.jacrev(objective))(theta).numpy()  # reverse over reverse


@pytest.mark.parametrize("name", ["one_layer", "two_layer", "with_mlp"])
def test_hessian_matches_torch_autograd_on_the_example_module(name: str) -> None:
    pop, model, data, params = _setup(name, icl_markov_task(2, 5, 1))
    H = hessian(model, FLOAT64, params, data, CrossEntropy("lm"), chunk=64)
    want = _torch_hessian(name, pop, params)
    assert H.shape == want.shape == (flatten(params).size,) * 2
    assert np.abs(want).max() > 0.1  # a Hessian with something in it
    np.testing.assert_allclose(H, want, rtol=0, atol=TOL)


def test_hessian_vector_products_are_the_hessian_applied_in_either_form() -> None:
    """Directions as one (k, P) array over the flat vector and as k dicts by name give H v, H the full Hessian."""
    _, model, data, params = _setup("one_layer", binary_markov_task("1/3", "3/5", 3))
    loss = CrossEntropy("lm")
    H = hessian(model, FLOAT64, params, data, loss, chunk=7)
    V = np.random.default_rng(0).standard_normal((3, H.shape[0]))
    rows = hessian_vector_products(model, FLOAT64, params, data, loss, V)
    np.testing.assert_allclose(rows, V @ H.T, rtol=0, atol=1e-14)
    named = hessian_vector_products(model, FLOAT64, params, data, loss, [unflatten(v, params) for v in V])
    assert [list(d) for d in named] == [list(params)] * 3
    np.testing.assert_allclose(np.stack([flatten(d) for d in named]), rows, rtol=0, atol=0)


def test_ball_hessian_vector_products_enclose_the_float_ones() -> None:
    """The same model definition over arb balls (128 bits): each H v is a ball holding the float64 H v."""
    from rwtoolkit.engines.balls import ball_arithmetic, precision

    task = binary_markov_task("1/3", "3/5", 3)
    _, model, data, params = _setup("one_layer", task)
    V = np.random.default_rng(1).integers(-3, 4, (3, flatten(params).size))
    want = hessian_vector_products(model, FLOAT64, params, data, CrossEntropy("lm"), V.astype(np.float64))
    with precision(128):
        balls = ball_arithmetic()
        _, _, ball_data, ball_params = _setup("one_layer", task, balls)
        got = hessian_vector_products(model, balls, ball_params, ball_data, CrossEntropy("lm"), V)
    assert got.shape == want.shape
    mid = np.vectorize(lambda x: float(x.mid()))(got)
    rad = np.vectorize(lambda x: float(x.rad()))(got)
    assert rad.max() < 1e-25  # 128 bits: narrow balls, so that holding the floats says something
    assert np.abs(want).max() > 0.1
    assert (np.abs(mid - want) <= rad + 1e-14).all()
