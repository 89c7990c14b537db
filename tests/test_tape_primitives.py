"""Every primitive of ``rwtoolkit.models.Tape`` has the vector-Jacobian product of its forward (issues 23, 41).

A model's gradient comes only from these VJPs, so each is checked on its own against torch autograd of the
same operation (float64: the two differ by rounding only, measured 1.1e-15 at most for one primitive and 8.2e-15
for the causal attention block of about forty, relative to max(1, |x|), over 20 seeds; the tolerance 1e-12 is over
a hundred times that), with the broadcasting and 1-D cases the models use, and under hypothesis on any broadcast
of a product or quotient and any axis of gather and permute; and exactly, in python-flint rationals and the exact
engine's arithmetic, against the derivative written out by hand. A VJP with a wrong sign, a missing transpose, an
unsummed broadcast axis or a lost scatter-add fails here before it reaches any model. GELU and layer norm, whose
values are irrational, are checked in arb balls that must hold torch's values, and refused by the exact arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import scaled
from flint import arb, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rwtoolkit.engines.exact import EXACT
from rwtoolkit.models import FLOAT64, ObjectArithmetic, Tape

RTOL = 1e-12


def _check(
    forward_tape: Callable,
    forward_torch: Callable,
    *shapes: tuple[int, ...],
    seed: int = 0,
    positive: bool = False,
) -> None:
    """tape VJP of ``forward_tape`` = torch autograd of ``forward_torch`` at random inputs and cotangent
    (``positive``: inputs in [0.5, ∞), for log, sqrt and a quotient's denominator)."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in shapes]
    if positive:
        values = [0.5 + np.abs(v) for v in values]
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


# The standard architectures' primitives (issue 41, item 3) -------------------------------------------------
# Constant operands, shared by the tape and the torch oracle.
CAUSAL = np.tril(np.ones((4, 4), dtype=bool))  # the causal mask: position i sees j ≤ i
ROW_MASK = np.array([True, False, True, True])  # one mask broadcast over every row
PICK_1 = np.array([[2, 0, 2, 1, 2], [1, 1, 0, 0, 2]])[
    :, :, None
]  # (2, 5, 1) along axis 1 of (2, 3, 4): broadcast
PICK_LAST = np.array([[3, 0, 3], [1, 1, 2], [0, 0, 0]])  # (3, 3) along the last axis of (3, 4): repeats
PICK_NEG = np.array([[-1], [-4], [2]])  # (3, 1): negative indices count from the end, as numpy and torch
PICK_0 = np.array([[2, 0, 1, 2]])  # (1, 4) along axis 0 of (3, 4)
CONST = np.arange(6.0).reshape(3, 2) / 7  # a constant part of a concatenation
TOKENS, TARGETS = np.array([0, 2, 1, 2]), np.array([2, 1, 2, 0])  # a sequence and its next tokens


def _t(x: np.ndarray) -> torch.Tensor:
    return torch.tensor(x)


def _heads(t, h, w):
    """(L, 4) @ (4, 4) split into 2 heads of width 2: (2, L, 2)."""
    return t.permute(t.reshape(t.matmul(h, w), (4, 2, 2)), (1, 0, 2))


def _transformer(t, emb, pos, wq, wk, wv, wo, g, b, u):
    """One causal attention block with two heads, as the field's codebases write it: token rows gathered and
    joined with the positions, layer norm, q, k, v, scores / √d, the causal masked softmax, the heads joined,
    the output map, the residual, GELU, the unembedding, and the cross-entropy at every position, averaged."""
    x = t.concat([t.gather(emb, TOKENS[:, None], 0), pos], -1)  # (4, 4)
    h = t.layer_norm(x, 1e-5, g, b)
    q, k, v = _heads(t, h, wq), _heads(t, h, wk), _heads(t, h, wv)
    s = t.scale(t.matmul(q, t.permute(k, (0, 2, 1))), np.float64(1 / np.sqrt(2)))
    a = t.reshape(t.permute(t.matmul(t.softmax(s, CAUSAL), v), (1, 0, 2)), (4, 4))
    y = t.add(x, t.matmul(a, wo))
    logp = t.log_softmax(t.matmul(t.gelu(y), u))
    return t.scale(t.mean(t.gather(logp, TARGETS[:, None], 1), 0), np.float64(-1.0))


def _transformer_torch(emb, pos, wq, wk, wv, wo, g, b, u):
    x = torch.cat([emb[_t(TOKENS)], pos], -1)
    h = torch.nn.functional.layer_norm(x, (4,), g, b, 1e-5)
    q, k, v = ((h @ w).reshape(4, 2, 2).permute(1, 0, 2) for w in (wq, wk, wv))
    s = (q @ k.transpose(-1, -2)) / np.sqrt(2)
    a = (torch.softmax(s.masked_fill(~_t(CAUSAL), float("-inf")), -1) @ v).permute(1, 0, 2).reshape(4, 4)
    y = x + a @ wo
    logits = torch.nn.functional.gelu(y) @ u
    return torch.nn.functional.cross_entropy(logits, _t(TARGETS), reduction="none")[:, None].mean(0)


CASES_41 = {
    "mul": (lambda t, a, b: t.mul(a, b), lambda a, b: a * b, (3, 4), (3, 4)),
    "mul broadcast row": (lambda t, a, b: t.mul(a, b), lambda a, b: a * b, (3, 4), (4,)),
    "mul broadcast both ways": (lambda t, a, b: t.mul(a, b), lambda a, b: a * b, (3, 1), (1, 4)),
    "mul by a 0-d value": (lambda t, a, b: t.mul(a, b), lambda a, b: a * b, (2, 3), ()),
    "mul, one input twice": (lambda t, a: t.mul(a, a), lambda a: a * a, (3, 4)),
    "div": (lambda t, a, b: t.div(a, b), lambda a, b: a / b, (3, 4), (3, 4), "positive"),
    "div broadcast denominator": (
        lambda t, a, b: t.div(a, b),
        lambda a, b: a / b,
        (2, 3, 4),
        (3, 1),
        "positive",
    ),
    "div broadcast numerator": (lambda t, a, b: t.div(a, b), lambda a, b: a / b, (4,), (3, 4), "positive"),
    "sub": (lambda t, a, b: t.sub(a, b), lambda a, b: a - b, (3, 4), (3, 4)),
    "sub broadcast column": (lambda t, a, b: t.sub(a, b), lambda a, b: a - b, (3, 4), (3, 1)),
    "exp": (lambda t, a: t.exp(a), torch.exp, (3, 4)),
    "log": (lambda t, a: t.log(a), torch.log, (3, 4), "positive"),
    "sqrt": (lambda t, a: t.sqrt(a), torch.sqrt, (3, 4), "positive"),
    "gelu": (lambda t, a: t.gelu(a), torch.nn.functional.gelu, (5, 4)),
    "softmax causal mask, batched": (
        lambda t, a: t.softmax(a, CAUSAL),
        lambda a: torch.softmax(a.masked_fill(~_t(CAUSAL), float("-inf")), -1),
        (2, 4, 4),
    ),
    "softmax mask broadcast over rows": (
        lambda t, a: t.softmax(a, ROW_MASK),
        lambda a: torch.softmax(a.masked_fill(~_t(ROW_MASK), float("-inf")), -1),
        (3, 4),
    ),
    "log_softmax": (lambda t, a: t.log_softmax(a), lambda a: torch.log_softmax(a, -1), (2, 3, 5)),
    "gather along a middle axis, indices broadcast": (
        lambda t, a: t.gather(a, PICK_1, 1),
        lambda a: torch.take_along_dim(a, _t(PICK_1), 1),
        (2, 3, 4),
    ),
    "gather along the last axis, repeated indices": (
        lambda t, a: t.gather(a, PICK_LAST, -1),
        lambda a: torch.gather(a, -1, _t(PICK_LAST)),
        (3, 4),
    ),
    "gather negative indices": (
        lambda t, a: t.gather(a, PICK_NEG, 1),
        lambda a: torch.take_along_dim(a, _t(PICK_NEG), 1),
        (3, 4),
    ),
    "gather along axis 0": (
        lambda t, a: t.gather(a, PICK_0, 0),
        lambda a: torch.take_along_dim(a, _t(PICK_0), 0),
        (3, 4),
    ),
    "concat last axis, three parts and a constant": (
        lambda t, a, b: t.concat([a, CONST, b], -1),
        lambda a, b: torch.cat([a, _t(CONST), b], -1),
        (3, 4),
        (3, 1),
    ),
    "concat axis 0": (
        lambda t, a, b: t.concat([a, b], 0),
        lambda a, b: torch.cat([a, b], 0),
        (2, 3, 2),
        (1, 3, 2),
    ),
    "permute a 3-cycle": (lambda t, a: t.permute(a, (2, 0, 1)), lambda a: a.permute(2, 0, 1), (2, 3, 4)),
    "permute four axes, negative": (
        lambda t, a: t.permute(a, (1, -1, 0, 2)),
        lambda a: a.permute(1, 3, 0, 2),
        (2, 3, 4, 5),
    ),
    "mean axis 1": (lambda t, a: t.mean(a, 1), lambda a: a.mean(1), (2, 3, 4)),
    "mean last axis": (lambda t, a: t.mean(a, -1), lambda a: a.mean(-1), (3, 5)),
    "layer_norm with affine": (
        lambda t, a, w, b: t.layer_norm(a, 1e-5, w, b),
        lambda a, w, b: torch.nn.functional.layer_norm(a, (5,), w, b, 1e-5),
        (2, 3, 5),
        (5,),
        (5,),
    ),
    "layer_norm without affine, one vector": (
        lambda t, a: t.layer_norm(a, 0.25),
        lambda a: torch.nn.functional.layer_norm(a, (4,), None, None, 0.25),
        (4,),
    ),
    "a causal attention block with cross-entropy at every position": (
        _transformer,
        _transformer_torch,
        (3, 2),
        (4, 2),
        (4, 4),
        (4, 4),
        (4, 4),
        (4, 4),
        (4,),
        (4,),
        (4, 3),
    ),
}


@pytest.mark.parametrize("name", list(CASES_41))
def test_each_architecture_primitive_has_the_vjp_of_torch_autograd(name):
    forward_tape, forward_torch, *rest = CASES_41[name]
    positive = rest[-1] == "positive"
    _check(forward_tape, forward_torch, *(rest[:-1] if positive else rest), positive=positive)


def _rationals() -> ObjectArithmetic:
    return ObjectArithmetic("rationals", lambda v: fmpq(v), exp=None, sign=lambda x: (x > 0) - (x < 0))


def _grad(tape: Tape, out, g, **wrt):
    return tape.gradient(out, g, wrt)


def test_product_and_quotient_vjps_are_exact_in_rationals():
    """By hand: ∂(a ⊙ b) = (g ⊙ b, g ⊙ a); ∂(a / b) = (g / b, −g a / b²); b broadcast over rows sums them."""
    q = _rationals()
    a = q.asarray([[fmpq(1, 2), fmpq(-3)], [fmpq(2, 7), fmpq(5, 3)]])
    b = q.asarray([fmpq(2, 3), fmpq(5, 4)])
    g = q.asarray([[fmpq(7), fmpq(1, 9)], [fmpq(-2), fmpq(3, 5)]])
    tape = Tape(q)
    va, vb = tape.input(a), tape.input(b)
    prod = _grad(tape, tape.mul(va, vb), g, a=va, b=vb)
    assert prod["a"].tolist() == [[g[i, j] * b[j] for j in range(2)] for i in range(2)]
    assert prod["b"].tolist() == [g[0, j] * a[0, j] + g[1, j] * a[1, j] for j in range(2)]
    quot = tape.div(va, vb)
    assert quot.value.tolist() == [[a[i, j] / b[j] for j in range(2)] for i in range(2)]
    grads = _grad(tape, quot, g, a=va, b=vb)
    assert grads["a"].tolist() == [[g[i, j] / b[j] for j in range(2)] for i in range(2)]
    assert grads["b"].tolist() == [-(g[0, j] * a[0, j] + g[1, j] * a[1, j]) / (b[j] * b[j]) for j in range(2)]
    # by hand: −(7·½ − 2·2/7)/(2/3)² = −369/56 and −(−3/9 + 3/5·5/3)/(5/4)² = −32/75
    assert grads["b"].tolist() == [fmpq(-369, 56), fmpq(-32, 75)]
    diff = _grad(tape, tape.sub(va, vb), g, a=va, b=vb)
    assert diff["a"].tolist() == g.tolist() and diff["b"].tolist() == [-(g[0, j] + g[1, j]) for j in range(2)]


def test_gather_concat_permute_and_mean_are_exact_in_rationals():
    """gather's VJP scatter-adds (an entry taken three times gets three contributions, one never taken 0);
    concat's is the slices; permute's the inverse permutation; mean's g / n on every entry."""
    q = _rationals()
    tape = Tape(q)
    a = tape.input(q.asarray([[fmpq(1, 2), fmpq(1, 3), fmpq(1, 5)]]))
    taken = tape.gather(a, np.array([[2, 0, 2, -1]]), 1)
    assert taken.value.tolist() == [[fmpq(1, 5), fmpq(1, 2), fmpq(1, 5), fmpq(1, 5)]]
    g = q.asarray([[1, 2, 3, 4]])
    assert _grad(tape, taken, g, a=a)["a"].tolist() == [[2, 0, 1 + 3 + 4]]

    b = tape.input(q.asarray([[fmpq(-1, 7)]]))
    joined = tape.concat([a, b], 1)
    assert joined.value.tolist() == [[fmpq(1, 2), fmpq(1, 3), fmpq(1, 5), fmpq(-1, 7)]]
    grads = _grad(tape, joined, g, a=a, b=b)
    assert grads["a"].tolist() == [[1, 2, 3]] and grads["b"].tolist() == [[4]]

    c = tape.input(q.asarray(np.arange(6).reshape(1, 2, 3)))
    moved = tape.permute(c, (2, 0, 1))  # (3, 1, 2): moved[k, 0, i] = c[0, i, k]
    assert moved.value.tolist() == [[[0, 3]], [[1, 4]], [[2, 5]]]
    h = q.asarray([[[fmpq(1, 2), 7]], [[8, 9]], [[10, fmpq(-1, 3)]]])
    assert _grad(tape, moved, h, c=c)["c"].tolist() == [[[fmpq(1, 2), 8, 10], [7, 9, fmpq(-1, 3)]]]

    m = tape.mean(a, -1)
    assert m.value.tolist() == [fmpq(31, 90)]  # (1/2 + 1/3 + 1/5) / 3
    assert _grad(tape, m, q.asarray([fmpq(3, 4)]), a=a)["a"].tolist() == [[fmpq(1, 4)] * 3]


def test_masked_softmax_is_exact_with_zeros_where_masked():
    """At zero scores the causal softmax is uniform over j ≤ i: row i is 1/(i+1) on its first i+1 entries and the
    exact 0 after them; its VJP S ⊙ (g − Σ g S) is 0 on the masked entries, by hand on rows 0 and 1."""
    tape = Tape(EXACT)
    s = tape.input(EXACT.zeros((3, 3)))
    out = tape.softmax(s, np.tril(np.ones((3, 3), dtype=bool)))
    third = fmpq(1, 3)
    assert out.value.tolist() == [[1, 0, 0], [fmpq(1, 2), fmpq(1, 2), 0], [third, third, third]]
    assert all(isinstance(x, fmpq) for x in out.value.ravel())  # the masked zeros are exact, not SymPy's
    g = EXACT.asarray([[5, 6, 7], [1, 3, 9], [0, 0, 3]])
    grad = _grad(tape, out, g, s=s)["s"]
    assert grad.tolist() == [
        [0, 0, 0],
        [fmpq(1, 2) * (1 - 2), fmpq(1, 2) * (3 - 2), 0],
        [-third, -third, 2 * third],
    ]
    kept = tape.softmax(tape.input(EXACT.asarray([[0, 1, 5]])), np.array([True, True, False])).value
    assert isinstance(kept[0, 2], fmpq) and kept[0, 2] == 0  # the exact 0 beside SymPy exponentials
    np.testing.assert_allclose(EXACT.to_float(kept), [[1 / (1 + np.e), np.e / (1 + np.e), 0.0]], rtol=1e-15)


def test_a_mask_that_leaves_a_row_empty_or_is_malformed_is_refused_in_one_line():
    tape = Tape(FLOAT64)
    a = tape.input(np.zeros((2, 3)))
    cases = {
        r"^softmax: the mask leaves out every entry of row \(1,\)": np.array(
            [[True, False, False], [False, False, False]]
        ),
        "mask must be boolean": np.ones((2, 3)),
        r"mask of shape \(4,\) does not broadcast": np.ones(4, dtype=bool),
    }
    for message, mask in cases.items():
        with pytest.raises(ValueError, match=message) as refused:
            tape.softmax(a, mask)
        assert "\n" not in str(refused.value)


def test_gather_concat_and_permute_refuse_bad_arguments_in_one_line():
    tape = Tape(FLOAT64)
    a = tape.input(np.zeros((2, 3)))
    refusals = [
        (lambda: tape.gather(a, np.array([[3]]), 1), r"gather: indices must lie in \[-3, 3\)"),
        (lambda: tape.gather(a, np.array([0, 1]), 1), "gather: indices must be integers with 2 axes"),
        (lambda: tape.gather(a, np.array([[0.5]]), 1), "gather: indices must be integers"),
        (lambda: tape.gather(a, np.zeros((3, 1), dtype=int), 1), "do not broadcast"),
        (lambda: tape.concat([a, np.zeros((3, 3))], 1), "concat: shapes .* differ outside axis 1"),
        (lambda: tape.concat([], 0), "concat: no values"),
        (lambda: tape.permute(a, (0, 0)), r"permute: axes=\[0, 0\] is not a permutation of the 2 axes"),
        (lambda: tape.permute(a, (0, 1, 2)), "is not a permutation"),
    ]
    for call, message in refusals:
        with pytest.raises(ValueError, match=message) as refused:
            call()
        assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("op", "call"),
    [
        ("gelu", lambda tape, a: tape.gelu(a)),
        ("layer_norm", lambda tape, a: tape.layer_norm(a, fmpq(1, 100000))),
    ],
)
def test_the_exact_engine_refuses_gelu_and_layer_norm_naming_the_ball_engine(op, call):
    """erf at a rational and 1/√(var + ε) are irrational: the exact arithmetic (and any without erf) refuses them
    in one line naming the op and the ball engine, before any work."""
    for ar in (EXACT, _rationals()):
        tape = Tape(ar)
        a = tape.input(ar.asarray([[fmpq(1, 2), fmpq(-1, 3)]]))
        with pytest.raises(
            ValueError, match=rf"^{op}: .*the {ar.name} arithmetic cannot run it; use the ball engine"
        ):
            call(tape, a)
        assert tape._count == 1  # nothing recorded: refused before any work


