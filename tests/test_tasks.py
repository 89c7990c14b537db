"""Task definitions (rwtoolkit.tasks): exact populations, sampling, Π, Bayes predictor, QA tasks, validation."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.tasks import (
    MAX_EXACT_WALKS,
    QA_VOCAB,
    CircleWalk,
    FiniteTask,
    exact,
    qa_task1,
    qa_task2,
    symbol,
)


def shift_matrix(K: int) -> sp.Matrix:
    """Π0 of docs/theory.md#task, built from its definition [Π0]_{i+1,i} = 1 (0-based, indices mod K)."""
    P0 = sp.zeros(K, K)
    for i in range(K):
        P0[(i + 1) % K, i] = 1
    return P0


@pytest.mark.parametrize("K", [3, 4, 7])
def test_transition_matrix_is_p_shift_transpose_plus_complement(K):
    p = symbol("p")
    P0 = shift_matrix(K)
    assert CircleWalk(K, 3, p).transition_matrix() == p * P0.T + (1 - p) * P0


@pytest.mark.parametrize("K,N", [(3, 2), (3, 5), (4, 6), (5, 4)])
def test_population_enumerates_every_walk_with_probabilities_summing_to_one(K, N):
    p = symbol("p")
    pop = CircleWalk(K, N, p).population()
    assert pop.size == K * 2 ** (N - 1)
    assert sp.expand(sp.Add(*pop.exact_probs()) - 1) == 0
    walks = np.concatenate([pop.tokens, pop.labels[:, None]], axis=1)
    assert len({tuple(w) for w in walks}) == pop.size
    steps = np.diff(walks, axis=1) % K
    assert set(np.unique(steps)) <= {1, K - 1}
    # probability of each walk from its own steps: (1/K) p^#(+1) (1-p)^#(-1)
    for w, prob in zip(walks, pop.exact_probs(), strict=True):
        cw = int(np.sum(np.diff(w) % K == 1))
        assert sp.expand(prob - p**cw * (1 - p) ** (N - 1 - cw) / K) == 0


@pytest.mark.parametrize("p,direction", [(1, 1), (0, -1)])
def test_deterministic_walks_keep_only_the_K_rotations(p, direction):
    K, N = 5, 8
    pop = CircleWalk(K, N, p).population()
    assert pop.size == K
    assert np.all(pop.float_probs() == 1 / K)
    expected = (np.arange(K)[:, None] + direction * np.arange(N - 1)[None, :]) % K
    assert np.array_equal(np.sort(pop.tokens, axis=0), np.sort(expected, axis=0))
    assert np.array_equal(pop.labels, (pop.tokens[:, -1] + direction) % K)


def test_sample_frequencies_match_exact_probabilities():
    """20 000 draws of 3*2^3 walks: each frequency within 5 standard errors of its exact probability.

    5 standard errors bounds a false alarm per walk by ~6e-7, so the test is reliable for a fixed seed
    and any seed; a wrong law (e.g. p and 1-p swapped) moves frequencies by > 20 standard errors.
    """
    walk = CircleWalk(3, 4, "7/10")
    tokens, labels = walk.sample(20_000, seed=1)
    pop = walk.population()
    probs = pop.float_probs()
    index = {tuple(t) + (y,): i for i, (t, y) in enumerate(zip(pop.tokens, pop.labels, strict=True))}
    counts = np.zeros(pop.size)
    for t, y in zip(tokens, labels, strict=True):
        counts[index[tuple(t) + (y,)]] += 1
    freq = counts / len(labels)
    se = np.sqrt(probs * (1 - probs) / len(labels))
    assert np.all(np.abs(freq - probs) <= 5 * se)


def test_sampling_is_reproducible_from_seed_and_generator():
    walk = CircleWalk(6, 20, "1/2")
    a = walk.sample(50, seed=3)
    b = walk.sample(50, generator=np.random.default_rng(3))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_bayes_scores_are_the_transition_row_of_the_last_token():
    walk = CircleWalk(5, 4, "3/10")
    tokens = np.array([[0, 1, 2], [4, 0, 4]])
    scores = walk.bayes_scores(tokens)
    # Πᵀ e_s puts p on s+1 and 1-p on s-1
    expected = np.zeros((2, 5))
    expected[0, 3], expected[0, 1] = 0.3, 0.7
    expected[1, 0], expected[1, 3] = 0.3, 0.7
    assert np.allclose(scores, expected, rtol=0, atol=1e-15)
    assert walk.opt == sp.Rational(7, 10)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        pytest.param(dict(K=2, N=5, p="1/2"), "K=2 is out of range", id="K<3"),
        pytest.param(dict(K=4, N=1, p="1/2"), "N=1 is out of range", id="N<2"),
        pytest.param(dict(K=4, N=5, p="3/2"), r"p=3/2 is outside \[0, 1\]", id="p>1"),
        pytest.param(dict(K=4, N=5, p=-0.1), r"p=-1/10 is outside \[0, 1\]", id="p<0"),
        pytest.param(dict(K=4, N=5, p="abc/2"), "p='abc/2' is not a number", id="unparsable"),
        pytest.param(dict(K=4.0, N=5, p="1/2"), "K=4.0 must be an integer", id="float K"),
    ],
)
def test_circle_walk_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CircleWalk(**kwargs)


