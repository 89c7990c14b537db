"""``rw zoo``: the catalogue, every claim's verdict (pinned), the report files, the certified ball engine
of registered models against the exact engine, and bad input.

The verdicts are pinned by value: a change to a model, a task or a claim's criterion that flips one fails
here. The ball engine is checked against ``rwtoolkit.engines.exact.derive_model`` (exact rationals and SymPy atoms) at
the early steps of the two-layer model: every exact value lies in its ball.
"""

from __future__ import annotations

import json
from fractions import Fraction

import jsonschema
import numpy as np
import pytest
import sympy as sp
from flint import arb, fmpq

from rwtoolkit.analyses.zoo import CLAIMS, catalogue, report_json, report_markdown, run_claims
from rwtoolkit.analyses.zoo._claims import icl_predictors, r_squared
from rwtoolkit.cli.main import main
from rwtoolkit.engines.balls import ball_estimate, ball_model_trajectory
from rwtoolkit.engines.exact import derive_model
from rwtoolkit.engines.exact.arithmetic._atoms import expand_atoms
from rwtoolkit.io import load_schema
from rwtoolkit.models import get_model, model_names
from rwtoolkit.tasks import FAMILIES, icl_markov_task

QUICK_VERDICTS = {
    "key_query_stuck": "proved",
    "identical_heads": "proved",
    "linear_zero_fixed": "proved",
    "learned_positions_stuck": "proved",
    "makkuva_unigram_point": "refuted",
    "makkuva_tied_unigram": "holds at the sizes checked",
    "makkuva_unigram_point_paper": "holds at the sizes checked",
    "edelman_stages": "holds at the sizes checked",
    "edelman_stages_paper": "does not hold at the sizes checked",
    "nichani_parent_attention": "does not hold at the sizes checked",
    "nichani_parent_attention_paper": "holds at the sizes checked",
}


@pytest.fixture(scope="module")
def quick_results():
    return run_claims(quick=True)


def test_the_catalogue_lists_every_model_task_and_claim() -> None:
    data = catalogue()
    assert [m["name"] for m in data["models"]] == list(model_names())
    assert {t["name"] for t in data["tasks"]} == set(FAMILIES)
    assert [c["name"] for c in data["claims"]] == list(CLAIMS)


def test_every_claim_has_its_pinned_verdict(quick_results) -> None:
    assert {claim.id: claim.verdict for claim in quick_results} == QUICK_VERDICTS
    for claim in quick_results:
        assert claim.evidence and claim.configurations, claim.id


