"""Edge cases of the numeric core that the end-to-end comparisons cannot reach.

Each test pins one behaviour at a boundary: the reference path split into several chunks, the log-loss
domain at z = -ε exactly, the error messages of the loss check, the ReLU model's initial parameters, the
exact SymPy branch of the population accuracy, and the "shift" KL on rows with different minima; and how
``train`` wires its options: the task description, sampled sets and their seeds, float32, the embedding
norm and seed, the Gram matrix, normalised attention, a sampled set missing a token, the progress bar;
and the fast path on columns whose norms differ within the accepted tolerance.
"""

from __future__ import annotations

import io
import math
import re
import sys

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import assert_close, forward_by_hand, transition_by_hand

import rwtoolkit.engines.numeric._model
from rwtoolkit.engines.numeric import (
    ModelConfig,
    TrainConfig,
    exp_loss,
    init_generator,
    log_loss,
    squared_loss,
    train,
)
from rwtoolkit.engines.numeric._losses import LOSS_DERIVATIVES, SampleLoss
from rwtoolkit.engines.numeric._metrics import EvalSet, accuracy, kl_divergence
from rwtoolkit.engines.numeric._model import FastModel, GenericModel
from rwtoolkit.engines.numeric._train import _data
from rwtoolkit.tasks import CircleWalk, FiniteTask


def test_reference_path_over_several_chunks_equals_one_chunk_and_the_fast_path(monkeypatch):
    """The loss and the gradients accumulate over chunks: the summed loss at zero init is -log ε exactly."""
    task, model = CircleWalk(3, 4, "0.7"), ModelConfig(K=3, N=4, M=5)  # 24 walks in the population
    cfg = TrainConfig(steps=3, eps=0.1, population=True, fast=False)
    one = train(task, model, cfg, progress=False)
    # 5 walks per chunk: (K+M)·N·8 bytes = 256 bytes per walk, so 1280 bytes hold 5 of the 24 walks
    monkeypatch.setattr(rwtoolkit.engines.numeric._model, "REFERENCE_CHUNK_BYTES", 5 * 8 * 4 * 8)
    several = train(task, model, cfg, progress=False)
    assert several.net.chunk == 5 and one.net.chunk >= 24
    fast = train(task, model, TrainConfig(steps=3, eps=0.1, population=True), progress=False)
    # at zero init every label score is 0, so the probability-weighted mean loss is -log(0 + ε)
    assert several.history[0]["train_loss"] == pytest.approx(-math.log(0.1), rel=1e-15)
    for run in (several, fast):
        # summation order differs (chunks, fast path): measured ≤ 4.4e-16; 1e-14 is a ~20x margin
        for a, b in zip(run.history, one.history, strict=True):
            assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-14)
            assert np.allclose(a["attention_profile"], b["attention_profile"], rtol=0, atol=1e-14)
        assert np.allclose(run.final["V"], one.final["V"], rtol=0, atol=1e-14)


def test_log_loss_boundary_z_equal_minus_eps_is_outside_the_domain():
    """z + ε = 0 exactly (ε = 1/4 is a binary fraction) is refused as a domain error, not a non-finite loss."""
    loss = SampleLoss("log", 0.25)
    z = torch.tensor([-0.25, 0.0, 1.0], dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"^log-loss -log\(z\+eps\) is undefined at step 7: z\+eps <= 0 for 1 of 3 "
    ):
        loss(z, 7)
    inside = torch.tensor([-0.25 + 2**-50, 0.0], dtype=torch.float64)  # just inside: finite and defined
    assert torch.allclose(loss(inside, 7), -torch.log(inside + 0.25), rtol=0, atol=0)


def test_loss_errors_name_the_loss_and_the_step():
    def spiky(z: torch.Tensor) -> torch.Tensor:
        return torch.where(z > 0.5, torch.inf, z**2)

    z = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"^loss 'spiky' is not finite at step 4 for 2 of 3 training samples$"
    ):
        SampleLoss(spiky, 0.1)(z, 4)
    with pytest.raises(ValueError, match=r"^loss 'exp' is not finite at step 9 for 1 of 2 training samples$"):
        SampleLoss("exp", 0.1)(torch.tensor([0.0, -1000.0], dtype=torch.float64), 9)
    with pytest.raises(
        ValueError, match=r"^loss 'total' must map a tensor of shape \(3,\) to one of the same shape$"
    ):
        SampleLoss(_named("total", lambda z: z.sum()), 0.1)(z, 0)