def test_population_above_the_limit_is_refused_with_the_walk_count():
    walk = CircleWalk(6, 97, "1/2")
    with pytest.raises(ValueError, match=r"4.75e\+29 walks.*sample"):
        walk.population()
    assert CircleWalk(4, 19, "1/2").walk_count == 4 * 2**18 <= MAX_EXACT_WALKS


def test_symbolic_p_has_no_float_probabilities():
    with pytest.raises(ValueError, match=r"symbols \['p'\]"):
        CircleWalk(3, 3, "p").population().float_probs()


def test_exact_reads_decimals_as_decimals():
    assert exact(0.1, "x") == sp.Rational(1, 10)
    assert exact("0.25", "x") == sp.Rational(1, 4)
    assert exact("eta", "x") == symbol("eta")


def test_qa_task1_is_the_majority_of_five_fruits():
    task = qa_task1()
    pop = task.population()
    assert (task.K, task.N, pop.size) == (19, 17, 32)
    assert task.vocab == QA_VOCAB and QA_VOCAB[:3] == ("apple", "orange", "Based")
    fruits = pop.tokens[:, 4:9]
    assert set(np.unique(fruits)) == {0, 1}
    majority = np.where((fruits == 0).sum(axis=1) >= 3, 0, 1)
    assert np.array_equal(pop.labels, majority)
    assert sum(pop.exact_probs()) == 1


def test_qa_task2_questions_are_permutations_with_different_labels():
    task = qa_task2()
    pop = task.population()
    assert (task.K, task.N, pop.size) == (19, 19, 2)
    assert sorted(pop.tokens[0]) == sorted(pop.tokens[1])
    assert list(pop.labels) == [0, 1]
    words = [QA_VOCAB[t] for t in pop.tokens[0]]
    assert " ".join(words) == (
        "Based on the sentence I prefer an apple to an orange which type of fruit do I prefer"
    )


@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        pytest.param(([[0, 1]], [0], ["1/2"]), dict(K=2), "sum to 1/2, not 1", id="probs sum"),
        pytest.param(([[0, 1], [1]], [0, 1], ["1/2"] * 2), dict(K=2), "equal length", id="ragged"),
        pytest.param(([[0, 2]], [0], [1]), dict(K=2), r"outside the vocabulary \[0, 2\)", id="token"),
        pytest.param(([[0, 1]], [5], [1]), dict(K=2), "label 0 5 is outside", id="label"),
        pytest.param(
            ([["pear"]], ["a"], [1]), dict(vocab=["a", "b"]), "'pear' is not in the vocab", id="word"
        ),
        pytest.param(([[0]], [0], ["-1/2"]), dict(K=1), r"outside \[0, 1\]", id="negative prob"),
        pytest.param(([[0]], [0], [1]), dict(), "give K", id="no vocabulary"),
    ],
)
def test_finite_task_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        FiniteTask(*args, **kwargs)


def test_finite_task_drops_zero_probability_inputs_and_samples_by_probability():
    task = FiniteTask([[0, 0], [1, 1], [0, 1]], [0, 1, 1], [0, "1/4", "3/4"], K=2)
    pop = task.population()
    assert pop.size == 2 and list(pop.exact_probs()) == [sp.Rational(1, 4), sp.Rational(3, 4)]
    tokens, labels = task.sample(4000, seed=0)
    assert labels.min() == 1  # the zero-probability input (label 0) is never drawn
    # sampled by probability: [0, 1] drawn with frequency 3/4 within 5 standard errors (sqrt(3/16/4000) ≈ 0.0068);
    # uniform sampling of the two inputs would give 1/2, 37 standard errors away
    freq = float(np.mean(np.all(tokens == [0, 1], axis=1)))
    assert abs(freq - 0.75) <= 5 * np.sqrt(0.75 * 0.25 / 4000)
    assert np.all(np.all(tokens == [0, 1], axis=1) | np.all(tokens == [1, 1], axis=1))


def test_population_is_the_K_rotations_of_the_rooted_walks():
    walk = CircleWalk(5, 4, symbol("p"))
    rooted, pop = walk.rooted_population(), walk.population()
    assert np.all(rooted.tokens[:, 0] == 0)
    assert sp.expand(sp.Add(*rooted.exact_probs()) - sp.Rational(1, 5)) == 0
    n = rooted.size
    for r in range(5):
        block = slice(r * n, (r + 1) * n)
        assert np.array_equal(pop.tokens[block], (rooted.tokens + r) % 5)
        assert np.array_equal(pop.labels[block], (rooted.labels + r) % 5)
