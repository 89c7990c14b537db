"""The per-step metrics against hand calculations and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_rel, transition_by_hand

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, predict, train
from rwtoolkit.engines.numeric._metrics import (
    EvalSet,
    circulant_projection,
    circulant_residual,
    circulant_residuals,
    kl_divergence,
    ones_residual,
    ones_residuals,
)
from rwtoolkit.tasks import CircleWalk, FiniteTask


def test_tie_rule_picks_the_smallest_label_among_near_maxima():
    f = torch.tensor(
        [[2.0, 2.0 + 1e-10, 1.0], [0.0, 0.0, 0.0], [-1.0, -3.0, -1.0], [1.0, 1.0 + 1e-8, 0.0]],
        dtype=torch.float64,
    )
    assert predict(f, 1e-9).tolist() == [0, 0, 0, 1]  # 1e-8 relative is no tie at rtol 1e-9
    assert predict(f, 1e-7).tolist() == [0, 0, 0, 0]
    assert predict(f, 0.0).tolist() == [1, 0, 0, 1]


def test_the_tie_tolerance_scales_with_each_rows_own_largest_magnitude():
    """max_k |f_k| of the row itself: a row of magnitude 100 next to it does not widen the tie of a row of magnitude 1."""
    f = torch.tensor([[1.0, 1.0 + 1e-8, 0.0], [-100.0, 5.0, 5.0]], dtype=torch.float64)
    assert predict(f, 1e-9).tolist() == [1, 1]  # 1e-8 > 1e-9 x 1: no tie in row 0; an exact tie in row 1
    assert predict(f[:1], 1e-9).tolist() == [1]


def test_a_single_class_is_always_predicted():
    f = torch.tensor([[1.0], [-2.0], [0.0]], dtype=torch.float64)
    assert predict(f, 1e-9).tolist() == [0, 0, 0]


def test_kl_normalisations_match_hand_values():
    f = torch.tensor([[1.0, 0.0, -1.0]], dtype=torch.float64)
    law = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
    ev = EvalSet(
        torch.zeros(1, 1, dtype=torch.int64),
        torch.zeros(1, dtype=torch.int64),
        torch.ones(1, dtype=torch.float64),
        law,
    )
    z = math.e + 1 + math.exp(-1)
    soft = 0.5 * math.log(0.5 / (math.e / z)) + 0.5 * math.log(0.5 / (1 / z))
    assert kl_divergence(f, ev, "softmax", 0.1) == pytest.approx(soft, rel=1e-14)
    q = np.array([2.1, 1.1, 0.1]) / 3.3  # f - min f + ε, normalised
    shift = 0.5 * math.log(0.5 / q[0]) + 0.5 * math.log(0.5 / q[1])
    assert kl_divergence(f, ev, "shift", 0.1) == pytest.approx(shift, rel=1e-14)


def test_structure_residuals_match_hand_values():
    V = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert ones_residual(V) == pytest.approx(math.sqrt(4 * 0.25) / math.sqrt(10), rel=1e-15)
    circ = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert circulant_residual(circ) == 0.0
    nonc = np.diag([3.0, 0.0, 0.0])  # its circulant projection is I: residual diag(2, -1, -1)
    assert circulant_residual(nonc) == pytest.approx(math.sqrt(6) / 3, rel=1e-15)
    assert ones_residual(np.zeros((3, 3))) == 0.0 and circulant_residual(np.zeros((3, 3))) == 0.0


def test_structure_residuals_of_matrices_with_norm_below_one_are_relative():
    """The same hand values at norm below 1: ‖V‖_F = √10/10 and 3/10, the ratios unchanged by the scale."""
    assert ones_residual(np.array([[0.1, 0.2], [0.2, 0.1]])) == pytest.approx(1 / math.sqrt(10), rel=1e-14)
    assert circulant_residual(np.diag([0.3, 0.0, 0.0])) == pytest.approx(math.sqrt(6) / 3, rel=1e-14)


@pytest.mark.parametrize("scale", [2.0**-600, 2.0**600, 2.0**-1060])
def test_structure_residuals_far_from_one_are_the_hand_values(scale):
    """The hand values of diag(3, 0, 0) and [[1, 2], [2, 1]] at entries where ‖V‖_F² underflows (about
    1e-181: it gave 0; 2^-1060 is subnormal, and scaling it up must not overflow to inf) or overflows
    (about 1e180: it gave NaN) in float64; scaling by a power of two is exact, so the ratio is the
    unscaled one to the same 1e-15."""
    assert circulant_residual(np.diag([3.0, 0.0, 0.0]) * scale) == pytest.approx(math.sqrt(6) / 3, rel=1e-15)
    two = np.array([[1.0, 2.0], [2.0, 1.0]]) * scale
    assert ones_residual(two) == pytest.approx(1 / math.sqrt(10), rel=1e-15)
    W = torch.zeros(3, 3, 2, dtype=torch.float64)
    W[0, 0, 0] = 3.0 * scale
    assert circulant_residuals(W).tolist() == [pytest.approx(math.sqrt(6) / 3, rel=1e-15), 0.0]


def test_each_matrix_of_a_batch_is_scaled_by_its_own_magnitude():
    """diag(3, 0, 0) at 2^600 beside diag(3, 0, 0) at 1: one scale for the batch would bring the second
    to about 1e-181, where ‖V‖_F² underflows; each gets the hand value √6/3."""
    W = torch.zeros(3, 3, 2, dtype=torch.float64)
    W[0, 0, 0], W[0, 0, 1] = 3.0 * 2.0**600, 3.0
    assert circulant_residuals(W).tolist() == [pytest.approx(math.sqrt(6) / 3, rel=1e-15)] * 2


EPS = float(np.finfo(np.float64).eps)


def test_batched_residuals_are_the_residuals_of_each_matrix():
    """A trailing batch dimension: each (K, K) slice gets the single-matrix value, to 4 float64 epsilons
    relative (the same sums in another order: a 16-term sum moves by a few epsilons at most)."""
    gen = torch.Generator().manual_seed(0)
    V = torch.randn(4, 4, 5, dtype=torch.float64, generator=gen)
    V[:, :, 2] = 0.0
    for b in range(5):
        single = V[:, :, b].numpy()
        assert_rel(circulant_projection(V)[:, :, b], circulant_projection(V[:, :, b]), 4 * EPS)
        assert float(ones_residuals(V)[b]) == pytest.approx(ones_residual(single), rel=4 * EPS, abs=0)
        assert float(circulant_residuals(V)[b]) == pytest.approx(
            circulant_residual(single), rel=4 * EPS, abs=0
        )
    # by hand: diag(3, 0, 0) and its circulant projection I (residual sqrt(6)/3), side by side with 0
    W = torch.zeros(3, 3, 2, dtype=torch.float64)
    W[0, 0, 0] = 3.0
    assert circulant_residuals(W).tolist() == [pytest.approx(math.sqrt(6) / 3, rel=1e-15), 0.0]


@pytest.mark.parametrize("K,N,p", [(3, 5, 0.5), (4, 6, 0.8), (5, 4, 0.3)])
def test_first_two_history_records_match_closed_forms(K, N, p):
    """Step 0 (uniform S, f = 0) and step 1 (V(1) of Lemma C.1, S still uniform) from numpy oracles."""
    eta, eps = 1.0, 0.1
    result = train(
        CircleWalk(K, N, p),
        ModelConfig(K=K, N=N, M=N + 2),
        TrainConfig(steps=1, eta=eta, eps=eps, population=True),
        progress=False,
    )
    h0, h1 = result.history
    Pi = transition_by_hand(K, p)
    entropy = -sum(x * math.log(x) for x in (p, 1 - p) if x > 0)
    assert h0["kl"] == pytest.approx(math.log(K) - entropy, abs=1e-14)  # KL(Π row ‖ uniform)
    assert h0["test_accuracy"] == 1 / K  # all scores tie at 0, label 0 wins
    assert h0["train_loss"] == pytest.approx(-math.log(eps), abs=1e-15)
    assert h0["f_direction_error"] is None and h0["v_direction_error"] is None
    assert h0["attention_spread"] == 0.0 and h0["parent_attention"] == pytest.approx(1 / N, abs=1e-16)
    # step 1: V(1) from matrix powers; S(1) is uniform because W(1) = 0, so f = V(1) x̄ (N-1)/N
    V1 = eta / (eps * N * K) * sum(np.linalg.matrix_power(Pi.T, N - i) for i in range(1, N))
    Pi_T_unit = Pi.T / np.linalg.norm(Pi)
    assert h1["v_direction_error"] == pytest.approx(
        np.linalg.norm(V1 / np.linalg.norm(V1) - Pi_T_unit), abs=1e-13
    )
    pop = CircleWalk(K, N, p).population()
    probs = pop.float_probs()
    xbar = pop.one_hot().sum(axis=2) / N  # (n, K) = X·(1/N)
    f = xbar @ V1.T
    target = Pi[pop.tokens[:, -1]]
    err = np.linalg.norm(
        f / np.linalg.norm(f, axis=1, keepdims=True) - target / np.linalg.norm(target, axis=1, keepdims=True),
        axis=1,
    )
    assert h1["f_direction_error"] == pytest.approx(float(probs @ err), abs=1e-13)
    z = f[np.arange(pop.size), pop.labels]
    assert h1["train_loss"] == pytest.approx(float(probs @ -np.log(z + eps)), abs=1e-13)
    pred = np.argmax(np.round(f, 12), axis=1)  # argmax takes the first maximum: the tie rule
    assert h1["test_accuracy"] == pytest.approx(float(probs @ (pred == pop.labels)), abs=1e-15)
    assert h1["circulant_residual"] <= 1e-15  # Lemma C.2: V(1) is circulant


def test_finite_task_kl_uses_the_exact_conditional_law():
    """Two inputs share a token sequence with labels 0/1 at 1/4 and 1/2: P(y | X) = (1/3, 2/3, 0)."""
    task = FiniteTask([[0, 1], [0, 1], [2, 2]], [0, 1, 2], ["1/4", "1/2", "1/4"], K=3)
    result = train(task, ModelConfig(K=3, N=3, M=4), TrainConfig(steps=0, population=True), progress=False)
    law = np.array([1 / 3, 2 / 3])
    kl_mixed = float(np.sum(law * np.log(law * 3)))  # against the uniform softmax of f = 0
    expected = 0.75 * kl_mixed + 0.25 * math.log(3)  # the [2, 2] input has law (0, 0, 1)
    assert result.history[0]["kl"] == pytest.approx(expected, abs=1e-15)
    assert result.history[0]["circulant_residual"] is None and result.history[0]["v_direction_error"] is None


def test_float32_runs_and_records_its_tie_tolerance():
    result = train(
        CircleWalk(3, 4, "1/2"),
        ModelConfig(K=3, N=4, M=6),
        TrainConfig(steps=3, population=True, dtype="float32"),
        progress=False,
    )
    ref = train(
        CircleWalk(3, 4, "1/2"),
        ModelConfig(K=3, N=4, M=6),
        TrainConfig(steps=3, population=True),
        progress=False,
    )
    assert result.config["train"]["tie_rtol"] == 1e-5
    # float32 rounding (6e-8 relative per operation) over 3 steps of O(1) values: measured 8.8e-8
    # (max |V| = 1.18); 1e-6 is an ~11x margin, while a float32 path that lost a step would be off by O(0.1)
    assert_close(result.final["V"], ref.final["V"], 1e-6, "float32 vs float64 V")


def test_relu_variant_reports_only_the_metrics_that_apply():
    result = train(
        CircleWalk(3, 4, "1/2"),
        ModelConfig(K=3, N=4, M=6, relu_width=5),
        TrainConfig(steps=2, population=True, init="gaussian", sigma=0.1),
        progress=False,
    )
    last = result.history[-1]
    assert (
        last["v_direction_error"] is None
        and last["circulant_residual"] is None
        and last["ones_residual"] is None
    )
    assert np.array(result.final["V"]).shape == (5, 3) and np.array(result.final["A"]).shape == (3, 5)
