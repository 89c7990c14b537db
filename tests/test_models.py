"""The models of record (rwtoolkit.models): the tape's gradients, the reduced engine as an exact specialisation of the
paper's full-parameter model, and the separate key-query model's zero initialisation.

Oracles, each independent of the code under test:
  * torch autograd of the same forward pass (float64; agreement to 1e-12 relative: a few hundred roundings);
  * Lemma B.1's gradient written out by hand below (float64, same tolerance);
  * the reduced exact engine of rwtoolkit.engines.exact (``group_pass``, ``derive``), compared *exactly*: at states whose
    scores are integers every exponential is a power of e, so both sides are rational functions of e, computed
    here in the field Q(e) (python-flint polynomials; e is transcendental, so equal there means equal);
  * the factorisation ∇_{W_K} L = W_Q Gᵀ, ∇_{W_Q} L = W_K G with G = ∂L/∂W of the merged model (chain rule).
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch
from flint import fmpq, fmpq_poly
from hypothesis import given, settings
from hypothesis import strategies as st

from rwtoolkit.engines.exact import EXACT, to_sympy
from rwtoolkit.engines.exact.engine._derive import derive, make_loss
from rwtoolkit.engines.exact.engine._groups import group_pass
from rwtoolkit.engines.exact.engine._population import population_inputs
from rwtoolkit.engines.numeric import TensorLoss, TorchArithmetic
from rwtoolkit.models import (
    FLOAT64,
    MODELS,
    Model,
    ObjectArithmetic,
    Sizes,
    Tape,
    batch,
    descend,
    evaluate,
    get_model,
    model_help,
    rational_positions,
    reduced_coordinates,
)
from rwtoolkit.tasks import CircleWalk, first_of_two_task, qa_task1

RTOL = 1e-12  # float64 gradients of ~100-term sums: measured agreement ~1e-15, margin 1000


class QE:
    """An element of the field Q(e): a ratio of polynomials in u = e with rational coefficients."""

    __slots__ = ("num", "den")

    def __init__(self, num: fmpq_poly, den: fmpq_poly | None = None) -> None:
        self.num, self.den = num, fmpq_poly([1]) if den is None else den

    @staticmethod
    def const(value: object) -> QE:
        q = Fraction(str(value)) if not isinstance(value, Fraction) else value
        return QE(fmpq_poly([fmpq(q.numerator, q.denominator)]))

    @staticmethod
    def exp(x: QE) -> QE:
        """e^k for an integer constant k (the only exponentials of the states below)."""
        assert x.den.degree() == 0 and x.num.degree() <= 0, "exponent is not a constant"
        k = x.num[0] / x.den[0]
        assert k.q == 1, f"exponent {k} is not an integer"
        power = fmpq_poly([0] * abs(int(k.p)) + [1])
        return QE(power) if k.p >= 0 else QE(fmpq_poly([1]), power)

    def _lift(self, other: object) -> QE:
        return other if isinstance(other, QE) else QE.const(other)

    def __add__(self, other: object) -> QE:
        o = self._lift(other)
        return QE(self.num * o.den + o.num * self.den, self.den * o.den)._reduced()

    __radd__ = __add__

    def __neg__(self) -> QE:
        return QE(-self.num, self.den)

    def __sub__(self, other: object) -> QE:
        return self + (-self._lift(other))

    def __rsub__(self, other: object) -> QE:
        return self._lift(other) - self

    def __mul__(self, other: object) -> QE:
        o = self._lift(other)
        return QE(self.num * o.num, self.den * o.den)._reduced()

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> QE:
        o = self._lift(other)
        return QE(self.num * o.den, self.den * o.num)._reduced()

    def __rtruediv__(self, other: object) -> QE:
        return self._lift(other) / self

    def _reduced(self) -> QE:
        g = self.num.gcd(self.den)
        return QE(self.num / g, self.den / g) if g.degree() > 0 else self

    def __eq__(self, other: object) -> bool:
        o = self._lift(other)
        return self.num * o.den == o.num * self.den

    __hash__ = None  # type: ignore[assignment]


QE_ARITH = ObjectArithmetic("Q(e)", QE.const, exp=QE.exp, sign=lambda x: None)


def to_qe(expr: sp.Expr) -> QE:
    """A SymPy value of the reduced engine (named atoms expanded) as an element of Q(e)."""
    from rwtoolkit.engines.exact.arithmetic._atoms import expand_atoms

    expr = expand_atoms(expr)

    def walk(node: sp.Basic) -> QE:
        if node.is_Rational:
            return QE.const(Fraction(int(node.p), int(node.q)))
        if isinstance(node, sp.exp):
            return QE.exp(walk(node.args[0]))
        if node is sp.E:
            return QE.exp(QE.const(1))
        if node.is_Add:
            out = QE.const(0)
            for a in node.args:
                out = out + walk(a)
            return out
        if node.is_Mul:
            out = QE.const(1)
            for a in node.args:
                out = out * walk(a)
            return out
        if node.is_Pow and node.exp.is_Integer:
            base, k = walk(node.base), int(node.exp)
            out = QE.const(1)
            for _ in range(abs(k)):
                out = out * base
            return out if k >= 0 else QE.const(1) / out
        raise AssertionError(f"not an element of Q(e): {node}")

    return walk(sp.sympify(expr))


def _qe_loss(name: str, eps: Fraction):
    class Loss:
        def value(self, z):  # only the derivative enters a gradient
            return QE_ARITH.apply(lambda v: QE.const(0), z)

        def derivative(self, z):
            if name == "log":
                return QE_ARITH.apply(lambda v: QE.const(-1) / (v + QE.const(eps)), z)
            return QE_ARITH.apply(lambda v: (v - QE.const(1)) * QE.const(2), z)  # squared: 2(z-1)

    return Loss()


# --- the registry -------------------------------------------------------------------------------------


def test_registry_names_models_and_refuses_in_one_line():
    assert list(MODELS) == [
        "one_layer",
        "key_query",
        "multi_head",
        "linear_attention",
        "learned_positions",
        "two_layer",
        "tied_embedding",
        "untied_embedding",
        "normalized_attention",
        "relu_head",
    ]
    assert "key_query" in model_help() and "one_layer" in model_help()
    with pytest.raises(
        ValueError,
        match=r"--model='two_heads' is not a registered model: use one of one_layer, key_query, multi_head, "
        r"linear_attention, learned_positions, two_layer, tied_embedding, untied_embedding, normalized_attention, relu_head",
    ):
        get_model("two_heads")
    with pytest.raises(ValueError, match="model 'one_layer' has no hyperparameter 'd'"):
        get_model("one_layer", d=2)
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        get_model("key_query", d=0)


def test_parameter_count_is_the_length_of_the_flat_parameter_vector():
    sizes = Sizes(K=3, M=5, N=4)
    # the paper's model counted by hand: V (K×K) and W ((K+M)×(K+M))
    assert get_model("one_layer").parameter_count(sizes) == 3 * 3 + 8 * 8
    # ΔP of learned_positions is M×N: both sizes come from the one object
    assert get_model("learned_positions").parameter_count(sizes) == 3 * 3 + 8 * 8 + 5 * 4
    for name in MODELS:
        model = get_model(name)
        zeros = model.zeros(FLOAT64, sizes)
        assert list(zeros) == list(model.shapes(sizes)), name
        assert model.parameter_count(sizes) == sum(v.size for v in zeros.values()), name


def test_what_only_rw_check_needs_lives_with_rw_check():
    from rwtoolkit.analyses.check import MODEL_CHECK_SETTINGS, check_settings

    for name in MODELS:
        cls = MODELS[name]
        assert not any(hasattr(cls, hint) for hint in ("CHECK_INIT", "CHECK_TASK")), name
    assert set(MODEL_CHECK_SETTINGS) <= set(MODELS)
    assert check_settings("linear_attention").init == "gaussian"  # zero is stationary for it
    assert check_settings("tied_embedding").task == "finite"
    assert tuple(check_settings("one_layer")) == ("zero", "circle")  # the default


def test_every_registered_class_has_its_registry_key_as_name():
    for name, cls in MODELS.items():
        assert cls.name == name and issubclass(cls, Model)


def test_every_model_names_the_axes_of_every_parameter():
    roles = {"label": 3, "token": 3, "embed": 7, "position": 4}
    sizes = Sizes(K=3, M=4, N=4)  # at P = √μ·I_N, M = N
    for name in MODELS:
        model = get_model(name)
        shapes = model.shapes(sizes)
        assert set(shapes) <= set(model.AXES), name
        # every named axis belongs to a parameter of some configuration (multi_head: merged or separate)
        variants = [shapes, get_model(name, d=1).shapes(sizes)] if "d" in model.HYPERPARAMETERS else [shapes]
        assert set(model.AXES) == set().union(*variants), name
        for param, shape in {k: v for variant in variants for k, v in variant.items()}.items():
            axes = model.AXES[param]
            assert len(axes) == len(shape), (name, param)
            assert all(roles.get(r, size) == size for r, size in zip(axes, shape, strict=True)), (
                name,
                param,
            )


def test_the_help_lists_models_without_importing_numpy():
    code = (
        "import sys, rwtoolkit.models; rwtoolkit.models.model_help(); rwtoolkit.models.model_names(); "
        "assert 'numpy' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rw'))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0
    assert get_model("one_layer", d=None).describe() == {"name": "one_layer"}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.fractions(min_value=Fraction(1, 50), max_value=600, max_denominator=60))
def test_rational_positions_are_orthogonal_with_equal_norm(N, mu):
    P = rational_positions(N, mu)
    assert P.shape == (4 * -(-N // 4), N)
    assert (P.T @ P == np.eye(N, dtype=int) * mu).all()


def test_square_root_is_exact_where_the_arithmetic_is_and_agrees_across_arithmetics():
    from rwtoolkit.engines.balls import ball_arithmetic

    roots = EXACT.sqrt(EXACT.asarray([Fraction(9, 16), 2, 0]))
    assert roots[0] == fmpq(3, 4) and isinstance(roots[0], fmpq)  # a rational square stays a rational
    assert sp.sympify(roots[1]) ** 2 == 2 and roots[2] == 0  # else SymPy's exact root
    balls = ball_arithmetic().sqrt(ball_arithmetic().asarray([2]))
    torch_root = TorchArithmetic(torch.float64).sqrt(torch.tensor([2.0], dtype=torch.float64))
    assert balls[0].contains(float(torch_root[0])) and FLOAT64.sqrt(np.array([2.0]))[0] == float(
        torch_root[0]
    )
    with pytest.raises(ValueError, match="no square root"):
        ObjectArithmetic("fractions", Fraction, exp=None, sign=lambda x: None).sqrt(
            np.array([1], dtype=object)
        )


# --- the tape: gradients from the one forward pass ------------------------------------------------------


def _float_batch(arith, task, P):
    pop = task.population()
    return batch(
        arith, pop.tokens, pop.labels, [float(w) for w in pop.exact_probs()], task.K, arith.asarray(P)
    )


@pytest.mark.parametrize(
    "name",
    [
        "one_layer",
        "key_query",
        "multi_head",
        "tied_embedding",
        "untied_embedding",
        "normalized_attention",
        "relu_head",
    ],
)
def test_tape_gradient_equals_torch_autograd_of_the_same_forward(name):
    task = CircleWalk(4, 5, "3/10")
    model = get_model(name)
    P = np.asarray(rational_positions(task.N, 3), dtype=float)
    ar = TorchArithmetic(torch.float64)
    b = _float_batch(ar, task, P)
    rng = np.random.default_rng(1)
    params = {k: ar.asarray(0.3 * rng.standard_normal(s)) for k, s in model.shapes(b.inputs.sizes).items()}
    ev = evaluate(model, ar, params, b, TensorLoss("log", 0.1))
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    out = model.forward(Tape(ar), leaves, b.inputs)  # plain tensors through the same forward
    z = out.f.value[torch.arange(b.size), torch.as_tensor(b.labels)]
    (b.weights * -torch.log(z + 0.1)).sum().backward()
    for k in params:
        torch.testing.assert_close(
            ev.gradient[k], leaves[k].grad, rtol=RTOL, atol=RTOL * float(leaves[k].grad.abs().max())
        )


def test_tape_gradient_is_lemma_b1():
    """∇_V ℓ = g e_y (XS)ᵀ and ∇_W ℓ = g X̃ (diag S − SSᵀ) Xᵀ Vᵀ e_y x̃_Nᵀ, summed with the weights (by hand)."""
    task = qa_task1()
    pop = task.population()
    K, N = pop.K, pop.N
    P = np.asarray(rational_positions(N, 2), dtype=float)
    b = batch(FLOAT64, pop.tokens, pop.labels, [float(w) for w in pop.exact_probs()], K, P)
    rng = np.random.default_rng(2)
    D = K + P.shape[0]
    V, W = rng.standard_normal((K, K)), 0.5 * rng.standard_normal((D, D))
    eps = 0.5
    gV, gW = np.zeros((K, K)), np.zeros((D, D))
    for n in range(b.size):
        X, Xt, xN, y = b.inputs.X[n], b.inputs.Xt[n], b.inputs.xN, b.labels[n]
        s = Xt.T @ W @ xN
        S = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        f = V @ X @ S
        g = b.weights[n] * -1 / (f[y] + eps)
        e = np.eye(K)[y]
        gV += g * np.outer(e, X @ S)
        gW += g * np.outer(Xt @ (np.diag(S) - np.outer(S, S)) @ X.T @ V.T @ e, xN)

    class Log:
        def value(self, z):
            return -np.log(z + eps)

        def derivative(self, z):
            return -1 / (z + eps)

    ev = evaluate(get_model("one_layer"), FLOAT64, {"V": V, "W": W}, b, Log())
    np.testing.assert_allclose(ev.gradient["V"], gV, rtol=RTOL, atol=RTOL * abs(gV).max())
    np.testing.assert_allclose(ev.gradient["W"], gW, rtol=RTOL, atol=RTOL * abs(gW).max())


# --- the reduced engine is the paper's model, exactly ----------------------------------------------------


@pytest.mark.parametrize(
    "task, loss, seed",
    [
        (CircleWalk(3, 4, "3/10"), "log", 0),
        (CircleWalk(4, 4, "1/2"), "squared", 1),
        (first_of_two_task(3, "1/3"), "log", 2),
    ],
    ids=["circle-log", "circle-squared", "first-of-two-log"],
)
def test_reduced_gradient_equals_full_model_gradient_exactly(task, loss, seed):
    """At a state with integer scores, the reduced engine's (∇V, ∇w_tok, ∇c) equal the full W gradient, in Q(e)."""
    pop = task.population()
    K, N, mu = pop.K, pop.N, 2
    rng = np.random.default_rng(seed)
    V = rng.integers(0, 3, (K, K))
    w_tok = rng.integers(-1, 2, K)
    c = [Fraction(int(x), mu) for x in rng.integers(-2, 3, N)]  # μ c_j integer: every score an integer
    P = rational_positions(N, mu)
    w = np.concatenate([w_tok.astype(object), P @ np.array(c, dtype=object)])
    xN = np.concatenate([np.zeros(K, dtype=object), P[:, -1]])
    W = np.outer(w, xN) / mu  # W = w x̃_Nᵀ / μ, the state of GD from zero init
    eps = Fraction(1, 10)
    b = batch(QE_ARITH, pop.tokens, pop.labels, pop.exact_probs(), K, QE_ARITH.asarray(P))
    ev = evaluate(
        get_model("one_layer"),
        QE_ARITH,
        {"V": QE_ARITH.asarray(V), "W": QE_ARITH.asarray(W)},
        b,
        _qe_loss(loss, eps),
    )
    u = ev.gradient["W"] @ QE_ARITH.asarray(xN) / QE.const(mu)
    generic = (
        list(ev.gradient["V"].flatten()) + list(u[:K]) + list(QE_ARITH.asarray(P).T @ u[K:] / QE.const(mu))
    )
    fast = group_pass(
        population_inputs(pop),
        sp.Matrix(V.tolist()),
        [sp.Integer(int(x)) for x in w_tok],
        [sp.Rational(x.numerator, x.denominator) for x in c],
        sp.Integer(mu),
        make_loss(loss, sp.Rational(1, 10)),
        True,
    )
    expected = list(fast.grad_V) + list(fast.grad_tok) + list(fast.grad_c)
    assert len(generic) == len(expected) == K * K + K + N
    for i, (a, e) in enumerate(zip(generic, expected, strict=True)):
        assert a == to_qe(e), f"coordinate {i}"