def test_an_arithmetic_without_an_operation_refuses_the_primitive_in_one_line():
    """A float arithmetic lacking erf (torch's today) or masked_softmax: ValueError naming both, no AttributeError."""
    bare = SimpleNamespace(name="bare", asarray=FLOAT64.asarray, sqrt=FLOAT64.sqrt, exp=FLOAT64.exp)
    tape = Tape(bare)
    with pytest.raises(
        ValueError, match=r"^gelu: the bare arithmetic has no erf \(ExtendedArithmetic.erf\)$"
    ):
        tape.gelu(np.zeros(2))
    with pytest.raises(ValueError, match="^softmax with a mask: the bare arithmetic has no masked_softmax"):
        tape.softmax(np.zeros((1, 2)), np.array([True, False]))
    with pytest.raises(
        ValueError, match="^log_softmax: the exact arithmetic has no logarithm; use the ball engine "
    ):
        Tape(EXACT).log_softmax(EXACT.zeros((1, 2)))


def test_an_object_arithmetic_is_exact_unless_it_evaluates_erf():
    assert EXACT.exact and _rationals().exact and not FLOAT64.exact
    balls = ObjectArithmetic("arb", arb, exp=arb.exp, sign=lambda x: None, erf=arb.erf, pi=arb.pi)
    assert not balls.exact
    assert ObjectArithmetic("given", fmpq, exp=None, sign=lambda x: 0, exact=False).exact is False


