"""Training dynamics the paper proves: embedding invariance (§3), Theorem 4.1 (p ∈ {0,1}), Theorem 3.1 (p = 1/2)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from conftest import assert_close

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk

TRAJECTORY_KEYS = ("train_loss", "test_accuracy", "parent_attention", "attention_profile", "kl")


def _trajectory(result):
    return [[h[k] for k in TRAJECTORY_KEYS] for h in result.history], result.final["V"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-computed-gram", "reference"])
@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_trajectory_is_the_same_for_sine_onehot_and_random_embeddings_with_equal_mu(fast, normalize):
    """From zero init the run depends on P only through PᵀP = μI, so the construction must not matter.

    The baseline is the one-hot run with the ideal Gram μI. The runs compared with it see the float P:
    the fast path through its float Gram PᵀP, the reference path through the explicit matrices X̃. (The
    ideal Gram itself ignores P, so comparing ideal-Gram runs with each other could not fail.)
    """
    K, N, mu = 4, 6, 3.0
    task = CircleWalk(K, N, "0.7")
    cfg = TrainConfig(steps=8, eta=1.0, population=True, fast=fast)

    def run(pos, M, gram, cfg):
        model = ModelConfig(K=K, N=N, M=M, pos=pos, mu=mu, normalize_attention=normalize, gram=gram)
        return train(task, model, cfg, progress=False)

    base = run("onehot", N, "ideal", TrainConfig(steps=8, eta=1.0, population=True))
    base_hist, base_V = _trajectory(base)
    for pos, M in (("onehot", N), ("sine", 11), ("random", 9)):
        hist, V = _trajectory(run(pos, M, "computed", cfg))
        # the float Gram of P differs from μI by ~1e-16·μ and the paths differ in summation order; over
        # 8 steps the largest difference measured (all 12 cases) is 1.1e-15: 1e-13 is a ~90x margin
        for a, b in zip(hist, base_hist, strict=True):
            assert_close(np.hstack([np.ravel(x) for x in a]), np.hstack([np.ravel(x) for x in b]), 1e-13, pos)
        assert_close(V, base_V, 1e-13, f"V for {pos}")
    # the check is not vacuous: the trajectory moves
    assert base.history[-1]["parent_attention"] > 1 / N + 0.01


def test_a_user_embedding_with_orthogonal_equal_norm_columns_gives_the_onehot_trajectory(rng):
    """Any P with PᵀP = μI (here a random rotation of √μ·I, checked to POS_RTOL) gives the same run."""
    K, N, M, mu = 3, 5, 8, 2.0
    Q, _ = np.linalg.qr(rng.standard_normal((M, M)))
    user = np.sqrt(mu) * Q[:, :N]
    task, cfg = CircleWalk(K, N, "0.6"), TrainConfig(steps=6, population=True)
    a = train(task, ModelConfig(K=K, N=N, M=M, pos=user), cfg, progress=False)
    b = train(task, ModelConfig(K=K, N=N, M=N, pos="onehot", mu=mu), cfg, progress=False)
    assert a.config["mu"] == pytest.approx(mu, rel=1e-14) and a.config["model"]["pos"] == "user"
    # ideal Gram: both runs see μI; μ̄ of the user matrix differs from 2.0 by rounding only (~1e-16)
    assert_close(
        [h["attention_profile"] for h in a.history], [h["attention_profile"] for h in b.history], 1e-13, "S"
    )
    assert_close(a.final["V"], b.final["V"], 1e-13, "V")


@pytest.mark.parametrize("K,r", [(3, 2), (4, 2), (5, 1)])
@pytest.mark.parametrize("p", [0, 1])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "reference"])
def test_deterministic_walks_stay_at_chance_with_equal_attention(K, r, p, fast):
    """Theorem 4.1: p ∈ {0,1}, N = rK+1: accuracy exactly 1/K, S_1 = … = S_{N-1}, V ∝ 1_{K×K}, for 10 steps."""
    N = r * K + 1
    model = ModelConfig(K=K, N=N, M=N + 5, gram="computed")
    result = train(
        CircleWalk(K, N, p), model, TrainConfig(steps=10, eta=1.0, population=True, fast=fast), progress=False
    )
    for h in result.history:
        assert h["test_accuracy"] == 1 / K, f"step {h['step']}"
        # equal attention and V ∝ 1 hold exactly in exact arithmetic; 1e-12 allows float64 rounding,
        # which the sine embedding's float Gram (gram="computed") seeds at ~1e-16 per step.
        assert h["attention_spread"] <= 1e-12, f"step {h['step']}"
        assert h["ones_residual"] <= 1e-12, f"step {h['step']}"
    # the value matrix is growing (not stuck at zero), so the checks above are not vacuous
    assert np.abs(np.array(result.final["V"])).min() > 0.1


def test_half_probability_walks_reach_opt_and_attend_to_the_parent():
    """Theorem 3.1 at toy scale: p = 1/2, K = 6: exact population accuracy reaches OPT = 1/2, parent attention grows."""
    K, N = 6, 9
    result = train(
        CircleWalk(K, N, "1/2"),
        ModelConfig(K=K, N=N, M=16),
        TrainConfig(steps=10, population=True),
        progress=False,
    )
    acc = [h["test_accuracy"] for h in result.history]
    parent = [h["parent_attention"] for h in result.history]
    assert acc[0] == 1 / K  # zero init: all scores tie, label 0 wins, P(y = 0) = 1/K
    assert acc[-1] == 0.5  # OPT = max(p, 1-p), reached exactly (population accuracy is exact)
    assert max(acc) <= 0.5  # never above the Bayes accuracy
    assert parent[0] == pytest.approx(1 / N, abs=1e-15)
    assert all(b >= a for a, b in pairwise(parent[1:])), parent  # grows from step 1 on
    assert parent[-1] > 0.99
    assert result.history[-1]["v_direction_error"] < result.history[1]["v_direction_error"]
