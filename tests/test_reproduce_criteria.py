"""The report's criteria, checked on hand-made run outcomes (no training): each threshold decides as stated."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rwtoolkit.analyses.repro import (
    accuracy_tolerance,
    break_steps,
    expand_targets,
    first_step_staying,
    support_matches,
)
from rwtoolkit.analyses.repro._claims import failure_claims, fig6_claims, qa_claims, success_claims
from rwtoolkit.cli.main import main
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

# The report's thresholds, pinned by value here (never imported from rwtoolkit.analyses.repro): moving one in the code
# must fail a test below. "Attention on the parent ≈ 1" means at least 0.9; "V ∝ all-ones" means a
# relative residual at most 0.1; "equal attention" means a spread at most 1e-3; "≈ 400 iterations"
# means within a factor 2, [200, 800].
PARENT_MIN = 0.9
ONES_MAX = 0.1
SPREAD_MAX = 1e-3
FIG6_WINDOW = (200, 800)


def _outcome(K: int, N: int, p: str, n_test: int = 1000, **series) -> dict:
    """A run outcome as rwtoolkit.analyses.repro._runner.run_one writes it, with the given metric series."""
    T = len(next(iter(series.values())))
    full = {
        k: series.get(k, [0.0] * T)
        for k in (
            "test_accuracy",
            "parent_attention",
            "attention_spread",
            "ones_residual",
            "v_direction_error",
            "kl",
        )
    }
    prof = [0.0] * N
    prof[N - 2] = full["parent_attention"][-1]
    return {
        "ok": True,
        "error": None,
        "config": {"task": {"K": K, "N": N, "p": p}, "train": {"test_size": n_test}},
        "series": full,
        "final": {"V": np.eye(K).tolist(), "attention_profile": prof},
    }


def test_accuracy_tolerance_is_three_binomial_standard_deviations():
    # hand calculation: 3·sqrt(0.5·0.5/1000) = 3·0.0158114 = 0.0474342
    assert math.isclose(accuracy_tolerance(0.5, 1000), 0.0474342, abs_tol=1e-7)
    assert accuracy_tolerance(1.0, 50) == 0.0


def test_first_step_staying_ignores_an_early_visit_that_does_not_last():
    assert first_step_staying([0.5, 0.1, 0.49, 0.51, 0.5], lambda a: abs(a - 0.5) < 0.05) == 2
    assert first_step_staying([0.5, 0.5, 0.1], lambda a: a > 0.3) is None


def test_support_matches_requires_the_largest_entries_on_the_transposed_transition_pattern():
    Pi = CircleWalk(5, 5, "3/4").transition_matrix_float()
    assert support_matches(3 * Pi.T + 0.1, Pi)
    assert not support_matches(3 * Pi + 0.1, Pi)  # Π instead of Πᵀ: the counter-clockwise entries lead
    assert not support_matches(np.ones((5, 5)) + np.eye(5), Pi)


def test_success_claims_follow_their_thresholds():
    K, N = 6, 9
    Pi = CircleWalk(K, N, "1/2").transition_matrix_float()
    good = _outcome(
        K,
        N,
        "1/2",
        test_accuracy=[0.2, 0.5, 0.49],
        parent_attention=[0.1, PARENT_MIN],
        v_direction_error=[1.0, 0.2],
    )
    good["series"]["test_accuracy"] = [0.2, 0.5, 0.49]
    good["final"]["V"] = (Pi.T + 0.01).tolist()
    rows = success_claims("fig4", good, few_steps=True)
    assert [r.passed for r in rows] == [True, True, True, True]
    bad = _outcome(
        K,
        N,
        "1/2",
        test_accuracy=[0.2, 0.3],
        parent_attention=[0.1, PARENT_MIN - 0.01],
        v_direction_error=[1.0, 0.6],
    )
    bad["final"]["V"] = (Pi.T + 0.01).tolist()
    assert [r.passed for r in success_claims("fig8", bad, few_steps=False)] == [False, False, False]


def test_failure_claims_fail_as_soon_as_one_iteration_breaks_the_symmetry():
    K, N = 6, 13
    flat = _outcome(
        K,
        N,
        "1",
        test_accuracy=[1 / 6] * 3,
        attention_spread=[0.0, 0.0, SPREAD_MAX],
        ones_residual=[0.0, 0.03, ONES_MAX],
    )
    assert [r.passed for r in failure_claims("fig5", flat)] == [True, True, True]
    broken = _outcome(
        K,
        N,
        "1",
        test_accuracy=[1 / 6, 1.0, 1 / 6],
        attention_spread=[0.0, 2 * SPREAD_MAX, 0.0],
        ones_residual=[0.0, 0.0, 2 * ONES_MAX],
    )
    assert [r.passed for r in failure_claims("fig5", broken)] == [False, False, False]


def test_fig6_timing_claim_uses_the_factor_two_window_around_400():
    acc = [0.2] * (FIG6_WINDOW[0] + 50) + [0.5] * 800
    half = _outcome(6, 97, "1/2", test_accuracy=acc, kl=[1.0] * (len(acc) - 1) + [0.1])
    one = _outcome(6, 97, "1", test_accuracy=[0.9] * len(acc), kl=[2.0] * (len(acc) - 1) + [0.5])
    rows = fig6_claims("fig6", half, one)
    assert [r.passed for r in rows] == [True, True, True, True]
    assert "iteration 250" in rows[0].evidence[0]
    late = _outcome(
        6, 97, "1/2", test_accuracy=[0.2] * (FIG6_WINDOW[1] + 1) + [0.5], kl=[1.0] * (FIG6_WINDOW[1] + 2)
    )
    assert not fig6_claims("fig6", late, one)[0].passed


def test_qa_claims_and_a_failed_run_is_inconclusive_not_a_crash():
    t1 = _outcome(19, 17, "", test_accuracy=[0.5] * 100 + [1.0] * 5)
    t2 = _outcome(19, 19, "", test_accuracy=[0.5, 0.52, 0.49])
    assert [r.passed for r in qa_claims("fig7", t1, t2)] == [True, True]
    lost = _outcome(19, 17, "", test_accuracy=[0.5, 1.0, 1.0, 0.5])  # reached 100 % but did not keep it
    row = qa_claims("fig10", lost, t2)[0]
    assert not row.passed and "not kept" in row.evidence[0]
    late = _outcome(19, 17, "", test_accuracy=[0.5] * 101 + [1.0])
    assert not qa_claims("fig7", late, t2)[0].passed
    failed = {"ok": False, "error": "metric 'kl' is not finite at step 3: the run diverged (lower eta)"}
    rows = qa_claims("fig7", failed, t2)
    assert rows[0].verdict is Verdict.INCONCLUSIVE and "diverged" in rows[0].evidence[0]
    assert rows[0].to_dict()["agrees"] is False  # report.json: a failed run never agrees


def test_break_steps_reports_the_first_crossing_of_each_threshold():
    s = {
        "attention_spread": [0.0, SPREAD_MAX, 5 * SPREAD_MAX, 0.0],
        "v_column_residual": [0.0, 0.0, 0.0, 0.01],
        "ones_residual": [0.0, 0.0, 0.0, 0.5],
        "test_accuracy": [1 / 6, 1 / 6, 1 / 6, 1.0],
    }
    assert break_steps(s, 6, 1000) == {
        "spread_break": 2,
        "v_break": 3,
        "break_step": 2,
        "ones_break": 3,
        "accuracy_leaves": 3,
    }
    # label-count imbalance puts V a few per cent from all-ones, but the form a·1ᵀ is exact: no break
    still = {
        "attention_spread": [0.0] * 3,
        "v_column_residual": [0.0] * 3,
        "ones_residual": [0.04] * 3,
        "test_accuracy": [0.17] * 3,
    }
    assert break_steps(still, 6, 1000)["break_step"] is None


def test_targets_expand_in_the_papers_order_and_all_includes_the_sensitivity_study():
    names = expand_targets(["all"])
    assert names[0] == "fig2" and names[-1] == "sensitivity" and len(names) == 12
    with pytest.raises(ValueError, match="FIG='fig3' is not one of fig2, fig4"):
        expand_targets(["fig3"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["reproduce", "fig3", "--out", "x"], "FIG='fig3' is not one of"),
        (["reproduce", "fig4", "--out", "x", "--jobs", "0"], "--jobs=0 is out of range"),
        (["reproduce", "fig4", "--out", "x"], "--out x: exists and is a file, not a folder"),
    ],
    ids=["unknown-figure", "zero-jobs", "out-is-a-file"],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if "not a folder" in message:
        (tmp_path / "x").write_text("not a folder")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").is_dir()
