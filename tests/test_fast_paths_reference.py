"""The remaining hand-written steps of the paper's model equal its one definition (rwtoolkit.models.OneLayer).

The model of record (issue 23): the paper's model f = V X S(X̃ᵀ W x̃_N) is defined once, in ``rwtoolkit.models``, and
every engine's fast path is a specialisation of it, tested equal to that definition on the same inputs
(tests/test_fast_paths.py does the reduced torch model, the batched engine and the ball engine). Here the
three other places that compute its gradient-descent step:

  1. ``rwtoolkit.engines.numeric``'s ``GenericModel`` (the model of record with full V and W, explicit X̃, torch
     autograd, chunked backward): its
     read-outs S, f, the loss and its V(t), W(t) equal ``rwtoolkit.models.descend`` in float64 (numpy ``FLOAT64``)
     step by step, for a circle walk and a finite task, log and squared loss, from zero and from a Gaussian
     full-rank start; and the same through the public ``train(fast=False)``.
  2. ``rwtoolkit.analyses.stability``'s reduced GD map G(θ) = θ − η D ∇L(θ), θ = (V, w_tok, c), D = diag(1, μ, 1)
     (``torch_loss`` and ``Coordinates.metric``; ``linearise`` runs it from zero): equal to the full model's
     step read in reduced coordinates (``reduced_coordinates``, exact for W = w x̃_Nᵀ/μ, the form GD keeps),
     from zero init and from a perturbed state off the symmetric manifold; its exact loss ``symbolic_loss``
     gives the same map exactly on the rational steps.
  3. The certificates' independent exact step (``rwtoolkit.analyses.proofs._exact_gd.gd_step``, Lemma B.1 gradients in SymPy):
     equal to ``rwtoolkit.engines.exact.derive_model`` (``rwtoolkit.models.OneLayer`` run in the exact arithmetic), exactly where both
     are rational, else to float64 at ``RTOL``.

Positions are ``rational_positions(N, μ)`` (entries 0, ±1, PᵀP = μI exactly) for every engine, so every side
sees the same P. Float comparisons are relative to max(1, |expected|) at ``RTOL``.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch
from torch.func import grad

from rwtoolkit.analyses.proofs._exact_gd import gd_step
from rwtoolkit.analyses.stability import active_coordinates, linearise, symbolic_loss, torch_loss
from rwtoolkit.engines.exact import EXACT, derive_model, make_loss, nearest_double, to_sympy
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, init_generator, train
from rwtoolkit.engines.numeric._losses import SampleLoss
from rwtoolkit.engines.numeric._model import GenericModel
from rwtoolkit.models import FLOAT64, OneLayer, batch, descend, rational_positions, reduced_coordinates
from rwtoolkit.tasks import CircleWalk, first_of_two_task

# Measured max relative difference over the runs below: 4.2e-16 (GenericModel and train(fast=False) against
# numpy float64), 2.9e-16 (rwtoolkit.analyses.stability's torch reduced map and linearise), 0 (the non-rational exact values of
# both sides, each rounded to the nearest double); margin ~240 for a few hundred roundings.
RTOL = 1e-13
MU = 2
EPS = 0.1
ETA = 0.7
STEPS = 6
CIRCLE = CircleWalk(3, 4, "3/10")
FINITE = first_of_two_task(3, "1/3")


class _NumpyLoss:
    """ℓ, ℓ' on numpy arrays, as ``rwtoolkit.models.ElementLoss``: -log(z + ε) or (1 - z)²."""

    def __init__(self, name: str) -> None:
        self.name = name

    def value(self, z):
        return -np.log(z + EPS) if self.name == "log" else (1 - z) ** 2

    def derivative(self, z):
        return -1 / (z + EPS) if self.name == "log" else 2 * (z - 1)


def _population(task, mu=MU):
    """(population, P as floats, the FLOAT64 batch with float weights)."""
    pop = task.population()
    P = np.asarray(rational_positions(pop.N, mu), dtype=float)
    weights = [float(q) for q in pop.exact_probs()]
    return pop, P, batch(FLOAT64, pop.tokens, pop.labels, weights, pop.K, P)


