"""Property: rwtoolkit.engines.numeric's population GD is the exact trajectory of rwtoolkit.engines.exact.derive (steps 0-2), by the public check.

For random circle walks and random finite tasks, random η ∈ (0, 2], ε ∈ (0, 1], μ ∈ (0, 10], a
random embedding kind (sine / onehot / random orthogonal, all with ‖p_i‖² = μ) and each built-in loss,
``rwtoolkit.analyses.check.assert_matches_exact`` runs rwtoolkit.engines.numeric (float64, fast path and autograd reference path,
through ``conftest.rwnumeric_training``) and compares V, W x̃_N, the attention S and the output f of
every input, the loss and the population accuracy with the exact derivation at t = 0, 1, 2.

Tolerance RTOL = 1e-12 (tighter than the kit's default ``rwtoolkit.analyses.check.tolerance``, which is meant for any
implementation), relative to max(1, largest exact entry) of each compared array. Why it holds:
float64 rounds at 1.1e-16 per operation; a step is a few hundred operations on quantities whose size
the scale factor absorbs, and exp() of a logit l carries a relative error of about 1e-16·|l|, with
|l| ≲ μ²η ≤ 200 here (μ ≤ 10, η ≤ 2, two steps), so ≲ 2e-14; the random/sine P enter only through
W x̃_N (rounding ~1e-15 at M ≤ 64). Measured worst case over the ci examples: 8e-16. Why it
suffices: every fault of interest (a wrong softmax support, ε misplaced, a wrong rank-one update)
moves some compared value by 1e-3 or more (examples/bugs.py, tests/test_check_examples.py).

Accuracy: compared exactly, except at a step with an exact near-tie in f (a gap between 0 and twice
the tie tolerance), where the float tie rule may legitimately differ (rwtoolkit.analyses.check notes these steps).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from conftest import numeric_run, rwnumeric_training, scaled
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check import Mismatch, assert_matches_exact, build_config
from rwtoolkit.analyses.check.strategies import LOSSES, check_configs
from rwtoolkit.engines.numeric import ModelConfig
from rwtoolkit.tasks import CircleWalk, FiniteTask

RTOL = 1e-12
STEPS = 2


@pytest.mark.parametrize("loss", LOSSES)
@settings(max_examples=scaled(12))
@given(data=st.data())
def test_numeric_population_gd_equals_exact_trajectory_on_circle_walks(loss, data) -> None:
    config = data.draw(check_configs(task="circle", K=(3, 6), N=(2, 5), loss_names=(loss,)), label="config")
    event(f"embedding={config.embedding}")
    event(f"p in {{0, 1/2, 1}}: {config.task.p in (0, Fraction(1, 2), 1)}")
    assert_matches_exact(rwnumeric_training, config, STEPS, RTOL)


@pytest.mark.parametrize("loss", LOSSES)
@settings(max_examples=scaled(10))
@given(data=st.data())
def test_numeric_population_gd_equals_exact_trajectory_on_finite_tasks(loss, data) -> None:
    config = data.draw(check_configs(task="finite", loss_names=(loss,)), label="config")
    event(f"embedding={config.embedding}")
    assert_matches_exact(rwnumeric_training, config, STEPS, RTOL)


@settings(max_examples=scaled(4))
@given(data=st.data())
def test_reference_path_equals_exact_trajectory(data) -> None:
    """The autograd path (full W, explicit X̃) too, on circle walks with the log-loss."""
    config = data.draw(check_configs(task="circle", K=(3, 4), N=(2, 4)), label="config")
    assert_matches_exact(lambda cfg: rwnumeric_training(cfg, fast=False), config, STEPS, RTOL)


def test_a_wrong_learning_rate_is_caught_at_the_first_value_step() -> None:
    """The check can fail: rwtoolkit.engines.numeric run with η/2 diverges from the exact trajectory at V(1)."""
    config = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    halved = replace(config, eta=config.eta / 2)
    with pytest.raises(Mismatch) as caught:
        assert_matches_exact(lambda cfg: rwnumeric_training(halved), config, STEPS)
    assert (caught.value.divergence.step, caught.value.divergence.quantity) == (1, "V")


def test_single_input_population_trains() -> None:
    """Regression: a one-input population once failed (sp.ilcm needs two arguments)."""
    task = FiniteTask([[0]], [1], [1], K=2)
    run = numeric_run(task, ModelConfig(K=2, N=2, M=2, pos="onehot"), 1, Fraction(1), Fraction(1, 10), "log")
    assert run.history[0]["test_accuracy"] == 0.0  # f = 0: tie, ŷ = 0 ≠ y = 1
