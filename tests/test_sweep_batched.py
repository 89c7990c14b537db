"""``rwtoolkit.engines.numeric.train_batched`` computes, per run, what ``rwtoolkit.engines.numeric.train`` computes, to float rounding.

Tolerance: 100 machine epsilons of the dtype, times max(1, |value|). The two paths evaluate the same
formulas in different orders (the batched one factors the softmax as E_j U_{s_j} / Z and writes the
gradient out, ``train`` uses ``torch.softmax`` and autograd), so they differ by rounding only; over the
30 steps here the largest difference measured was 10 epsilons (float64 2.2e-15, float32 1.2e-6), and
the factor 10 above it keeps the check stable across BLAS builds while a wrong term (an error of order
η·gradient, >= 1e-4 here) still fails it by many orders of magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest

from rwtoolkit.engines.numeric import (
    BATCHED_HISTORY_KEYS,
    ModelConfig,
    TrainConfig,
    batch_key,
    train,
    train_batched,
)
from rwtoolkit.tasks import CircleWalk

K, N, STEPS = 3, 6, 30

# (p, M, μ, Gram, normalize, η, init, loss): one batch per batch_key, several runs per batch.
CASES = [
    ("1/2", 20, None, "ideal", False, 1.0, "gaussian", "log"),
    ("3/10", 12, 3.0, "computed", False, 0.5, "gaussian", "log"),
    ("1/5", 9, 0.5, "ideal", False, 2.0, "zero", "log"),
    ("1", 8, 1.0, "ideal", False, 1.0, "zero", "log"),
    ("0", 8, 1.0, "ideal", False, 1.0, "gaussian", "log"),
    ("2/3", 20, 2.0, "ideal", True, 2.0, "gaussian", "log"),
    ("1/2", 10, None, "ideal", False, 0.5, "gaussian", "squared"),
    ("1/4", 10, None, "computed", False, 0.5, "gaussian", "squared"),
    ("1/3", 10, None, "ideal", False, 0.2, "gaussian", "exp"),
]


def _runs(dtype: str) -> list[tuple[CircleWalk, ModelConfig, TrainConfig]]:
    return [
        (
            CircleWalk(K, N, p),
            ModelConfig(K=K, N=N, M=M, mu=mu, gram=gram, normalize_attention=normalize),
            TrainConfig(
                steps=STEPS,
                eta=eta,
                population=True,
                init=init,
                sigma=0.02,
                seed=seed,
                loss=loss,
                dtype=dtype,
                threads=1,
            ),
        )
        for seed, (p, M, mu, gram, normalize, eta, init, loss) in enumerate(CASES)
    ]


def _close(a, b, dtype: str) -> None:
    eps = float(np.finfo(np.float64 if dtype == "float64" else np.float32).eps)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.all(np.abs(a - b) <= 100 * eps * np.maximum(1.0, np.abs(b))), np.max(np.abs(a - b))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batched_runs_equal_train_runs_to_rounding(dtype):
    runs = _runs(dtype)
    groups: dict[tuple, list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(batch_key(*run), []).append(i)
    assert len(groups) >= 4 and max(len(g) for g in groups.values()) >= 2
    for indices in groups.values():
        results = train_batched([runs[i] for i in indices])
        assert [r.diverged for r in results] == [None] * len(indices)
        for result, i in zip(results, indices, strict=True):
            ref = train(*runs[i], progress=False)
            for key in BATCHED_HISTORY_KEYS:
                _close(result.series(key, STEPS), [h[key] for h in ref.history], dtype)
            _close(result.final["V"], ref.final["V"], dtype)
            _close(result.final["attention_profile"], ref.final["attention_profile"], dtype)
            assert result.final_accuracy == pytest.approx(ref.history[-1]["test_accuracy"], abs=1e-12)


def test_a_run_train_refuses_is_reported_diverged_at_that_step_and_the_others_go_on():
    task, model = CircleWalk(K, N, "1/2"), ModelConfig(K=K, N=N, M=10)
    good = TrainConfig(steps=5, population=True, init="gaussian", sigma=0.02, seed=0, threads=1)
    bad = TrainConfig(steps=5, population=True, init="gaussian", sigma=0.3, seed=1, threads=1)
    with pytest.raises(ValueError, match="undefined at step 0"):
        train(task, model, bad, progress=False)
    diverged, kept = train_batched([(task, model, bad), (task, model, good)])
    assert diverged.diverged is not None and diverged.diverged.step == 0 and kept.diverged is None
    assert np.isnan(diverged.series("train_loss", 5)).all() and diverged.final["test_accuracy"] is None
    ref = train(task, model, good, progress=False)
    _close(kept.final["V"], ref.final["V"], "float64")


def test_recorded_steps_hold_the_metrics_and_every_step_the_residuals():
    """record_steps (rw sweep's record_every): loss, accuracy and attention at those steps and the last
    (``train`` records the last only when asked); V's residuals at every step as ``train`` without."""
    task, model = CircleWalk(K, N, "3/10"), ModelConfig(K=K, N=N, M=10)
    every = TrainConfig(steps=7, population=True, init="gaussian", sigma=0.02, threads=1)
    some = TrainConfig(**{**vars(every), "record_steps": (0, 3, 6)})
    [result] = train_batched([(task, model, some)])
    last = TrainConfig(**{**vars(every), "record_steps": (0, 3, 6, 7)})
    ref, full = train(task, model, last, progress=False), train(task, model, every, progress=False)
    assert [h["step"] for h in result.history] == [h["step"] for h in ref.history] == [0, 3, 6, 7]
    for key in BATCHED_HISTORY_KEYS[:3]:
        _close([h[key] for h in result.history], [h[key] for h in ref.history], "float64")
        assert np.isnan(result.series(key, 7)[[1, 2, 4, 5]]).all()
    for key in BATCHED_HISTORY_KEYS[3:]:
        _close(result.series(key, 7), [h[key] for h in full.history], "float64")


def test_runs_of_different_shapes_are_refused_naming_the_run():
    model, cfg = ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1, population=True)
    with pytest.raises(ValueError, match=r"runs\[1\] cannot be batched: batch_key differs"):
        train_batched([(CircleWalk(3, 4, "1/2"), model, cfg), (CircleWalk(3, 4, 1), model, cfg)])
    with pytest.raises(ValueError, match=r"runs\[0\] cannot be batched: population=False"):
        train_batched([(CircleWalk(3, 4, "1/2"), model, TrainConfig(steps=1))])
    other = TrainConfig(steps=1, population=True, record_steps=(0,))
    with pytest.raises(ValueError, match=r"runs\[1\] cannot be batched: record_steps differs"):
        train_batched([(CircleWalk(3, 4, "1/2"), model, cfg), (CircleWalk(3, 4, "1/3"), model, other)])