def _named(name, fn):
    fn.__name__ = name
    return fn


def test_zero_init_relu_model_starts_and_stays_at_zero():
    """init="zero" with relu_width = m: V (m×K) and A (K×m) start at zero; ReLU'(0) = 0 keeps them there."""
    K, N, m = 3, 4, 5
    run = train(
        CircleWalk(K, N, "1/2"),
        ModelConfig(K=K, N=N, M=6, relu_width=m),
        TrainConfig(steps=2, population=True),
        progress=False,
    )
    assert np.array_equal(run.final["V"], np.zeros((m, K))) and np.array_equal(
        run.final["A"], np.zeros((K, m))
    )
    assert all(h["f_direction_error"] is None for h in run.history)  # f = 0 throughout
    assert run.history[0]["test_accuracy"] == 1 / K  # all scores tie at 0: label 0 wins


def test_gaussian_relu_init_draws_v_then_w_then_a_from_the_init_stream():
    """The third child of SeedSequence(seed) draws V (m×K), W ((K+M)×(K+M)), A (K×m) in that order."""
    K, N, M, m, sigma, seed = 3, 4, 6, 2, 0.05, 11
    run = train(
        CircleWalk(K, N, "1/2"),
        ModelConfig(K=K, N=N, M=M, relu_width=m),
        TrainConfig(steps=0, init="gaussian", sigma=sigma, seed=seed, population=True),
        progress=False,
    )
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
    V0 = rng.normal(0.0, sigma, size=(m, K))
    W0 = rng.normal(0.0, sigma, size=(K + M, K + M))
    A0 = rng.normal(0.0, sigma, size=(K, m))
    assert np.array_equal(run.final["V"], V0) and np.array_equal(run.final["A"], A0)
    assert np.array_equal(run.W(), W0)


def test_init_generator_is_the_third_stream_of_the_seed_that_a_sampled_run_draws_its_init_from():
    """SeedSequence(seed).spawn(3)[2], built by hand, draws V(0) (K×K) then W(0); with sampled sets too."""
    K, N, M, sigma, seed = 3, 4, 5, 0.05, 29
    run = train(
        CircleWalk(K, N, "0.7"),
        ModelConfig(K=K, N=N, M=M),
        TrainConfig(steps=0, init="gaussian", sigma=sigma, seed=seed, train_size=6, test_size=4),
        progress=False,
    )
    by_hand = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
    V0 = by_hand.normal(0.0, sigma, size=(K, K))
    W0 = by_hand.normal(0.0, sigma, size=(K + M, K + M))
    assert np.array_equal(run.final["V"], V0) and np.array_equal(run.W(), W0)
    stream = init_generator(seed)
    assert np.array_equal(stream.normal(0.0, sigma, size=(K, K)), V0)
    assert np.array_equal(stream.normal(0.0, sigma, size=(K + M, K + M)), W0)
    other = np.random.default_rng(np.random.SeedSequence(seed + 1).spawn(3)[2]).normal(
        0.0, sigma, size=(K, K)
    )
    assert not np.array_equal(init_generator(seed + 1).normal(0.0, sigma, size=(K, K)), V0)
    assert np.array_equal(init_generator(seed + 1).normal(0.0, sigma, size=(K, K)), other)


def test_population_accuracy_with_irrational_probabilities_is_the_exact_sum():
    """Non-rational probabilities take the SymPy branch: the sum of the exact probabilities of the correct inputs."""
    r2 = sp.sqrt(2)
    values = (r2 / 4, (1 - r2 / 4) / 3)  # input 0 has probability √2/4, inputs 1..3 share the rest
    ev = EvalSet(
        tokens=torch.zeros(4, 1, dtype=torch.int64),
        labels=torch.tensor([0, 1, 1, 2]),
        weights=torch.full((4,), 0.25, dtype=torch.float64),
        true_law=torch.full((4, 3), 1 / 3, dtype=torch.float64),
        prob_index=np.array([0, 1, 1, 1]),
        prob_values=values,
    )
    pred = torch.tensor([0, 1, 0, 2])  # inputs 0, 1 and 3 correct
    assert accuracy(pred, ev) == float(values[0] + 2 * values[1])  # (1 + √2/4)·(2/3) = 0.9023689...
    assert accuracy(torch.tensor([1, 0, 0, 0]), ev) == 0.0
    assert accuracy(torch.tensor([0, 1, 1, 2]), ev) == 1.0