def test_the_report_validates_and_has_the_same_bytes_twice(tmp_path, quick_results) -> None:
    data = report_json(quick_results, quick=True)
    jsonschema.validate(data, load_schema("zoo"))
    for out in (tmp_path / "a", tmp_path / "b"):
        assert main(["zoo", "claims", "--quick", "--claim", "linear_zero_fixed", "--out", str(out)]) == 0
    assert (tmp_path / "a" / "zoo.json").read_bytes() == (tmp_path / "b" / "zoo.json").read_bytes()
    assert (tmp_path / "a" / "ZOO.md").read_bytes() == (tmp_path / "b" / "ZOO.md").read_bytes()
    assert (tmp_path / "a" / "figures" / "linear_zero_fixed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![linear_zero_fixed](figures/linear_zero_fixed.png)" in (tmp_path / "a" / "ZOO.md").read_text()
    row = json.loads((tmp_path / "a" / "zoo.json").read_text())["claims"][0]
    assert row["command"] == "rw zoo claims --claim linear_zero_fixed --out out/zoo"


#: The rows that check a paper's claim on this toolkit's simplified model, and those whose verdict follows from
#: the model class alone (issue 42: labelled, and saying why).
PROXY_ROWS = {"makkuva_unigram_point", "makkuva_tied_unigram", "edelman_stages", "nichani_parent_attention"}
VACUOUS_ROWS = {"makkuva_unigram_point", "edelman_stages"}


def test_proxy_and_vacuous_rows_are_labelled_in_both_reports(quick_results) -> None:
    assert {c.id for c in CLAIMS.values() if c.proxy} == PROXY_ROWS
    assert {c.id for c in CLAIMS.values() if c.vacuous} == VACUOUS_ROWS
    data = report_json(quick_results, quick=True)
    rows = {row["id"]: row for row in data["claims"]}
    assert {i for i, row in rows.items() if row["proxy"]} == PROXY_ROWS
    assert {i for i, row in rows.items() if row["vacuous"] is not None} == VACUOUS_ROWS
    table = {
        line.split("`")[1]: line
        for line in report_markdown(data, None).splitlines()
        if line.startswith("| `")
    }
    for claim_id, line in table.items():
        assert ("**proxy**" in line) == (claim_id in PROXY_ROWS), claim_id
        assert ("**Vacuous:**" in line) == (claim_id in VACUOUS_ROWS), claim_id


def test_the_balls_contain_the_exact_two_layer_trajectory() -> None:
    task, model = icl_markov_task(2, 4, 1), get_model("two_layer")
    exact = derive_model(task, model, 3)
    traj = ball_model_trajectory(task, model, 3)
    balls = {r.step: r.state for r in traj.records}
    assert traj.prec >= 256
    for t in range(4):
        for name, value in exact.states[t].params.items():
            flat = np.asarray(value, dtype=object).ravel()
            pairs = list(zip(flat, balls[t].params[name].ravel(), strict=True))
            for x, ball in pairs if t < 3 else pairs[:: max(1, len(pairs) // 4)]:  # t = 3: every 4th of 36
                assert _enclosure(x).overlaps(ball) and ball.rad() < 1e-60, (t, name, x, ball)


def _enclosure(x) -> arb:
    """A ball around an exact engine value: exact for a rational, ±1e-70 around 80 SymPy digits otherwise."""
    if isinstance(x, fmpq):
        return arb(x)
    return arb(str(sp.N(expand_atoms(x), 80)), "1e-70")


def test_the_ball_estimate_refuses_before_work() -> None:
    task, model = icl_markov_task(2, 8, 1), get_model("two_layer")
    assert ball_estimate(task, model, 100000) > 3600
    with pytest.raises(ValueError, match=r"steps=100000: the certified run is estimated at \d+ s"):
        ball_model_trajectory(task, model, 100000)


def test_the_predictors_and_the_correlation_by_hand() -> None:
    p = icl_predictors(icl_markov_task(2, 4, 1))
    # context 0, 1, 0: unigram (2+1, 1+1)/(3+2); after the last 0 the context saw 0 -> 1 once: (0+1, 1+1)/(1+2)
    row = [list(map(int, x)) for x in [[0, 1, 0]]]
    tokens = icl_markov_task(2, 4, 1).population().tokens.tolist()
    n = tokens.index(row[0])
    assert list(p["unigram"][n]) == [Fraction(3, 5), Fraction(2, 5)]
    assert list(p["bigram"][n]) == [Fraction(1, 3), Fraction(2, 3)]
    f = np.array([[arb(1), arb(2)], [arb(3), arb(5)]], dtype=object)
    q = np.array([[Fraction(1), Fraction(0)], [Fraction(2), Fraction(1)]], dtype=object)
    q = np.vectorize(lambda x: arb(x.numerator) / x.denominator, otypes=[object])(q)
    r2 = r_squared(f, q, [arb(1) / 4, arb(3) / 4])
    w = np.repeat([0.25, 0.75], 2)
    fv, qv = np.array([1, 2, 3, 5.0]), np.array([1, 0, 2, 1.0])
    cov = np.sum(w * (fv - np.sum(w * fv) / 2) * (qv - np.sum(w * qv) / 2))
    want = cov**2 / (np.sum(w * (fv - np.sum(w * fv) / 2) ** 2) * np.sum(w * (qv - np.sum(w * qv) / 2) ** 2))
    assert abs(float(r2.mid()) - want) < 1e-12


@pytest.mark.parametrize(
    "argv, message",
    [
        (["zoo", "claims", "--claim", "nope", "--out", "X"], "--claim 'nope' is not a claim id"),
        (["zoo", "claims"], "rw zoo claims needs --out DIR"),
        (["zoo", "list", "--out", "X"], "rw zoo list takes no --claim, --out, --figures or --quick"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, message, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "X").exists()
