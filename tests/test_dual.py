"""Forward mode over any arithmetic gives the Hessian of a model's population objective (issue 43, item 1).

``rwtoolkit.models.hessian`` runs the tape's reverse pass in ``DualArithmetic`` (forward over reverse). The oracle
is independent of the tape: torch's Hessian (reverse over reverse, torch.func.jacrev twice) of the same objective
written directly on the example PyTorch module (examples/nanogpt_attention.py), the cross-entropy at every position
weighted by the sequences' exact probabilities as float64 (``CrossEntropy("lm")``'s docstring). Measured: the two
differ by at most 8.9e-16 (one_layer on binary Markov chains of length 2, two_layer and with_mlp on in-context
Markov chains of length 4, at the module's own start) on entries up to 1.9; the tolerance 1e-13 is about a hundred
times that, and the product rule's second term dropped makes them differ by 0.03-0.09. Each array operation is
checked on its own against torch's Jacobian (reverse mode) applied to the directions. Over arb balls at 128 bits
the products enclose the float64 ones, and over float balls the Hessian on a box of parameters encloses the
float64 Hessian at points of the box.
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
    DualArithmetic,
    Model,
    batch,
    flatten,
    get_model,
    gradient_steps,
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


#: The models and their tasks (one_layer on the small task the ball tests use: each size is traced once).
ORACLE_CASES = [
    ("one_layer", lambda: binary_markov_task("1/3", "3/5", 3)),
    ("two_layer", lambda: icl_markov_task(2, 5, 1)),
    ("with_mlp", lambda: icl_markov_task(2, 5, 1)),
]


@pytest.mark.parametrize("name, task", ORACLE_CASES, ids=[c[0] for c in ORACLE_CASES])
def test_hessian_matches_torch_autograd_on_the_example_module(name: str, task: Any) -> None:
    pop, model, data, params = _setup(name, task())
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


MASK = np.array([[True, False, True], [True, True, False]])
IDX = np.array([0, 2])
CONST = np.array([0.5, -1.5, 2.0])

#: (name, the function on dual arrays, the same on torch tensors, the input shapes, inputs > 0): each array
#: operation the tape, the objectives and the optimizers use, with the broadcasting and 1-D cases numpy has.
PRIMITIVES = [
    ("matmul vector-matrix", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(3,), (3, 4)], False),
    ("matmul matrix-vector", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(2, 3), (3,)], False),
    ("matmul vector-vector", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(3,), (3,)], False),
    ("matmul batch-vector", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(5, 2, 3), (3,)], False),
    ("matmul vector-batch", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(3,), (5, 3, 2)], False),
    ("matmul broadcast left", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(5, 2, 3), (3, 4)], False),
    ("matmul broadcast right", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(2, 3), (5, 3, 4)], False),
    ("matmul batched", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(2, 5, 2, 3), (5, 3, 4)], False),
    ("matmul large", lambda ar, a, b: a @ b, lambda a, b: a @ b, [(2, 20, 30), (2, 30, 10)], False),
    (
        "matmul with constants",
        lambda ar, a: (CONST @ a) @ CONST.reshape(3, 1) + CONST[:2] @ a[:2],
        lambda a: (
            (torch.tensor(CONST) @ a) @ torch.tensor(CONST).reshape(3, 1) + torch.tensor(CONST[:2]) @ a[:2]
        ),
        [(3, 3)],
        False,
    ),
    (
        "broadcast arithmetic",
        lambda ar, a, b, c: (a * b - c / b + 2.0) / (1 + a * a) - CONST * a + 3 / b,
        lambda a, b, c: (a * b - c / b + 2.0) / (1 + a * a) - torch.tensor(CONST) * a + 3 / b,
        [(3,), (2, 3), (2, 1)],
        True,
    ),
    (
        "negation and constant on the left",
        lambda ar, a: -(CONST - a) * (CONST / a),
        lambda a: -(torch.tensor(CONST) - a) * (torch.tensor(CONST) / a),
        [(2, 3)],
        True,
    ),
    (
        "indexing",
        lambda ar, a: a[IDX, :, IDX[::-1]] * a[1][None, :, 0] + a[..., None][:, 1:3, 0, 0].sum(),
        lambda a: a[IDX, :, IDX[::-1].copy()] * a[1][None, :, 0] + a[..., None][:, 1:3, 0, 0].sum(),
        [(3, 4, 3)],
        False,
    ),
    (
        "axes",
        lambda ar, a: (
            a.transpose(2, 0, 1).swapaxes(-1, -2).reshape(-1, 4).T
            * a.permute((1, 2, 0)).reshape((2, 6))[0, 0]
        ),
        lambda a: (
            a.permute(2, 0, 1).swapaxes(-1, -2).reshape(-1, 4).T * a.permute(1, 2, 0).reshape((2, 6))[0, 0]
        ),
        [(2, 2, 3)],
        False,
    ),
    (
        "sums",
        lambda ar, a: ar.sum(a, (0, -1)) + ar.sum(a, 1, keepdims=True).reshape(-1)[:4] + a.sum(),
        lambda a: a.sum((0, -1)) + a.sum(1, keepdim=True).reshape(-1)[:4] + a.sum(),
        [(2, 4, 3)],
        False,
    ),
    (
        "exp log sqrt",
        lambda ar, a: ar.log(a) * ar.exp(a) / ar.sqrt(a),
        lambda a: a.log() * a.exp() / a.sqrt(),
        [(2, 3)],
        True,
    ),
    ("erf", lambda ar, a: ar.erf(a) * a, lambda a: torch.erf(a) * a, [(2, 3)], False),
    ("softmax", lambda ar, a: ar.softmax(a) * a, lambda a: torch.softmax(a, -1) * a, [(2, 3)], False),
    (
        "masked softmax",
        lambda ar, a: ar.masked_softmax(a, MASK) * a,
        lambda a: torch.softmax(a.masked_fill(torch.tensor(~MASK), float("-inf")), -1) * a,
        [(2, 3)],
        False,
    ),
    (
        "log_softmax",
        lambda ar, a: ar.log_softmax(a) * a,
        lambda a: torch.log_softmax(a, -1) * a,
        [(2, 3)],
        False,
    ),
    (
        "concat",
        lambda ar, a, b: ar.concat([a, CONST.reshape(1, 3), b * b], 0),
        lambda a, b: torch.cat([a, torch.tensor(CONST).reshape(1, 3), b * b], 0),
        [(2, 3), (1, 3)],
        False,
    ),
    (
        "assignment",
        lambda ar, a: _assigned(ar, a),
        lambda a: torch.cat(
            [torch.zeros(3, 1, dtype=torch.float64), a * a, torch.zeros(3, 1, dtype=torch.float64)], 1
        ),
        [(3, 2)],
        False,
    ),
]


def _assigned(ar: DualArithmetic, a: Any) -> Any:
    z = ar.zeros((3, 4))
    z[:, 1:3] = a * a
    return z


@pytest.mark.parametrize(
    "name, dual_fn, torch_fn, shapes, positive", PRIMITIVES, ids=[p[0] for p in PRIMITIVES]
)
def test_dual_tangents_are_torch_jacobians_applied(
    name: str, dual_fn: Any, torch_fn: Any, shapes: list, positive: bool
) -> None:
    """The tangents of 3 directions at once are J v, J torch's Jacobian (reverse mode) of the same function."""
    rng = np.random.default_rng(len(name))
    values = [rng.standard_normal(s) for s in shapes]
    if positive:
        values = [0.5 + np.abs(v) for v in values]
    directions = [rng.standard_normal((3,) + s) for s in shapes]
    ar = DualArithmetic(FLOAT64, 3)
    out = dual_fn(ar, *(ar.variable(v, t) for v, t in zip(values, directions, strict=True)))
    leaves = [torch.tensor(v) for v in values]
    want_value = torch_fn(*leaves).numpy()
    jacobians = torch.func.jacrev(torch_fn, argnums=tuple(range(len(leaves))))(*leaves)
    want = sum(
        np.tensordot(
            t, J.numpy(), axes=(list(range(1, t.ndim)), list(range(J.ndim - t.ndim + 1, J.ndim)))
        ).reshape((3,) + want_value.shape)
        for t, J in zip(directions, jacobians, strict=True)
    )
    assert out.shape == want_value.shape and out.tangent.shape == (3,) + want_value.shape
    np.testing.assert_allclose(out.value, want_value, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(out.tangent, want, rtol=1e-12, atol=1e-12)


def test_float_ball_hessian_encloses_the_float_hessian_over_a_box() -> None:
    """In float balls (rwtoolkit.engines.balls.FLOAT_BALLS) the Hessian at parameter balls of radius 10⁻⁶ holds
    the float64 Hessian at points of the box (its centre and two corners' mixtures), to within float rounding."""
    from rwtoolkit.engines.balls import FLOAT_BALLS, FloatBalls

    task = binary_markov_task("1/3", "3/5", 3)
    _, model, data, params = _setup("one_layer", task)
    _, _, ball_data, ball_params = _setup("one_layer", task, FLOAT_BALLS)
    radius = 1e-6
    box = {name: FloatBalls(value.mid, np.full(value.shape, radius)) for name, value in ball_params.items()}
    H = hessian(model, FLOAT_BALLS, box, ball_data, CrossEntropy("lm"))
    assert H.shape == (flatten(params).size,) * 2
    assert 0 < H.rad.max() < 1e-3  # the box's width, not the whole line
    rng = np.random.default_rng(2)
    for scale in (0.0, 1.0, 1.0):
        point = {k: v + scale * radius * rng.uniform(-1, 1, v.shape) for k, v in params.items()}
        inside = hessian(model, FLOAT64, point, data, CrossEntropy("lm"))
        assert (np.abs(inside - H.mid) <= H.rad + 1e-14).all()
    point_balls = hessian(model, FLOAT_BALLS, ball_params, ball_data, CrossEntropy("lm"))
    assert point_balls.rad.max() < 1e-12  # at a point: rounding only


def test_an_undecided_relu_in_balls_is_the_base_arithmetic_refusal() -> None:
    """A ReLU input ball that straddles 0 raises the ball engine's Undecided through the duals, unchanged."""
    from flint import arb

    from rwtoolkit.engines.balls import Undecided, ball_arithmetic

    ar = DualArithmetic(ball_arithmetic(), 2)
    x = ar.variable(np.array([arb(1), arb("0 +/- 0.1")], dtype=object), ar.base.zeros((2, 2)))
    with pytest.raises(Undecided, match="straddles 0"):
        ar.positive(x)


def test_exact_hessian_at_zero_is_rational_and_exactly_symmetric() -> None:
    """Over the exact engine's arithmetic (fmpq) the Hessian at θ = 0 has rational entries, H = Hᵀ exactly (the
    columns H e_j come from separate directions: a wrong second derivative breaks the symmetry), and the float64
    Hessian is its rounding."""
    import sympy as sp

    from rwtoolkit.engines.exact import EXACT

    def exact_log(a: Any) -> Any:  # the loss value's logarithms (the Hessian reads none)
        return np.vectorize(lambda x: sp.log(sp.Rational(int(x.p), int(x.q))), otypes=[object])(a)

    task = binary_markov_task("1/3", "3/5", 3)
    _, model, data, _ = _setup("one_layer", task)
    _, _, exact_data, _ = _setup("one_layer", task, EXACT)
    H = hessian(
        model, EXACT, model.zeros(EXACT, exact_data.inputs.sizes), exact_data, CrossEntropy("lm", exact_log)
    )
    assert all(type(x).__name__ == "fmpq" for x in H.flat)
    assert (H == H.T).all() and any(x != 0 for x in H.flat)
    floats = hessian(model, FLOAT64, model.zeros(FLOAT64, data.inputs.sizes), data, CrossEntropy("lm"))
    np.testing.assert_allclose(EXACT.to_float(H), floats, rtol=0, atol=1e-15)


def test_a_gradient_step_in_duals_carries_the_jacobian_of_the_gd_map() -> None:
    """θ(1) = θ − η∇L(θ) run by gradient_steps in DualArithmetic from θ with tangents v has tangents
    (I − ηH) v: the GD map's Jacobian applied to the directions, H from ``hessian``."""
    task = binary_markov_task("1/3", "3/5", 3)
    pop, model, data, params = _setup("one_layer", task)
    H = hessian(model, FLOAT64, params, data, CrossEntropy("lm"))
    V = np.random.default_rng(3).standard_normal((2, H.shape[0]))
    ar = DualArithmetic(FLOAT64, 2)
    P = ar.asarray(rational_positions(pop.N, Fraction(1)))
    duals = batch(ar, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)
    start, offset = {}, 0
    for k, v in params.items():  # each parameter's slice of the directions, in flatten's order
        start[k] = ar.variable(v, V[:, offset : offset + v.size].reshape((2,) + v.shape))
        offset += v.size
    eta = 0.3
    states = list(gradient_steps(model, ar, start, duals, CrossEntropy("lm"), eta, 1))
    moved = np.concatenate([states[1].params[k].tangent.reshape(2, -1) for k in params], axis=1)
    np.testing.assert_allclose(moved, V - eta * V @ H.T, rtol=0, atol=1e-14)


def test_directions_of_the_wrong_shape_and_a_bad_chunk_are_refused_in_one_line() -> None:
    _, model, data, params = _setup("one_layer", binary_markov_task("1/3", "3/5", 3))
    size = flatten(params).size
    loss = CrossEntropy("lm")
    with pytest.raises(ValueError, match=rf"i\.e\. shape \(2, {size}\)"):
        hessian_vector_products(model, FLOAT64, params, data, loss, np.zeros((2, size + 1)))
    first = next(iter(params))
    wrong = [{**params, first: np.zeros(params[first].size + 1)}]
    with pytest.raises(ValueError, match=rf"directions\[0\]\['{first}'\] has shape"):
        hessian_vector_products(model, FLOAT64, params, data, loss, wrong)
    with pytest.raises(ValueError, match="chunk=0 must be an integer >= 1"):
        hessian(model, FLOAT64, params, data, loss, chunk=0)
    with pytest.raises(ValueError, match="n=0 must be an integer >= 1"):
        DualArithmetic(FLOAT64, 0)