def _close(got, expected, what):
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert np.isfinite(expected).all(), f"{what}: the full model's value is not finite"
    scale = max(1.0, float(np.abs(expected).max()))
    err = float(np.abs(got - expected).max())
    assert err <= RTOL * scale, f"{what}: {err:.3g} > {RTOL * scale:.3g}"


def _start(init, K, D, seed=0):
    if init == "zero":
        return np.zeros((K, K)), np.zeros((D, D))
    rng = np.random.default_rng(seed)
    return 0.3 * rng.standard_normal((K, K)), 0.3 * rng.standard_normal((D, D))  # W full rank


# --- 1. rwtoolkit.engines.numeric's GenericModel -------------------------------------------------------------------


@pytest.mark.parametrize("init", ["zero", "gaussian"])
@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("task", [CIRCLE, FINITE], ids=["circle", "first-of-two"])
def test_reference_model_equals_the_full_model(task, loss, init):
    """S, f, L at θ(t) and V(t), W(t) of the torch reference equal ``descend`` of OneLayer, t = 0..STEPS."""
    pop, P, data = _population(task)
    K, D = pop.K, pop.K + P.shape[0]
    V0, W0 = _start(init, K, D)
    states = descend(OneLayer(), FLOAT64, {"V": V0, "W": W0}, data, _NumpyLoss(loss), ETA, STEPS)

    def t64(a):
        return None if a is None else torch.as_tensor(a, dtype=torch.float64)

    ref = GenericModel(OneLayer(), t64(P), K, {"V": t64(V0), "W": t64(W0)})
    if task is CIRCLE:
        ref.chunk = 7  # 24 inputs in 4 chunks, the last partial: the backward accumulates across chunks
    tokens, labels = torch.as_tensor(pop.tokens), torch.as_tensor(pop.labels)
    weights = t64([float(q) for q in pop.exact_probs()])
    lossfn = SampleLoss(loss, EPS)
    for t, state in enumerate(states):
        f, S, _ = ref.evaluate(tokens)
        L = ref.loss_and_grad(tokens, labels, weights, lossfn, t)
        _close(ref.V.detach().numpy(), state.params["V"], f"V({t})")
        _close(ref.params["W"].detach().numpy(), state.params["W"], f"W({t})")
        _close(S.numpy(), state.S, f"S({t})")
        _close(f.numpy(), state.f, f"f({t})")
        _close(L, state.loss, f"L({t})")
        if t < STEPS:
            ref.step(ETA)


def test_reference_training_path_equals_the_full_model():
    """``train(fast=False)`` from its Gaussian start: loss, mean attention, V, W x̃_N per step and the final W."""
    pop, P, data = _population(CIRCLE)
    K, M = pop.K, P.shape[0]
    sigma, seed = 0.1, 5
    cfg = TrainConfig(
        steps=STEPS,
        eta=ETA,
        eps=EPS,
        init="gaussian",
        sigma=sigma,
        seed=seed,
        population=True,
        fast=False,
        record_params=True,
        threads=1,
    )
    result = train(CIRCLE, ModelConfig(K=K, N=pop.N, M=M, pos=P, mu=MU), cfg, progress=False)
    rng = init_generator(seed)  # the documented draw order: V, then W
    V0, W0 = rng.normal(0.0, sigma, (K, K)), rng.normal(0.0, sigma, (K + M, K + M))
    states = descend(OneLayer(), FLOAT64, {"V": V0, "W": W0}, data, _NumpyLoss("log"), ETA, STEPS)
    xN = data.inputs.xN
    for t, (record, state) in enumerate(zip(result.history, states, strict=True)):
        assert record["step"] == t
        _close(record["train_loss"], state.loss, f"L({t})")
        _close(record["attention_profile"], state.mean_attention(data.weights, FLOAT64), f"E[S]({t})")
        _close(result.params[t]["V"], state.params["V"], f"V({t})")
        _close(result.params[t]["w"], state.params["W"] @ xN, f"W x̃_N ({t})")
    _close(result.W(), states[-1].params["W"], f"W({STEPS})")