def test_shift_kl_normalises_each_row_by_its_own_minimum():
    f = torch.tensor([[1.0, 0.0, -1.0], [5.0, 7.0, 6.0]], dtype=torch.float64)  # row minima -1 and 5
    law = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], dtype=torch.float64)
    weights = torch.tensor([0.25, 0.75], dtype=torch.float64)
    ev = EvalSet(torch.zeros(2, 1, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), weights, law)
    q1 = np.array([2.1, 1.1, 0.1]) / 3.3  # f - min f + ε, row by row, normalised
    q2 = np.array([0.1, 2.1, 1.1]) / 3.3
    kl1 = 0.5 * math.log(0.5 / q1[0]) + 0.5 * math.log(0.5 / q1[1])
    kl2 = 0.2 * math.log(0.2 / q2[0]) + 0.3 * math.log(0.3 / q2[1]) + 0.5 * math.log(0.5 / q2[2])
    assert kl_divergence(f, ev, "shift", 0.1) == pytest.approx(0.25 * kl1 + 0.75 * kl2, rel=1e-14)
    rows = f.numpy()
    soft = rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))  # log softmax by hand, row by row
    kl_soft = 0.25 * sum(p * (math.log(p) - s) for p, s in zip([0.5, 0.5], soft[0, :2], strict=True))
    kl_soft += 0.75 * sum(p * (math.log(p) - s) for p, s in zip([0.2, 0.3, 0.5], soft[1], strict=True))
    assert kl_divergence(f, ev, "softmax", 0.1) == pytest.approx(kl_soft, rel=1e-14)


def test_builtin_losses_match_their_formulas():
    z = torch.tensor([-0.05, 0.0, 0.5, 3.0], dtype=torch.float64)
    # hand values: -log(z + 0.1), (1 - z)², exp(-z)
    logs = [-math.log(0.05), -math.log(0.1), -math.log(0.6), -math.log(3.1)]
    assert log_loss(z, 0.1).tolist() == pytest.approx(logs, rel=1e-15)
    assert squared_loss(z, 0.1).tolist() == [1.05**2, 1.0, 0.25, 4.0]
    assert exp_loss(z, 0.1).tolist() == pytest.approx(
        [math.exp(0.05), 1.0, math.exp(-0.5), math.exp(-3.0)], rel=1e-15
    )


def test_closed_form_loss_derivatives_match_hand_values_and_leave_z_unchanged():
    """ℓ'(z) of each name: -1/(z + 0.1), 2(z - 1), -exp(-z), written out here; the in-place steps act on a new tensor."""
    z = torch.tensor([-0.05, 0.0, 0.5, 3.0], dtype=torch.float64)
    before = z.clone()
    assert set(LOSS_DERIVATIVES) == {"log", "squared", "exp"}
    assert LOSS_DERIVATIVES["log"](z, 0.1).tolist() == pytest.approx(
        [-20.0, -10.0, -1 / 0.6, -1 / 3.1], rel=1e-15
    )
    assert LOSS_DERIVATIVES["squared"](z, 0.1).tolist() == [-2.1, -2.0, -1.0, 4.0]
    assert LOSS_DERIVATIVES["exp"](z, 0.1).tolist() == pytest.approx(
        [-math.exp(0.05), -1.0, -math.exp(-0.5), -math.exp(-3.0)], rel=1e-15
    )
    assert torch.equal(z, before)


def test_a_callable_loss_without_a_name_is_called_callable_in_errors():
    class Spiky:  # a callable object: no __name__
        def __call__(self, z: torch.Tensor) -> torch.Tensor:
            return torch.full_like(z, torch.inf)

    with pytest.raises(
        ValueError, match=r"^loss 'callable' is not finite at step 2 for 2 of 2 training samples$"
    ):
        SampleLoss(Spiky(), 0.1)(torch.zeros(2, dtype=torch.float64), 2)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "reference"])
