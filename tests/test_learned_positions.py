"""Learned positional embeddings (rwtoolkit.models.learned_positions): the order of motion from zero, the stuck
proof with the positions' symmetry, the dynamics depending on P itself, and ``rw check --model
learned_positions`` on an independent plain implementation (examples/learned_positions_torch.py:
P + ΔP built by hand, torch autograd) with two planted bugs caught at ΔP.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory
from rwtoolkit.engines.exact import derive_model, stuck_proof
from rwtoolkit.engines.numeric import positional_embeddings, train_model
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "learned_positions_torch.py"
OPTIONS = CheckOptions(steps=3, examples=3, model="learned_positions")
sys.path.insert(0, str(EXAMPLE.parent))
from learned_positions_torch import FIRST_WRONG  # noqa: E402


def test_from_zero_V_then_W_then_the_positions_move() -> None:
    traj = derive_model(CircleWalk(3, 4, "1/2"), get_model("learned_positions"), 3)
    moved = [
        {k for k, v in s.params.items() if (np.asarray(v, dtype=object) != 0).any()} for s in traj.states
    ]
    assert moved == [set(), {"V"}, {"V", "W"}, {"V", "W", "dP"}]


def test_the_stuck_case_is_proved_with_the_positions_permuted() -> None:
    proof = stuck_proof(CircleWalk(3, 4, 1), get_model("learned_positions"))
    assert proof["verdict"] == "stuck for all t (proved)"
    assert proof["symmetry"]["subspace"]["parameters"]["dP"] == [4, 4]


def test_the_positions_leave_mu_I_but_the_run_depends_on_P0_only_through_its_gram() -> None:
    """Trained, P(t) = P(0) + ΔP(t) stops having PᵀP = μI (the paper's reduction to (V, w_tok, c) fails).
    Yet two starts P(0) with the same Gram μI give the same run: P2 = Q P1 for an orthogonal Q, and GD on
    (V, W, ΔP) is equivariant under Q, so losses and Grams P(t)ᵀP(t) agree and only the bases differ."""
    task = CircleWalk(3, 4, "1/2")
    P1 = positional_embeddings("sine", 6, 4, 1.0, 0)
    P2 = positional_embeddings("random", 6, 4, 1.0, 3)
    assert np.allclose(P1.T @ P1, P2.T @ P2, atol=1e-12) and not np.allclose(P1, P2)
    runs = [
        train_model(task, get_model("learned_positions"), P, 12, eta=2.0, keep_params=True) for P in (P1, P2)
    ]
    grams = [
        (P + r.params[12]["dP"]).T @ (P + r.params[12]["dP"]) for P, r in zip((P1, P2), runs, strict=True)
    ]
    assert np.abs(grams[0] - np.eye(4)).max() > 1e-6  # left μI
    np.testing.assert_allclose(grams[0], grams[1], atol=1e-12)  # the same Gram from either start
    assert abs(runs[0].history[-1]["train_loss"] - runs[1].history[-1]["train_loss"]) < 1e-12
    assert np.abs(runs[0].params[12]["dP"] - runs[1].params[12]["dP"]).max() > 1e-6  # in different bases


def test_the_plain_implementation_passes() -> None:
    report = check(load_factory(f"{EXAMPLE}:model"), OPTIONS)
    assert report.exit_code == 0, report.render()
    assert {r.id: r.status for r in report.results}["dP"] == "pass"


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    trajectory = [
        r.id for r in report.results if r.status == "fail" and r.id in ("V", "W", "dP", "S", "f", "loss")
    ]
    assert report.exit_code == 1 and trajectory == [FIRST_WRONG[variant]], report.render()