# --- 2. rwtoolkit.analyses.stability's reduced GD map -----------------------------------------------------------------


def _theta(coords, V, W, P, mu):
    """θ of a full state (V, W), in the order of ``coords``, as floats."""
    V, w_tok, c = reduced_coordinates(V, W, P, mu)
    return np.array(coords.theta_of(sp.Matrix(V), list(w_tok), list(c)), dtype=float)


@pytest.mark.parametrize(
    "task, eta", [(CIRCLE, 0.9), (CircleWalk(3, 4, 1), 1.0)], ids=["found-manifold", "lemma-d3"]
)
def test_stability_linearisation_trajectory_is_the_full_model(task, eta):
    """The base trajectory θ*(t) of ``linearise`` (reduced map from zero, projected on the manifold) is GD's.

    At p = 1 rwtoolkit.analyses.stability descends on the K deterministic walks, the full model on all K·2^(N-1) (the rest of
    weight 0): the same population loss.
    """
    lin = linearise(task, STEPS, eta=eta, mu=float(MU), eps=EPS)
    _, P, data = _population(task)
    states = descend(
        OneLayer(), FLOAT64, OneLayer().zeros(FLOAT64, data.inputs.sizes), data, _NumpyLoss("log"), eta, STEPS
    )
    assert len(lin.thetas) == len(states)
    for t, (theta, state) in enumerate(zip(lin.thetas, states, strict=True)):
        _close(theta, _theta(lin.coords, state.params["V"], state.params["W"], P, MU), f"θ({t})")


@pytest.mark.parametrize("task", [CIRCLE, FINITE], ids=["circle", "first-of-two"])
def test_stability_reduced_gd_map_equals_the_full_step_off_the_manifold(task):
    """G(θ) = θ − η D ∇L(θ) from a random θ (no symmetry) equals the full step of W = w x̃_Nᵀ/μ, and L(θ) = L."""
    pop, P, data = _population(task)
    K, N = pop.K, pop.N
    coords = active_coordinates(task)
    rng = np.random.default_rng(1)
    V = np.abs(0.5 * rng.standard_normal((K, K)))  # V ≥ 0: z > 0, inside the log-loss domain
    w_tok, c = 0.5 * rng.standard_normal(K), 0.5 * rng.standard_normal(N)
    xN = np.concatenate([np.zeros(K), P[:, -1]])
    W = np.outer(np.concatenate([w_tok, P @ c]), xN) / MU  # W x̃_N = w, logits w_tok[s_j] + μ c_j
    eta = 0.9
    states = descend(OneLayer(), FLOAT64, {"V": V, "W": W}, data, _NumpyLoss("log"), eta, 3)
    loss = torch_loss(task, float(MU), EPS, coords=coords)
    gradient, d = grad(loss), torch.as_tensor(coords.metric(float(MU)))
    theta = torch.as_tensor(np.array(coords.theta_of(sp.Matrix(V), list(w_tok), list(c)), dtype=float))
    for t, state in enumerate(states):
        _close(theta.numpy(), _theta(coords, state.params["V"], state.params["W"], P, MU), f"θ({t})")
        _close(float(loss(theta)), state.loss, f"L({t})")
        theta = theta - eta * d * gradient(theta)


