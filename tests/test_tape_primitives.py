"""Every primitive of ``rwtoolkit.models.Tape`` has the vector-Jacobian product of its forward (issue 23).

A model's gradient comes only from these VJPs, so each is checked on its own against torch autograd of the
same operation (float64: the two differ by rounding only, measured 6.7e-16 at most, relative to
max(1, |x|); the tolerance 1e-12 is that times 1500), with the broadcasting and 1-D cases the models use; and once
exactly, in python-flint rationals, against the derivative written out by hand. A VJP with a wrong sign,
a missing transpose or an unsummed broadcast axis fails here before it reaches any model.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from flint import fmpq

from rwtoolkit.models import FLOAT64, ObjectArithmetic, Tape

RTOL = 1e-12


def _check(forward_tape: Callable, forward_torch: Callable, *shapes: tuple[int, ...], seed: int = 0) -> None:
    """tape VJP of ``forward_tape`` = torch autograd of ``forward_torch`` at random inputs and cotangent."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in shapes]
    tape = Tape(FLOAT64)
    inputs = [tape.input(v) for v in values]
    out = forward_tape(tape, *inputs)
    cotangent = rng.standard_normal(out.shape)
    got = tape.gradient(out, cotangent, {str(i): x for i, x in enumerate(inputs)})
    leaves = [torch.tensor(v, requires_grad=True) for v in values]
    result = forward_torch(*leaves)
    assert tuple(result.shape) == out.shape
    np.testing.assert_allclose(out.value, result.detach().numpy(), rtol=RTOL, atol=RTOL)
    expected = torch.autograd.grad(result, leaves, torch.tensor(cotangent), allow_unused=True)
    for i, e in enumerate(expected):
        want = np.zeros(shapes[i]) if e is None else e.numpy()
        assert got[str(i)].shape == want.shape
        np.testing.assert_allclose(got[str(i)], want, rtol=RTOL, atol=RTOL)


