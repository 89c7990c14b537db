"""``rw check --model key_query``: the reference implementation passes, wrong variants fail at their first wrong
quantity, and unsupported option combinations are refused in one line with exit code 2 before any work.

The oracle is the generic exact engine (``rwtoolkit.models.descend`` in ``rwtoolkit.engines.exact.arithmetic._models.EXACT`` on the task's
population, P = ``rwtoolkit.models.rational_positions(N, μ)``), independent of examples/key_query_torch.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from rwtoolkit.analyses.check import (
    CheckOptions,
    Mismatch,
    assert_matches_exact,
    build_config,
    check,
    for_model,
    load_factory,
)
from rwtoolkit.analyses.check._compare import expected_steps
from rwtoolkit.cli.main import main
from rwtoolkit.io import load_schema
from rwtoolkit.models import rational_positions
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "key_query_torch.py"
OPTIONS = CheckOptions(steps=2, examples=3, model="key_query")
TRAJECTORY_ROWS = ("V", "W_K", "W_Q", "S", "f", "loss", "accuracy")

sys.path.insert(0, str(EXAMPLE.parent))
from key_query_torch import FIRST_WRONG  # noqa: E402


@pytest.mark.parametrize("factory", ["model", "training"])
def test_key_query_reference_implementation_passes(factory) -> None:
    report = check(load_factory(f"{EXAMPLE}:{factory}"), OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert [r.id for r in report.results][: len(TRAJECTORY_ROWS)] == list(TRAJECTORY_ROWS)
    assert all(rows[q] == "pass" for q in ("V", "W_K", "W_Q", "S", "f", "loss"))
    assert rows["lemma_C1_first_value_step"] == "pass"
    assert rows["P_only_through_mu"] == "not checked"  # a statement about the paper's model
    assert "model key_query d=2" in report.render().splitlines()[0]


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_key_query_wrong_variant_fails_at_its_first_wrong_quantity(variant) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    assert report.exit_code == 1
    failed = [r for r in report.results if r.id in TRAJECTORY_ROWS and r.status == "fail"]
    assert [r.id for r in failed] == [FIRST_WRONG[variant]], report.render()
    text = failed[0].failure["text"]
    assert text.startswith(f"{FIRST_WRONG[variant]}[") and "expected" in text and "got" in text
    assert "model=key_query d=2" in failed[0].failure["config_text"]


def test_expected_values_are_the_exact_zero_init_dynamics() -> None:
    """From zero, W_K = W_Q = 0 and S = 1/N for every t; the config hands the implementation float(P)."""
    config = for_model(build_config(CircleWalk(3, 3, "1/2"), mu="7/2", eta=1, eps="1/10"), "key_query")
    assert config.head_dim == 2 and config.shapes == {"V": (3, 3), "W_K": (2, 7), "W_Q": (2, 7)}
    assert np.array_equal(config.P, np.asarray(rational_positions(3, "7/2"), dtype=float))
    expected = expected_steps(config, 3)
    for row in expected:
        assert not row["W_K"].any() and not row["W_Q"].any()
        np.testing.assert_array_equal(row["S"], np.full_like(row["S"], 1 / 3))
    assert expected[2]["V"].any() and not np.array_equal(expected[2]["V"], expected[1]["V"])


def test_assert_matches_exact_compares_another_model_by_its_parameters() -> None:
    """One comparison for every model: the reference implementation matches, and the transposed V fails at V
    (K = 4, p = 3/10: V(1) ∝ Πᵀ + (Πᵀ)² is not symmetric)."""
    config = for_model(build_config(CircleWalk(4, 3, "3/10"), mu=2, eta=1, eps="1/10"), "key_query")
    readouts = assert_matches_exact(load_factory(f"{EXAMPLE}:model"), config, 2)
    assert list(readouts.values)[:3] == ["V", "W_K", "W_Q"]
    with pytest.raises(Mismatch) as caught:
        assert_matches_exact(load_factory(f"{EXAMPLE}:transposed_V"), config, 2)
    assert caught.value.divergence.quantity == FIRST_WRONG["transposed_V"]


def test_rw_check_model_console_passes_with_a_valid_report(tmp_path, capsys) -> None:
    out = tmp_path / "report.json"
    code = main(
        ["check", "--model", "key_query", "--head-dim", "3", f"{EXAMPLE}:model", "--steps", "1",
         "--examples", "1", "--json", str(out)]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "model key_query d=3" in printed and "0 fail" in printed
    data = json.loads(out.read_text())
    jsonschema.validate(data, load_schema("report"))
    assert data["options"]["model"] == {"name": "key_query", "d": 3}


def test_rw_check_model_console_reports_the_first_difference(capsys) -> None:
    code = main(
        ["check", "--model", "key_query", f"{EXAMPLE}:transposed_V", "--steps", "1", "--examples", "1"]
    )
    printed = capsys.readouterr().out
    assert code == 1
    assert "first divergence: V[" in printed and "at t=1" in printed


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--head-dim", "2"],
            "--head-dim is out of place: --model one_layer has no head dimension",
        ),
        (
            ["--model", "one_layer", "--head-dim", "2"],
            "--model one_layer has no head dimension (leave it out)",
        ),
        (["--model", "key_query", "--head-dim", "0"], "--head-dim=0 is out of range"),
        (["--model", "key_query", "--head-dim", "two"], "--head-dim='two' is not an integer"),
        (["--model", "key_query", "--head-dim", "-1"], "--head-dim=-1 is out of range"),
        (
            ["--model", "key_query", "--emit", "never-written"],
            "--emit writes frozen oracles of the paper's model",
        ),
    ],
)
def test_unsupported_combinations_are_refused_in_one_line(
    argv, message, capsys, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written: the target does not even exist
    code = main(["check", "no_such_module:factory", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir())


def test_options_refuse_a_head_dim_for_the_paper_model_and_keep_its_report() -> None:
    with pytest.raises(ValueError, match="model 'one_layer' has no hyperparameter 'd'"):
        CheckOptions(head_dim=2)
    with pytest.raises(ValueError, match="is not a registered model"):
        CheckOptions(model="two_heads")
    frozen = load_factory(f"{ROOT / 'examples' / 'bugs.py'}:transposed_V")
    report = check(frozen, CheckOptions(steps=1, examples=1))
    assert "model" not in report.to_json()["options"] and "model" not in report.render().splitlines()[0]