@pytest.mark.parametrize("task", [CIRCLE, FINITE], ids=["circle", "first-of-two"])
def test_stability_symbolic_loss_map_equals_the_full_model_exactly(task):
    """G with ``symbolic_loss`` (the exact Jacobians' loss) from zero: θ(0..2) exactly (rational), θ(3) in float."""
    mu, eps, eta = sp.Integer(MU), sp.Rational(1, 10), sp.Rational(7, 10)
    coords = active_coordinates(task)
    L, symbols = symbolic_loss(task, mu, eps, coords)
    gradient = [sp.diff(L, x) for x in symbols]
    metric = [sp.Integer(1)] * coords.n_V + [mu] * len(coords.token_cols) + [sp.Integer(1)] * coords.N
    pop = task.population()
    P = EXACT.asarray(rational_positions(pop.N, MU))
    data = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), pop.K, P)
    lossfn = make_loss("log", eps)
    start = OneLayer().zeros(EXACT, data.inputs.sizes)
    eta_x, mu_x = EXACT.asarray([eta, mu])
    states = descend(OneLayer(), EXACT, start, data, lossfn.elementwise(), eta_x, 3)
    theta = [sp.Integer(0)] * coords.dim
    for t, state in enumerate(states):
        V, w_tok, c = (
            to_sympy(x) for x in reduced_coordinates(state.params["V"], state.params["W"], P, mu_x)
        )
        expected = [sp.sympify(x) for x in coords.theta_of(sp.Matrix(V), list(w_tok), list(c))]
        if t <= 2:  # S(0) = S(1) uniform: both sides rational
            assert all(x.is_Rational for x in expected + theta), f"θ({t}) is not rational"
            assert theta == expected, f"θ({t})"
        else:
            _close([nearest_double(x) for x in theta], [nearest_double(x) for x in expected], f"θ({t})")
        if t < 3:
            point = dict(zip(symbols, theta, strict=True))
            theta = [x - eta * m * g.xreplace(point) for x, m, g in zip(theta, metric, gradient, strict=True)]


# --- 3. the certificates' exact GD -------------------------------------------------------------------


@pytest.mark.parametrize(
    "task, loss, init, steps",
    [(CIRCLE, "log", "zero", 3), (FINITE, "squared", "zero", 3), (FINITE, "log", "gaussian", 1)],
    ids=["circle-log-zero", "first-of-two-squared-zero", "first-of-two-log-gaussian"],
)
def test_certificate_exact_gd_equals_derive_model(task, loss, init, steps):
    """``gd_step`` (Lemma B.1, SymPy) from derive_model's start: ∇V, ∇W, S, logits, z at θ(t) and V, W at θ(t+1)."""
    eta, eps = sp.Rational(7, 10), sp.Rational(1, 10)
    traj = derive_model(
        task, OneLayer(), steps, eta=eta, eps=eps, mu=MU, loss=loss, init=init, sigma="1/4", seed=0
    )
    pop = task.population()
    P = sp.Matrix(rational_positions(pop.N, MU).tolist())
    dloss = make_loss(loss, eps).derivative
    V, W = (sp.Matrix(to_sympy(traj.states[0].params[k]).tolist()) for k in ("V", "W"))
    compared = {"exact": 0, "float": 0}

    def same(ours, theirs, what):
        ours, theirs = list(ours), list(to_sympy(np.asarray(theirs)).flatten())
        assert len(ours) == len(theirs), what
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            a, b = sp.sympify(a), sp.sympify(b)
            if a.is_Rational and b.is_Rational:
                assert a == b, f"{what}[{i}]: {a} != {b}"
                compared["exact"] += 1
            else:
                _close(nearest_double(a), nearest_double(b), f"{what}[{i}]")
                compared["float"] += 1

    for t in range(steps):
        step = gd_step(pop, V, W, dloss, eta, eta, sp.sqrt(MU), P)
        now, after = traj.states[t], traj.states[t + 1]
        same(step.grad_V, now.gradient["V"], f"∇V({t})")
        same(step.grad_W, now.gradient["W"], f"∇W({t})")
        same([x for S in step.S for x in S], now.S, f"S({t})")
        same([x for s in step.logits for x in s], now.logits, f"logits({t})")
        same(step.z, now.z, f"z({t})")
        same(step.V, after.params["V"], f"V({t + 1})")
        same(step.W, after.params["W"], f"W({t + 1})")
        V, W = step.V, step.W
    assert compared["exact"] > 0
    if init == "gaussian" or steps > 2:
        assert compared["float"] > 0  # the non-rational steps were compared too