def test_gelu_and_layer_norm_in_balls_enclose_torch():
    """In arb balls (erf and π given), GELU and layer norm with affine and their VJPs are balls that hold torch's
    float64 values of the same rational inputs, up to torch's own rounding (1e-14)."""
    from rwtoolkit.engines.balls import ball_arithmetic

    ar = ball_arithmetic()  # the ball engine's own arithmetic
    assert ar.exact is False
    rng = np.random.default_rng(3)
    # sixteenths: floats and balls hold the same exact inputs
    x, w, b, g = (rng.integers(-40, 40, shape) / 16 for shape in ((2, 4), (4,), (4,), (2, 4)))
    tape = Tape(ar)
    vx, vw, vb = (tape.input(ar.asarray(v)) for v in (x, w, b))  # arb(float): the exact dyadic
    X, W, B = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    G = torch.tensor(g)
    for out, ref, leaves in [
        (tape.gelu(vx), torch.nn.functional.gelu(X), {"x": (vx, X)}),
        (
            tape.layer_norm(vx, fmpq(1, 8), vw, vb),
            torch.nn.functional.layer_norm(X, (4,), W, B, 1 / 8),
            {"x": (vx, X), "w": (vw, W), "b": (vb, B)},
        ),
    ]:
        grads = tape.gradient(out, ar.asarray(g), {k: v for k, (v, _) in leaves.items()})
        expected = torch.autograd.grad(ref, [t for _, t in leaves.values()], G)
        pairs = [(out.value, ref.detach().numpy())] + [
            (grads[k], e.numpy()) for k, e in zip(leaves, expected, strict=True)
        ]
        for balls, floats in pairs:
            for ball, value in zip(np.ravel(balls), np.ravel(floats), strict=True):
                assert ball.rad() < 1e-12 and abs(float(ball.mid()) - value) <= float(ball.rad()) + 1e-14


