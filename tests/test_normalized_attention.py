"""``normalized_attention``: the paper's model with x̂_j = x̃_j/‖x̃_j‖ in the scores (paper Fig 6), a model of record.

The registered model is checked against the reduced torch fast path with ``normalize_attention`` (``FastModel``,
written independently in reduced coordinates), in float64 and from the exact engine's trajectory, and its exact
trajectory against two facts derived by hand: V(1) is Lemma C.1's (S(0) is uniform whatever the lengths), and at
μ = 9/16, where the lengths √(1 + μ) = 5/4 and √μ = 3/4 are rational, every step before the first non-zero logit
is a rational state. ``rw check --model normalized_attention`` passes an independent plain implementation
(examples/normalized_attention_torch.py) and fails its planted bug at the first wrong quantity.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from rwtoolkit.analyses.check import CheckOptions, check, load_factory
from rwtoolkit.engines.exact import EXACT, derive, derive_model
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train, train_model
from rwtoolkit.models import get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

MU = Fraction(9, 16)
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "normalized_attention_torch.py"
OPTIONS = CheckOptions(steps=2, examples=3, model="normalized_attention")
sys.path.insert(0, str(EXAMPLE.parent))
from normalized_attention_torch import FIRST_WRONG  # noqa: E402


def _fast_path(task: CircleWalk, P: np.ndarray, steps: int) -> list[dict]:
    """V(t) and w(t) = W(t) x̃_N of ``rw train --normalize-attention`` (the reduced FastModel)."""
    model = ModelConfig(K=task.K, N=task.N, M=P.shape[0], pos=P, mu=float(MU), normalize_attention=True)
    cfg = TrainConfig(steps=steps, population=True, record_params=True, eta=1.0, eps=0.1)
    result = train(task, model, cfg, progress=False)
    assert result.params is not None
    return [result.params[t] for t in range(steps + 1)]


@pytest.mark.parametrize("task", [CircleWalk(3, 4, "3/10"), CircleWalk(4, 3, "1/2")], ids=str)
def test_the_model_trains_as_the_fast_path_with_normalised_inputs(task: CircleWalk) -> None:
    P = np.asarray(rational_positions(task.N, MU), dtype=np.float64)
    steps = 6
    fast = _fast_path(task, P, steps)
    generic = train_model(task, get_model("normalized_attention"), P, steps, keep_params=True)
    xN = np.concatenate([np.zeros(task.K), P[:, -1]])
    for t in range(steps + 1):
        V, W = generic.params[t]["V"], generic.params[t]["W"]
        np.testing.assert_allclose(V, fast[t]["V"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(W @ xN, fast[t]["w"], rtol=1e-12, atol=1e-13)
    assert np.abs(generic.params[steps]["W"] @ xN).max() > 1e-3  # the attention moved


def test_the_exact_trajectory_is_rational_at_mu_9_16_and_its_floats_are_the_fast_paths() -> None:
    task = CircleWalk(3, 4, "3/10")
    traj = derive_model(task, get_model("normalized_attention"), 3, mu=str(MU))
    # V(1) is Lemma C.1's: the paper's model's, since S(0) is uniform whatever the lengths
    paper = derive(task, 1, mu=str(MU))
    assert [str(x) for x in traj.states[1].params["V"].ravel()] == [str(x) for x in paper.states[1].V]
    # W moves at t = 2 from logits that are still 0 at t = 1: rational, because 5/4 and 3/4 are
    for t in (1, 2):
        assert all(isinstance(x, fmpq) for v in traj.states[t].params.values() for x in v.ravel())
    assert any(x != 0 for x in traj.states[2].params["W"].ravel())
    P = np.asarray(rational_positions(task.N, MU), dtype=np.float64)
    fast = _fast_path(task, P, 3)
    xN = P[:, -1]
    for t, state in enumerate(traj.states):
        V = EXACT.to_float(state.params["V"])
        w = EXACT.to_float(state.params["W"])[:, task.K :] @ xN
        np.testing.assert_allclose(V, fast[t]["V"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(w, fast[t]["w"], rtol=1e-12, atol=1e-13)


def test_the_plain_implementation_passes_rw_check() -> None:
    report = check(load_factory(f"{EXAMPLE}:model"), OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert rows["V"] == rows["W"] == rows["S"] == rows["f"] == rows["loss"] == "pass"


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_the_planted_bug_fails_at_its_first_wrong_quantity(variant: str) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    trajectory = [r.id for r in report.results if r.status == "fail" and r.id in ("V", "W", "S", "f", "loss")]
    assert report.exit_code == 1 and trajectory == [FIRST_WRONG[variant]], report.render()
