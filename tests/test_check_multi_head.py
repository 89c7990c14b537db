"""``rw check --model multi_head``: an independent plain implementation passes, planted bugs fail at their quantity.

examples/multi_head_torch.py (stacked V (H, K, K), W (H, K+M, K+M), H = 2) against the generic exact engine
(``rwtoolkit.models.descend`` of ``multi_head`` on the population, P = ``rwtoolkit.models.rational_positions(N, μ)``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "multi_head_torch.py"
OPTIONS = CheckOptions(steps=2, examples=3, model="multi_head")
sys.path.insert(0, str(EXAMPLE.parent))
from multi_head_torch import FIRST_WRONG  # noqa: E402


def test_the_plain_multi_head_implementation_passes() -> None:
    report = check(load_factory(f"{EXAMPLE}:model"), OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert rows["V"] == rows["W"] == rows["S"] == rows["f"] == "pass"
    assert rows["lemma_C1_first_value_step"] == "pass"  # every head's V_h(1) is the one-head V(1)


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    trajectory = [r.id for r in report.results if r.status == "fail" and r.id in ("V", "W", "S", "f", "loss")]
    assert report.exit_code == 1 and trajectory == [FIRST_WRONG[variant]], report.render()


def test_three_heads_pass_through_rw_check_and_the_report_names_them(tmp_path) -> None:
    import json

    from rwtoolkit.cli.main import main

    out = tmp_path / "report.json"
    args = [
        "check",
        "--model",
        "multi_head",
        "--heads",
        "3",
        f"{EXAMPLE}:model",
        "--steps",
        "2",
        "--examples",
        "2",
    ]
    assert main([*args, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["options"]["model"] == {"name": "multi_head", "H": 3} and data["exit_code"] == 0
    assert (
        main(["check", "--model", "multi_head", "--heads", "3", f"{EXAMPLE}:shared_softmax", "--steps", "2"])
        == 1
    )


KQ_EXAMPLE = ROOT / "examples" / "multi_head_key_query_torch.py"
KQ_OPTIONS = CheckOptions(steps=2, examples=3, model="multi_head", head_dim=2)


def test_the_plain_key_query_heads_pass() -> None:
    report = check(load_factory(f"{KQ_EXAMPLE}:model"), KQ_OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert rows["V"] == rows["W_K"] == rows["W_Q"] == rows["S"] == rows["f"] == "pass"


@pytest.mark.parametrize("variant", ["averaged_heads", "default_init"])
def test_each_key_query_heads_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    from multi_head_key_query_torch import FIRST_WRONG as KQ_FIRST_WRONG

    report = check(load_factory(f"{KQ_EXAMPLE}:{variant}"), KQ_OPTIONS)
    names = ("V", "W_K", "W_Q", "S", "f", "loss")
    trajectory = [r.id for r in report.results if r.status == "fail" and r.id in names]
    assert report.exit_code == 1 and trajectory == [KQ_FIRST_WRONG[variant]], report.render()