def test_normalised_attention_at_a_gaussian_init_matches_a_hand_computation(fast):
    """With normalize_attention every column of X̃ and x̃_N is scaled to unit norm inside the softmax."""
    task, M, sigma, seed = CircleWalk(3, 4, "0.7"), 6, 0.3, 5
    run = train(
        task,
        ModelConfig(K=3, N=4, M=M, normalize_attention=True, gram="computed"),
        TrainConfig(steps=0, init="gaussian", sigma=sigma, seed=seed, population=True, fast=fast),
        progress=False,
    )
    S, _ = forward_by_hand(task, M, sigma, seed, normalize=True)
    plain, _ = forward_by_hand(task, M, sigma, seed)
    profile = task.population().float_probs() @ S  # (N,) the probability-weighted mean attention
    # summation order only: measured ≤ 5.6e-17, 1e-14 is a ~200x margin
    assert np.allclose(run.history[0]["attention_profile"], profile, rtol=0, atol=1e-14)
    assert np.abs(profile - task.population().float_probs() @ plain).max() > 1e-3  # normalising matters here


def test_step_metrics_at_a_gaussian_init_match_a_hand_computation():
    """parent_attention = mean S_{N-1}, attention_spread = max over inputs of the spread of S over the N-1
    token positions, and the KL of P(y | X) = Π row s_{N-1} to softmax(f) and to (f - min f + ε)/sum."""
    # seed 13: the least attended token position is neither the first nor only the last (spread pins both)
    task, M, sigma, seed, eps = CircleWalk(3, 4, "0.7"), 6, 0.3, 13, 0.25
    S, f = forward_by_hand(task, M, sigma, seed)
    pop = task.population()
    w, law = pop.float_probs(), transition_by_hand(3, 0.7)[pop.tokens[:, -1]]  # (n,), (n, K)
    log_soft = f - np.log(np.exp(f).sum(1, keepdims=True))
    shifted = f - f.min(1, keepdims=True) + eps
    log_shift = np.log(shifted / shifted.sum(1, keepdims=True))
    for norm, log_q in (("softmax", log_soft), ("shift", log_shift)):
        run = train(
            task,
            ModelConfig(K=3, N=4, M=M, gram="computed"),
            TrainConfig(
                steps=0,
                init="gaussian",
                sigma=sigma,
                seed=seed,
                eps=eps,
                kl_norm=norm,
                loss="squared",
                population=True,
            ),
            progress=False,
        )
        h = run.history[0]
        kl = float(w @ np.where(law > 0, law * (np.log(np.where(law > 0, law, 1.0)) - log_q), 0.0).sum(1))
        assert h["kl"] == pytest.approx(kl, rel=1e-13)  # summation order only
        assert h["parent_attention"] == pytest.approx(float(w @ S[:, 2]), rel=1e-13)
        spread = float((S[:, :-1].max(1) - S[:, :-1].min(1)).max())
        assert h["attention_spread"] == pytest.approx(spread, rel=1e-13)


def test_a_snapshot_holds_the_mean_attended_token():
    """At zero init S is uniform, so X S counts each token 1/N per visit: E[#visits of k]/N = (N-1)/(K N)."""
    cfg = TrainConfig(steps=0, population=True, snapshots=[0])
    run = train(CircleWalk(3, 4, "0.7"), ModelConfig(K=3, N=4, M=5), cfg, progress=False)
    assert run.snapshots[0]["attended_token"] == pytest.approx([0.25] * 3, rel=1e-15)


@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_reference_path_from_a_gaussian_init_uses_w0_and_the_query_column(normalize):
    """From a random W(0) the logits see W(0)x̃_N: the reference path must start from W(0) itself and
    build x̃_N from the last column of P (from zero init any column of norm √μ gives the same run)."""
    task, model = (
        CircleWalk(3, 4, "0.7"),
        ModelConfig(K=3, N=4, M=6, normalize_attention=normalize, gram="computed"),
    )
    runs = [
        train(
            task,
            model,
            TrainConfig(steps=2, init="gaussian", sigma=0.3, seed=5, population=True, fast=f),
            progress=False,
        )
        for f in (True, False)
    ]
    fast, ref = runs
    # both paths differ only in summation order: measured ≤ 5e-16; 1e-13 is a ~200x margin
    for a, b in zip(fast.history, ref.history, strict=True):
        assert np.allclose(a["attention_profile"], b["attention_profile"], rtol=0, atol=1e-13)
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-13)
    assert np.allclose(fast.final["w"], ref.final["w"], rtol=0, atol=1e-13)
    assert np.abs(np.array(ref.final["w"])).max() > 0.1  # W(0)x̃_N is far from zero: the check is not vacuous