def test_log_softmax_and_masked_softmax_are_stable_in_floats():
    """Scores far from 0 (±1000) and a left-out entry far above the kept ones: finite and equal to torch's
    (a softmax shifted by the largest entry of the whole row would give 0/0 on the kept ones)."""
    a = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -1001.0, 1000.0]])
    mask = np.array([True, True, False])
    tape = Tape(FLOAT64)
    got = tape.log_softmax(a).value
    np.testing.assert_allclose(got, torch.log_softmax(_t(a), -1).numpy(), rtol=RTOL, atol=RTOL)
    masked = tape.softmax(a, mask).value
    want = torch.softmax(_t(a).masked_fill(~_t(mask), float("-inf")), -1).numpy()
    assert np.isfinite(masked).all() and masked[:, 2].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(masked, want, rtol=RTOL, atol=RTOL)


@settings(max_examples=scaled(20), deadline=None)
@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3), st.integers(0, 2**16)
)
def test_product_and_quotient_vjps_equal_torch_on_any_broadcast(shapes, seed):
    a, b = shapes.input_shapes
    _check(lambda t, x, y: t.mul(x, y), lambda x, y: x * y, a, b, seed=seed)
    _check(lambda t, x, y: t.div(x, y), lambda x, y: x / y, a, b, seed=seed, positive=True)


