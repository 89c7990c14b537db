"""``rw certify`` at a precision too low for the run (issue 22, item 5): unbounded balls, printed intervals, --tol.

Each test fails on the code before the fix: the run stopped by too wide balls was refused with
"not JSON compliant: inf" (exit 2) or a traceback, CERTIFY.md printed flint's "[0.6 +/- 0.0517]" and
"mid ± rad", and the terminal did not say that --tol was not met.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction

import jsonschema
import numpy as np
import pytest
from flint import arb, arb_mat

from rwtoolkit.cli.main import main
from rwtoolkit.engines.balls import ball_json, certify
from rwtoolkit.io import Verdict, load_schema
from rwtoolkit.tasks import CircleWalk

#: A 3-cycle population task; at 16 bits its balls stop the trajectory at step 5 (z + ε no longer > 0).
TASK = ["certify", "--K", "3", "--N", "4", "--p", "1/2", "--M", "8", "--population"]
STOPS = [*TASK, "--prec", "16", "--max-prec", "16", "--steps", "10"]
#: The same for 3 steps: it finishes, with balls far wider than the default --tol 1e-20.
WIDE = [*TASK, "--prec", "16", "--max-prec", "16", "--steps", "3"]


def _strict_json(path) -> dict:
    """The file parsed by a reader that refuses NaN and ±Infinity (what a JSON-compliant consumer sees)."""

    def refuse(name: str):
        raise AssertionError(f"{path} holds the non-JSON constant {name}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _finite_numbers(obj) -> bool:
    if isinstance(obj, float):
        return np.isfinite(obj)
    if isinstance(obj, dict):
        return all(_finite_numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_finite_numbers(v) for v in obj)
    return True


def _ends(text: str) -> tuple[Decimal, Decimal]:
    m = re.fullmatch(r"\[(\S+), (\S+)\]", text)
    assert m, text
    return Decimal(m[1]), Decimal(m[2])


def _encloses(text: str, ball: dict) -> bool:
    """The printed interval contains [mid - rad, mid + rad], computed exactly from the float64 pair."""
    lo, hi = _ends(text)
    mid, rad = Decimal(ball["mid"]), Decimal(ball["rad"])
    return lo <= mid - rad and mid + rad <= hi and lo <= hi


def test_a_run_stopped_by_unbounded_balls_writes_compliant_json_with_inconclusive_outcomes(tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*STOPS, "--float-gram", "none", "--out", str(out)]) == 0  # as any inconclusive run
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "error" not in captured.err
    data = _strict_json(out / "certify.json")
    jsonschema.validate(data, load_schema("certify"))
    assert _finite_numbers(data)
    assert data["precision"]["stopped"].startswith("step 5 at 16 bits")
    assert data["precision"]["attempts"] == [{"prec": 16, "max_relative_radius": None, "unbounded": True}]
    assert data["precision"]["tolerance_met"] is False
    assert {s["outcome"] for s in data["statements"]} == {"inconclusive"}
    assert [s["step"] for s in data["steps"]] == [0, 1, 2, 3, 4]  # the steps it computed are kept
    md = (out / "CERTIFY.md").read_text(encoding="utf-8")
    assert "widest relative radius unbounded" in md and not re.search(r"\b(inf|nan)\b", md, re.IGNORECASE)
    assert "z + eps ∈ (-∞, +∞)" in captured.out  # the stop reason, not flint's "nan"


def test_a_stopped_run_with_no_recorded_step_compares_nothing_and_exits_like_an_inconclusive_run(tmp_path):
    out = tmp_path / "o"
    assert main([*STOPS, "--record-steps", "10", "--out", str(out)]) == 0  # float comparison on
    data = _strict_json(out / "certify.json")
    jsonschema.validate(data, load_schema("certify"))
    assert data["steps"] == [] and data["float_comparison"]["steps"] == []
    assert "not compared" in data["float_comparison"]["summary"]


def test_non_finite_balls_export_as_unbounded_and_the_schema_accepts_only_that_form():
    from rwtoolkit.engines.balls._balls import UNBOUNDED, interval_text

    for x in (arb("nan"), arb("0 +/- inf"), arb(10) ** 400, arb(2) ** 2**70):
        assert ball_json(x) == UNBOUNDED, x
    ball = load_schema("certify")["$defs"]["ball"]
    resolver = {"$defs": load_schema("certify")["$defs"], **ball}
    jsonschema.validate(UNBOUNDED, resolver)
    for bad in ({"mid": None, "rad": None}, {"mid": 0.5, "rad": None, "unbounded": True}, {"mid": 0.5}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, resolver)
    assert interval_text(UNBOUNDED) == "(-∞, +∞)"


def test_an_unbounded_ball_in_a_step_is_exported_and_printed_without_nan_or_inf():
    from rwtoolkit.engines.balls import certify_json, certify_markdown

    cert = certify(CircleWalk(3, 4, "1/2"), M=8, steps=2, population=True, prec=64, max_prec=64)
    rec = cert.trajectory.records[-1]
    rec.train_loss = arb("nan")  # what a too-low precision can leave in a record
    rec.evaluation.attention_profile[-2] = arb("0 +/- inf")
    data = certify_json(cert)
    jsonschema.validate(data, load_schema("certify"))
    json.dumps(data, allow_nan=False)
    assert data["steps"][-1]["train_loss"] == data["steps"][-1]["parent_attention"]
    assert data["steps"][-1]["train_loss"] == {"mid": None, "rad": None, "unbounded": True}
    row = certify_markdown(data).splitlines()[-1]
    assert row.startswith("| 2 | (-∞, +∞) | (-∞, +∞) | [") and "+/-" not in row


def test_certify_keeps_every_attempt_json_compliant_at_low_precision():
    cert = certify(CircleWalk(3, 4, "1/2"), M=8, steps=10, population=True, prec=16, max_prec=16)
    assert {s.outcome for s in cert.statements} == {Verdict.INCONCLUSIVE}
    json.dumps(cert.attempts, allow_nan=False)  # rw proofs copies the attempts into its JSON as they are


def test_the_report_prints_each_enclosure_as_an_interval_with_both_ends(tmp_path):
    out = tmp_path / "o"
    assert main([*WIDE, "--float-gram", "none", "--out", str(out)]) == 0
    md = (out / "CERTIFY.md").read_text(encoding="utf-8")
    data = _strict_json(out / "certify.json")
    assert "+/-" not in md and "±" not in md
    detail = next(s["detail"] for s in data["statements"] if s["name"] == "parent_attention")
    interval = re.fullmatch(r"parent attention ∈ (\[.*\])", detail)
    assert interval and f"| {detail} |" in md
    assert _encloses(interval[1], data["steps"][-1]["parent_attention"])
    rows = [line for line in md.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) == len(data["steps"]) == 4
    for row, step in zip(rows, data["steps"], strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        for cell, key in zip(
            cells[1:4], ("train_loss", "parent_attention", "mean_attention_spread"), strict=True
        ):
            assert _encloses(cell, step[key]), (step["step"], key, cell)


def test_printed_intervals_are_rounded_outward_and_show_both_ends():
    from rwtoolkit.engines.balls._balls import interval_text

    assert interval_text({"mid": 0.0, "rad": 1.02}) == "[-1.03, 1.03]"  # flint prints this ball "[+/- 1.02]"
    assert interval_text({"mid": 0.5, "rad": 0.0}) == "[0.5, 0.5]"
    rng = np.random.default_rng(0)
    for _ in range(500):
        mid = float(rng.normal() * 10.0 ** rng.integers(-30, 30))
        rad = float(abs(mid) * 10.0 ** rng.integers(-20, 1)) if rng.random() < 0.9 else 0.0
        text = interval_text({"mid": mid, "rad": rad})
        assert _encloses(text, {"mid": mid, "rad": rad}), (mid, rad, text)
        lo, hi = _ends(text)  # each end moves by at most the radius (or 1e-11 of the size at 12 digits)
        size = Decimal(abs(mid)) + Decimal(rad)
        assert hi - lo <= 4 * Decimal(rad) + size * Decimal("1e-10"), (mid, rad, text)


def test_messages_print_intervals_not_flint_balls():
    from rwtoolkit.engines.balls._gram import check_gram

    with pytest.raises(ValueError, match=r"entry \(1, 2\) ∈ \[1, 1\] does not contain 0") as err:
        check_gram(arb_mat([[2, 1], [1, 2]]), Fraction(2))
    assert "+/-" not in str(err.value)


def test_the_terminal_names_an_unmet_tolerance_in_one_line(tmp_path, capsys):
    assert main([*WIDE, "--float-gram", "none", "--out", str(tmp_path / "a")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "tolerance" in line]
    assert len(lines) == 1
    assert re.fullmatch(
        r"tolerance NOT met: widest relative ball radius [0-9.e+-]+ at 16 bits > --tol 1e-20 "
        r"\(doubling the precision again would pass --max-prec 16\)",
        lines[0],
    ), lines[0]
    met = [*TASK, "--prec", "64", "--max-prec", "64", "--tol", "1e-6", "--steps", "3"]
    assert main([*met, "--float-gram", "none", "--out", str(tmp_path / "b")]) == 0
    assert "tolerance" not in capsys.readouterr().out