def test_the_config_describes_a_circle_and_a_finite_task():
    model = ModelConfig(K=3, N=4, M=5)
    circle = train(CircleWalk(3, 4, "0.7"), model, TrainConfig(steps=0, population=True), progress=False)
    assert circle.config["task"] == {"name": "circle", "K": 3, "N": 4, "p": "7/10"}
    swap = FiniteTask([[0, 1, 2], [2, 1, 0]], [0, 2], ["1/3", "2/3"], K=3, name="swap")
    finite = train(swap, model, TrainConfig(steps=0, population=True), progress=False)
    assert finite.config["task"] == {"name": "swap", "K": 3, "N": 4, "inputs": 2}


def test_sampled_sets_weigh_each_walk_one_over_their_size_and_replay_from_the_seed():
    """At zero init every score is 0 and the attention uniform: a training set weighted 1/n has mean loss
    -log ε, and the test set's mean attention is 1/N at every position. The three streams (train walks,
    test walks, W(0)) come from the seed: the same seed gives the same run, another seed another."""
    task, model = CircleWalk(3, 4, "0.7"), ModelConfig(K=3, N=4, M=5)
    cfg = TrainConfig(steps=0, eps=0.1, train_size=7, test_size=5)
    zero = train(task, model, cfg, progress=False)
    assert zero.history[0]["train_loss"] == pytest.approx(-math.log(0.1), rel=1e-15)
    assert zero.history[0]["attention_profile"] == pytest.approx([0.25] * 4, rel=1e-15)

    def run(seed):
        cfg = TrainConfig(steps=2, init="gaussian", sigma=0.3, train_size=7, test_size=5, seed=seed)
        return train(task, model, cfg, progress=False).to_json()

    first, again, other = run(4), run(4), run(5)
    assert first == again and first["history"] != other["history"]


def test_a_float32_run_computes_in_float32():
    """Every tensor of the run is float32, so the loss and the weighted attention are float32 numbers."""
    task, model = CircleWalk(3, 4, "0.7"), ModelConfig(K=3, N=4, M=5)
    for population in (True, False):
        cfg = TrainConfig(steps=3, dtype="float32", population=population, train_size=6, test_size=6)
        run = train(task, model, cfg, progress=False)
        assert run.net.P.dtype == run.net.V.dtype == torch.float32
        for h in run.history:
            assert all(float(np.float32(v)) == v for v in [h["train_loss"], h["kl"], *h["attention_profile"]])
        train_set, test_set, _ = _data(task, cfg, torch.float32, torch.device("cpu"))
        for ev in (train_set, test_set):
            assert ev.weights.dtype == ev.true_law.dtype == torch.float32


def test_train_uses_the_embedding_norm_and_seed_of_the_model_config():
    """mu rescales every column to squared norm μ; pos_seed chooses the random orthonormal basis."""
    task = CircleWalk(3, 4, "0.7")

    def P(seed):
        model = ModelConfig(K=3, N=4, M=6, pos="random", mu=2.5, pos_seed=seed)
        return train(task, model, TrainConfig(steps=0, population=True), progress=False).net.P.numpy()

    first = P(3)
    # measured max |PᵀP - 2.5 I| = 1.8e-15: 1e-13 is a ~50x margin
    assert np.allclose(first.T @ first, 2.5 * np.eye(4), rtol=0, atol=1e-13)
    assert np.array_equal(first, P(3)) and not np.allclose(first, P(4))
    # the μ the run records is the documented one, not the float mean of the columns (1 - 2.2e-16 here)
    for requested, mu in ((2.5, 2.5), (None, 1.0)):
        model = ModelConfig(K=3, N=4, M=6, pos="random", mu=requested)
        assert train(task, model, TrainConfig(steps=0, population=True), progress=False).config["mu"] == mu


def test_the_ideal_gram_is_mu_times_identity_exactly_and_the_computed_one_is_p_transpose_p():
    """gram="ideal" replaces the float PᵀP (off-diagonal rounding of the sine basis) by μI bit for bit."""
    task, cfg = CircleWalk(3, 4, "0.7"), TrainConfig(steps=0, population=True)
    ideal, computed = (
        train(task, ModelConfig(K=3, N=4, M=6, gram=gram), cfg, progress=False).net
        for gram in ("ideal", "computed")
    )
    assert torch.equal(ideal.G, 3.0 * torch.eye(4, dtype=torch.float64))  # μ = M/2
    P = computed.P
    assert torch.equal(computed.G, P.T @ P) and not torch.equal(computed.G, ideal.G)