@settings(max_examples=scaled(20), deadline=None)
@given(st.data())
def test_gather_and_permute_vjps_equal_torch_on_any_axes(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    picked = list(shape)
    picked[axis] = data.draw(st.integers(1, 4))
    indices = data.draw(hnp.arrays(np.int64, tuple(picked), elements=st.integers(0, shape[axis] - 1)))
    _check(lambda t, x: t.gather(x, indices, axis), lambda x: torch.gather(x, axis, _t(indices)), shape)
    axes = data.draw(st.permutations(range(len(shape))))
    _check(lambda t, x: t.permute(x, axes), lambda x: x.permute(*axes), shape)


def test_the_torch_engines_arithmetic_runs_every_architecture_primitive_as_autograd_does():
    """The torch engine's arithmetic (TorchArithmetic) runs GELU, layer norm, the masked softmax, log-softmax and
    concat on the tape, and the tape's VJPs equal torch autograd of the same functions (float64; the same
    operations in another order: within RTOL, the bound stated above)."""
    from rwtoolkit.engines.numeric import TorchArithmetic

    ar = TorchArithmetic(torch.float64, "cpu")
    assert ar.exact is False
    rng = np.random.default_rng(5)
    x, w, b, g = (rng.standard_normal(shape) for shape in ((2, 3, 4), (4,), (4,), (2, 3, 8)))
    mask = np.tril(np.ones((3, 4), dtype=bool), 1)
    tape = Tape(ar)
    vx, vw, vb = (tape.input(ar.asarray(v)) for v in (x, w, b))
    normed = tape.layer_norm(tape.gelu(vx), 1e-5, vw, vb)
    out = tape.concat([tape.softmax(normed, mask), tape.log_softmax(normed)], -1)
    grads = tape.gradient(out, ar.asarray(g), {"x": vx, "w": vw, "b": vb})
    X, W, B = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    F = torch.nn.functional
    n = F.layer_norm(F.gelu(X), (4,), W, B, 1e-5)
    ref = torch.cat(
        [torch.softmax(n.masked_fill(~torch.tensor(mask), float("-inf")), -1), F.log_softmax(n, -1)], -1
    )
    np.testing.assert_allclose(out.value.numpy(), ref.detach().numpy(), rtol=RTOL, atol=RTOL)
    expected = torch.autograd.grad(ref, [X, W, B], torch.tensor(g))
    for name, e in zip(("x", "w", "b"), expected, strict=True):
        np.testing.assert_allclose(grads[name].numpy(), e.numpy(), rtol=RTOL, atol=RTOL, err_msg=name)