def test_reduced_trajectory_equals_full_model_on_its_rational_steps():
    """derive's V, w_tok, c at t = 0, 1, 2 (rational: S(0) = S(1) uniform) are the full model's, exactly."""
    task = CircleWalk(3, 4, "3/10")
    pop = task.population()
    P = EXACT.asarray(rational_positions(task.N, 2))
    b = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), task.K, P)
    model = get_model("one_layer")
    lossfn = make_loss("log", sp.Rational(1, 10))
    states = descend(
        model,
        EXACT,
        model.zeros(EXACT, b.inputs.sizes),
        b,
        lossfn.elementwise(),
        sp.Integer(1),
        2,
    )
    reference = derive(task, 2, mu=2)
    for t, state in enumerate(states):
        V, w_tok, c = reduced_coordinates(state.params["V"], state.params["W"], P, sp.Integer(2))
        ref = reference.states[t]
        V, w_tok, c = (to_sympy(x) for x in (V, w_tok, c))
        assert list(V.flatten()) == list(ref.V) and list(w_tok) == list(ref.w_tok) and list(c) == list(ref.c)
        assert all(x.is_Rational for x in V.flatten())
    assert not any(x != 0 for x in states[1].params["W"].flatten())  # Lemma C.1: W(1) = 0


# --- separate key and query -----------------------------------------------------------------------------