CASES = {
    "matmul": (lambda t, a, b: t.matmul(a, b), lambda a, b: a @ b, (3, 4), (4, 2)),
    "matmul batched": (lambda t, a, b: t.matmul(a, b), lambda a, b: a @ b, (5, 3, 4), (5, 4, 2)),
    "matmul broadcast": (lambda t, a, b: t.matmul(a, b), lambda a, b: a @ b, (5, 3, 4), (4, 2)),
    "matmul vector right": (lambda t, a, b: t.matmul(a, b), lambda a, b: a @ b, (5, 3, 4), (4,)),
    "matmul vector left": (lambda t, a, b: t.matmul(a, b), lambda a, b: a @ b, (4,), (5, 4, 2)),
    "swap": (lambda t, a: t.swap(a), lambda a: a.transpose(-1, -2), (2, 3, 4)),
    "softmax": (lambda t, a: t.softmax(a), lambda a: torch.softmax(a, -1), (5, 4)),
    "scale": (
        lambda t, a: t.scale(a, np.arange(1.0, 5.0)),
        lambda a: a * torch.arange(1.0, 5.0, dtype=torch.float64),
        (3, 4),
    ),
    "scale scalar": (lambda t, a: t.scale(a, np.float64(-2.5)), lambda a: a * -2.5, (3, 4)),
    "scale broadcast up": (
        lambda t, a: t.scale(a, np.arange(12.0).reshape(3, 4)),
        lambda a: a * torch.arange(12.0, dtype=torch.float64).reshape(3, 4),
        (4,),
    ),
    "add": (lambda t, a, b: t.add(a, b), lambda a, b: a + b, (3, 4), (3, 4)),
    "add broadcast row": (lambda t, a, b: t.add(a, b), lambda a, b: a + b, (3, 4), (4,)),
    "add broadcast column": (lambda t, a, b: t.add(a, b), lambda a, b: a + b, (3, 4), (3, 1)),
    "reshape": (lambda t, a: t.reshape(a, (6, 2)), lambda a: a.reshape(6, 2), (3, 4)),
    "attend": (lambda t, x, s: t.attend(x, s), lambda x, s: (x @ s[:, :, None])[:, :, 0], (5, 3, 4), (5, 4)),
    "relu": (lambda t, a: t.relu(a), torch.relu, (5, 4)),
    "sum axis 0": (lambda t, a: t.sum(a, 0), lambda a: a.sum(0), (3, 4, 2)),
    "sum last axis": (lambda t, a: t.sum(a, -1), lambda a: a.sum(-1), (3, 4, 2)),
    "composite, one input used twice": (
        lambda t, a, b: t.sum(t.add(t.softmax(t.matmul(a, b)), t.scale(t.matmul(a, b), np.float64(3.0))), 0),
        lambda a, b: (torch.softmax(a @ b, -1) + 3.0 * (a @ b)).sum(0),
        (3, 4),
        (4, 5),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_primitive_has_the_vjp_of_torch_autograd(name):
    forward_tape, forward_torch, *shapes = CASES[name]
    _check(forward_tape, forward_torch, *shapes)


def test_an_input_the_output_does_not_reach_gets_zeros():
    tape = Tape(FLOAT64)
    a, unused = tape.input(np.ones((2, 2))), tape.input(np.ones(3))
    out = tape.sum(tape.scale(a, np.float64(2.0)), 0)
    grads = tape.gradient(out, np.array([1.0, -1.0]), {"a": a, "unused": unused})
    assert grads["a"].tolist() == [[2.0, -2.0], [2.0, -2.0]] and grads["unused"].tolist() == [0.0, 0.0, 0.0]


def test_vjps_are_exact_in_rational_arithmetic():
    """ℓ = Σ_k g_k (A x + b)_k ⊙ c_k by hand: ∂/∂A = (g ⊙ c) xᵀ, ∂/∂x = Aᵀ (g ⊙ c), ∂/∂b = g ⊙ c (exact)."""
    q = ObjectArithmetic("rationals", lambda v: fmpq(v), exp=None, sign=lambda x: (x > 0) - (x < 0))
    A = q.asarray([[fmpq(1, 2), fmpq(-3)], [fmpq(2, 7), fmpq(5, 3)]])
    x, b = q.asarray([fmpq(1, 3), fmpq(-4, 5)]), q.asarray([fmpq(1, 11), fmpq(2)])
    c, g = q.asarray([fmpq(3, 2), fmpq(-1, 4)]), q.asarray([fmpq(7), fmpq(1, 9)])
    tape = Tape(q)
    vA, vx, vb = tape.input(A), tape.input(x), tape.input(b)
    out = tape.scale(tape.add(tape.matmul(vA, vx), vb), c)
    grads = tape.gradient(out, g, {"A": vA, "x": vx, "b": vb})
    gc = [g[k] * c[k] for k in range(2)]
    assert grads["A"].tolist() == [[gc[i] * x[j] for j in range(2)] for i in range(2)]
    assert grads["x"].tolist() == [sum((A[i, j] * gc[i] for i in range(2)), fmpq(0)) for j in range(2)]
    assert grads["b"].tolist() == gc
    assert all(isinstance(v, fmpq) for v in grads["A"].ravel())  # no float anywhere


def test_relu_decides_exactly_and_refuses_what_it_cannot_decide():
    """ReLU in rationals: max(a, 0) and the mask 1[a > 0] exactly (0 at a = 0); an undecidable sign: one line."""
    q = ObjectArithmetic("rationals", lambda v: fmpq(v), exp=None, sign=lambda x: (x > 0) - (x < 0))
    tape = Tape(q)
    a = tape.input(q.asarray([fmpq(-1, 3), fmpq(0), fmpq(2, 5)]))
    out = tape.relu(a)
    assert out.value.tolist() == [0, 0, fmpq(2, 5)]
    assert tape.gradient(out, q.asarray([fmpq(7), fmpq(7), fmpq(7)]), {"a": a})["a"].tolist() == [0, 0, 7]
    undecided = ObjectArithmetic("undecided", lambda v: fmpq(v), exp=None, sign=lambda x: None)
    with pytest.raises(ValueError, match="cannot decide whether 1/2 > 0"):
        Tape(undecided).relu(undecided.asarray([fmpq(1, 2)]))