def test_reference_path_on_a_sampled_set_without_the_largest_token_equals_the_fast_path():
    """The one-hot matrices X have K rows even when the training walks never visit token K-1."""
    task, seed = CircleWalk(5, 3, "1/2"), 3
    train_walks, _ = task.sample(3, generator=np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0]))
    assert train_walks.max() < 4  # the documented train stream: token 4 is missing
    model = ModelConfig(K=5, N=3, M=4, gram="computed")
    fast, ref = (
        train(
            task,
            model,
            TrainConfig(steps=2, init="gaussian", sigma=0.05, seed=seed, train_size=3, test_size=3, fast=f),
            progress=False,
        )
        for f in (True, False)
    )
    assert isinstance(fast.net, FastModel) and isinstance(ref.net, GenericModel)
    # summation order only: measured ≤ 5.6e-17, 1e-13 as in the population comparison above
    for a, b in zip(fast.history, ref.history, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-13)
        assert np.allclose(a["attention_profile"], b["attention_profile"], rtol=0, atol=1e-13)
    assert np.allclose(fast.final["V"], ref.final["V"], rtol=0, atol=1e-13)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "progress,terminal,shown",
    [(True, True, True), (None, True, True), (False, True, False), (True, False, False)],
    ids=["asked-terminal", "default-terminal", "not-asked-terminal", "asked-no-terminal"],
)
def test_the_progress_bar_shows_only_when_asked_and_on_a_terminal(monkeypatch, progress, terminal, shown):
    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    # steps 1 and 2 are not recorded: the bar advances on both paths of the loop
    task, model, cfg = (
        CircleWalk(3, 4, "0.7"),
        ModelConfig(K=3, N=4, M=5),
        TrainConfig(steps=3, population=True, record_steps=[0]),
    )
    if progress is None:
        train(task, model, cfg)  # the default shows progress
    else:
        train(task, model, cfg, progress=progress)
    if shown:
        # tqdm's bar: "rw train: 100%|██████████| 3/3 [00:00<00:00, 250.00step/s]"
        assert re.search(r"rw train: 100%\|[^|]*\| 3/3 \[[^\]]*, *[\d.?]+(step/s|s/step)\]", err.getvalue())
    else:
        assert err.getvalue() == ""


def _unequal_norms(N: int, M: int, mu: float, spread: float) -> np.ndarray:
    """P = diag(√(μ(1+δ_j))) padded to M rows: orthogonal columns whose squared norms differ by ±``spread``·μ."""
    delta = spread * np.cos(np.arange(N) * 2.0)  # distinct for every column, the last two included
    P = np.zeros((M, N))
    P[np.arange(N), np.arange(N)] = np.sqrt(mu * (1 + delta))
    return P


@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_fast_path_uses_each_columns_own_norm_like_the_reference_path(normalize):
    """Columns with slightly unequal norms (within POS_RTOL): the fast path with the float Gram must follow
    the reference path, which builds X̃ from P itself, not one built from another column's norm."""
    K, N, M = 4, 6, 8
    P = _unequal_norms(N, M, 2.0, 0.4e-8)  # ‖p_j‖² differ by up to 8e-9·μ: accepted as orthogonal, equal-norm
    task = CircleWalk(K, N, "0.7")
    model = ModelConfig(K=K, N=N, M=M, pos=P, gram="computed", normalize_attention=normalize)
    fast, ref = (
        train(task, model, TrainConfig(steps=6, population=True, fast=f), progress=False)
        for f in (True, False)
    )
    # measured: at most 1.1e-16 apart; the query norm taken from the parent's column (sq[-2] for sq[-1])
    # moves w by 1.1e-9, so 1e-14 (a ~90x margin over the measured bound) separates the two cleanly
    profiles = [[h["attention_profile"] for h in run.history] for run in (fast, ref)]
    assert_close(profiles[0], profiles[1], 1e-14, "S")
    assert_close(fast.final["V"], ref.final["V"], 1e-14, "V")
    assert_close(fast.final["w"], ref.final["w"], 1e-14, "w")