def test_key_query_zero_init_is_stationary_attention_uniform_every_step():
    task = CircleWalk(4, 5, "3/10")
    pop = task.population()
    P = EXACT.asarray(rational_positions(task.N, 1))
    b = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), task.K, P)
    model = get_model("key_query", d=2)
    lossfn = make_loss("log", sp.Rational(1, 10))
    states = descend(
        model,
        EXACT,
        model.zeros(EXACT, b.inputs.sizes),
        b,
        lossfn.elementwise(),
        sp.Integer(1),
        4,
    )
    for state in states:
        assert not any(x != 0 for x in state.params["W_K"].flatten())
        assert not any(x != 0 for x in state.params["W_Q"].flatten())
        assert all(s == sp.Rational(1, task.N) for s in to_sympy(state.S).flatten())
    # V(1) is the merged model's (Lemma C.1: S(0) uniform for both), and V keeps moving.
    merged = derive(task, 1, mu=1).states[1].V
    assert list(to_sympy(states[1].params["V"]).flatten()) == list(merged)
    assert list(states[4].params["V"].flatten()) != list(states[3].params["V"].flatten())


def test_key_query_gradients_factor_through_the_merged_gradient():
    """∇_{W_K} L = W_Q Gᵀ and ∇_{W_Q} L = W_K G, G = ∂L/∂W of the merged model at W = W_Kᵀ W_Q."""
    task = CircleWalk(3, 5, "7/10")
    P = np.asarray(rational_positions(task.N, 2), dtype=float)
    b = _float_batch(FLOAT64, task, P)
    D = task.K + P.shape[0]
    rng = np.random.default_rng(3)
    V, WK, WQ = (
        rng.standard_normal((3, 3)),
        0.4 * rng.standard_normal((2, D)),
        0.4 * rng.standard_normal((2, D)),
    )

    class Sq:
        def value(self, z):
            return (1 - z) ** 2

        def derivative(self, z):
            return 2 * (z - 1)

    kq = evaluate(get_model("key_query", d=2), FLOAT64, {"V": V, "W_K": WK, "W_Q": WQ}, b, Sq())
    merged = evaluate(get_model("one_layer"), FLOAT64, {"V": V, "W": WK.T @ WQ}, b, Sq())
    G = merged.gradient["W"]
    np.testing.assert_allclose(kq.gradient["W_K"], WQ @ G.T, rtol=RTOL, atol=RTOL * abs(G).max())
    np.testing.assert_allclose(kq.gradient["W_Q"], WK @ G, rtol=RTOL, atol=RTOL * abs(G).max())
    np.testing.assert_allclose(kq.gradient["V"], merged.gradient["V"], rtol=RTOL)