@pytest.mark.parametrize("p", ["1/3", "1"])
def test_forest_sums_equal_the_per_input_sums(p):
    """The forest layout against sums written per input: each input's leaf holds its token sequence and
    its label in its slot; sums down the forest are Σ_j table[j, s_j(, root)], sums up are per
    (position, token, root) totals. Float64 sums of at most 2^(N-2) terms in another order: 1e-13."""
    import torch

    from rwtoolkit.engines.numeric._batched import _down, _forest, _up

    K_, N_, B = 4, 6, 3
    pop = CircleWalk(K_, N_, p).population()
    forest = _forest(pop.tokens, pop.labels, K_, torch.device("cpu"))
    L = len(forest.slot_label)
    leaf, slot = forest.slot_of_input // 2, forest.slot_of_input % 2
    assert L == (K_ * 2 ** (N_ - 2) if p == "1/3" else K_)
    assert np.array_equal(forest.slot_label.numpy()[leaf, slot], pop.labels)
    seqs = np.zeros((L, N_ - 1), dtype=np.int64)
    seqs[leaf] = pop.tokens  # every input of a leaf has the leaf's sequence
    assert np.array_equal(seqs[leaf], pop.tokens)
    root = seqs[:, -1]
    gen = np.random.default_rng(0)
    table = gen.normal(size=(N_ - 1, K_, K_, 2, B))  # [j, token, root, q, b]
    assert forest.binary == (p == "1/3")
    down = _down(torch.from_numpy(table.reshape(-1, 2, B)), forest, forest.index_root).numpy()  # (L, 2, B)
    for u in range(L):
        assert np.allclose(down[u], sum(table[j, seqs[u, j], root[u]] for j in range(N_ - 1)), atol=1e-13)
    plain = _down(torch.from_numpy(table[:, :, 0].reshape(-1, 2, B).copy()), forest, forest.index)
    for u in range(L):
        assert np.allclose(plain[u].numpy(), sum(table[j, seqs[u, j], 0] for j in range(N_ - 1)), atol=1e-13)
    values = gen.normal(size=(L, 2, B))
    up = _up(torch.from_numpy(values), forest, forest.index_root, (N_ - 1) * K_ * K_).numpy()
    expected = np.zeros(((N_ - 1) * K_ * K_, 2, B))
    for u in range(L):
        for j in range(N_ - 1):
            expected[(j * K_ + seqs[u, j]) * K_ + root[u]] += values[u]
    assert np.allclose(up, expected, atol=1e-13)


def test_dense_row_sums_equal_index_add():
    """The grouped sums off the CPU (a one-hot product) against index_add_, with repeated rows; 1e-14
    absolute on sums of at most 4 standard normal terms."""
    import torch

    from rwtoolkit.engines.numeric._batched import _add_rows_dense

    gen = torch.Generator().manual_seed(1)
    index = torch.tensor([3, 0, 3, 1, 3, 0])
    values = torch.randn(6, 2, 5, dtype=torch.float64, generator=gen)
    expected = torch.zeros(4, 2, 5, dtype=torch.float64).index_add_(0, index, values)
    got = _add_rows_dense(torch.zeros(4, 2, 5, dtype=torch.float64), index, values)
    assert torch.allclose(got, expected, rtol=0, atol=1e-14) and bool(got[2].eq(0).all())
