"""The two-layer attention-only model (rwtoolkit.models.two_layer): its zero-start order of motion, and
``rw check --model two_layer`` on an independent plain implementation (examples/two_layer_torch.py: a
masked softmax, one concatenated A2, torch autograd), with two planted bugs caught at their quantity.

The plain implementation shares no code with the tape's forward pass (selection matrices, four A2
blocks), so its passing is a check of the tape's gradient of this model too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory
from rwtoolkit.engines.exact import derive_model
from rwtoolkit.models import get_model
from rwtoolkit.tasks import icl_markov_task

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "two_layer_torch.py"
OPTIONS = CheckOptions(steps=3, examples=3, model="two_layer", task="finite")
sys.path.insert(0, str(EXAMPLE.parent))
from two_layer_torch import FIRST_WRONG  # noqa: E402


def _moved(params) -> set[str]:
    return {name for name, value in params.items() if (np.asarray(value, dtype=object) != 0).any()}


def test_from_zero_V_moves_first_then_A2_then_A1() -> None:
    traj = derive_model(icl_markov_task(2, 4, 1), get_model("two_layer"), 3)
    assert [_moved(s.params) for s in traj.states] == [
        set(),
        {"V"},
        {"V", "A2xx", "A2xa", "A2ax", "A2aa"},
        {"V", "A1", "A2xx", "A2xa", "A2ax", "A2aa"},
    ]


def test_the_plain_implementation_passes() -> None:
    report = check(load_factory(f"{EXAMPLE}:model"), OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert all(rows[q] == "pass" for q in ("V", "A1", "A2xx", "A2xa", "A2ax", "A2aa", "S", "f", "loss"))


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    names = ("V", "A1", "A2xx", "A2xa", "A2ax", "A2aa", "S", "f", "loss")
    trajectory = [r.id for r in report.results if r.status == "fail" and r.id in names]
    assert report.exit_code == 1 and trajectory == [FIRST_WRONG[variant]], report.render()


def test_stuck_proof_of_two_layer_is_undecided_by_induction_and_decided_by_the_balls():
    """Layer 2's logits contain layer 1's exponentials: the induction step says so (undecided, never a
    pass) instead of raising, and the certified ball check finds the escape. Only the symmetries fixing
    every position act (the causal layer sees their order): order 3 of the task's 18."""
    from rwtoolkit.engines.exact import stuck_proof
    from rwtoolkit.tasks import CircleWalk

    report = stuck_proof(CircleWalk(3, 4, 1), "two_layer")
    assert report["symmetry"]["outcome"] == "undecided"
    assert "exponentials nest" in report["symmetry"]["reason"]
    assert report["group"]["order"] == 3
    assert report["verdict"] == "escapes" and report["ball_check"]["escape_step"] == 3
