"""First GD step from zero init (Lemma C.1) and the zero-column structure of W (docs/theory.md#reduction, #statements)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, transition_by_hand

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk


@pytest.mark.parametrize(
    "K,N,p,eta,eps",
    [
        (3, 4, 0.5, 1.0, 0.1),
        (4, 6, 0.3, 0.5, 0.2),
        (5, 7, 0.8, 2.0, 0.1),
        (6, 5, 1.0, 1.0, 0.05),
        (3, 9, 0.0, 1.0, 0.1),
    ],
    ids=["K3N4p.5", "K4N6p.3", "K5N7p.8", "K6N5p1", "K3N9p0"],
)
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "reference"])
def test_first_value_step_matches_closed_form(K, N, p, eta, eps, fast):
    """V(1) = (η/(εNK)) Σ_{i=1}^{N-1} (Πᵀ)^{N-i} in population mode (log-loss), from numpy matrix powers."""
    Pi_T = transition_by_hand(K, p).T
    expected = eta / (eps * N * K) * sum(np.linalg.matrix_power(Pi_T, N - i) for i in range(1, N))
    model = ModelConfig(K=K, N=N, M=N + 3)
    cfg = TrainConfig(steps=1, eta=eta, eps=eps, population=True, fast=fast)
    result = train(CircleWalk(K, N, p), model, cfg, progress=False)
    # Entries are O(η/(εN)) ≤ 10; float64 sums of ≤ 2^8 population terms are accurate to ~1e-14 here.
    assert_close(result.final["V"], expected, 1e-13, "V(1)")
    # Lemma C.1: W(1) = 0 and S(0) uniform.
    assert np.all(result.W() == 0)
    assert_close(result.history[0]["attention_profile"], np.full(N, 1 / N), 1e-15, "S(0)")


@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
@pytest.mark.parametrize("p", [0.5, 0.7, 1.0])
def test_first_K_columns_of_W_stay_zero_from_zero_init(p, normalize):
    """W11 = W21 = 0 for all t (every W-gradient is (vector)·x̃_Nᵀ and x̃_N has a zero token block)."""
    K, N, M = 3, 5, 7
    task = CircleWalk(K, N, p)
    for steps in (1, 2, 4):
        cfg = TrainConfig(steps=steps, eta=0.5, population=True, fast=False)
        W = train(task, ModelConfig(K=K, N=N, M=M, normalize_attention=normalize), cfg, progress=False).W()
        assert W.shape == (K + M, K + M)
        assert np.all(W[:, :K] == 0), f"first K columns of W({steps}) are not zero"
        if steps >= 2 and p != 1.0:
            assert np.abs(W[:, K:]).max() > 0  # W moves from step 2 on, so the check is not vacuous


def test_first_value_step_scales_with_the_loss_derivative_at_zero():
    """Lemma C.1 for any loss: V(1) = -η ℓ'(0)·E[e_y (X/N)ᵀ], so V(1) scales with ℓ'(0)."""
    task, model = CircleWalk(4, 5, 0.6), ModelConfig(K=4, N=5, M=8)
    v_log = np.array(
        train(task, model, TrainConfig(steps=1, population=True, eps=0.1), progress=False).final["V"]
    )
    v_sq = np.array(
        train(task, model, TrainConfig(steps=1, population=True, loss="squared"), progress=False).final["V"]
    )
    v_exp = np.array(
        train(task, model, TrainConfig(steps=1, population=True, loss="exp"), progress=False).final["V"]
    )
    # ℓ'(0): log -1/ε = -10, squared -2, exp -1.
    assert_close(v_sq, v_log * 2 / 10, 1e-15, "squared vs log")
    assert_close(v_exp, v_log * 1 / 10, 1e-15, "exp vs log")


def test_learning_rate_schedule_uses_eta_of_the_step_index():
    """Update t uses η(t): V(1) of a schedule with η(0) = 1/4 is a quarter of V(1) at η = 1 (Lemma C.1 is linear in η)."""
    task, model = CircleWalk(4, 5, 0.6), ModelConfig(K=4, N=5, M=8)
    base = train(task, model, TrainConfig(steps=1, population=True, eta=1.0), progress=False)
    schedule = train(
        task,
        model,
        TrainConfig(steps=2, population=True, eta=lambda t: 0.25 if t == 0 else 1.0, snapshots=[1]),
        progress=False,
    )
    assert_close(schedule.snapshots[1]["V"], np.array(base.final["V"]) / 4, 1e-15, "V(1) with η(0) = 1/4")
    constant = train(task, model, TrainConfig(steps=2, population=True, eta=0.25), progress=False)
    assert (
        np.abs(np.array(schedule.final["V"]) - np.array(constant.final["V"])).max() > 1e-3
    )  # η(1) = 1 was used
    assert schedule.config["train"]["eta"] == "callable:<lambda>"
