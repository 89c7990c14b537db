"""`rw reproduce all --quick`: every figure's PNGs and raw series, the report's rows, reproducibility."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rwcli.main import main
from rwrepro import FIGURE_NAMES, REPORT_KEYS
from rwrepro._claims import SPREAD_MAX, V_COLUMN_MAX

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick_all(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `rw reproduce all --quick` run shared by the tests of this module (about a minute on 2 cores)."""
    out = tmp_path_factory.mktemp("reproduce") / "out"
    assert main(["reproduce", "all", "--quick", "--jobs", "2", "--out", str(out)]) == 0
    return out


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_figure_has_png_panels_and_raw_series(quick_all):
    for name in FIGURE_NAMES:
        record = _json(quick_all / name / f"{name}.json")
        assert record["figure"] == name and record["quick"] is True
        assert record["panels"], name
        for panel in record["panels"]:
            data = (quick_all / name / panel).read_bytes()
            assert data[:8] == PNG_MAGIC and len(data) > 10_000, (name, panel)
        for option in record["options"]:
            for run in option["runs"].values():
                if run["ok"]:  # one value per iteration 0..steps for every series
                    steps = run["config"]["train"]["steps"]
                    assert all(len(v) == steps + 1 for v in run["series"].values()), name
    assert (quick_all / "sensitivity" / "sensitivity.png").read_bytes()[:8] == PNG_MAGIC
    leftovers = [p.name for p in quick_all.rglob("*.tmp")]
    assert leftovers == []  # atomic writes leave no temp files


@pytest.mark.slow
def test_report_rows_have_the_stated_keys_boolean_verdicts_and_readable_criteria(quick_all):
    report = _json(quick_all / "report.json")
    markdown = (quick_all / "REPORT.md").read_text(encoding="utf-8")
    rows = report["rows"]
    assert len(rows) >= 14
    for row in rows:
        assert set(row) == set(REPORT_KEYS)
        assert isinstance(row["agrees"], bool)
        assert all(isinstance(row[k], str) and row[k] for k in ("figure", "claim", "paper", "ours", "criterion"))
        assert row["criterion"].replace("|", "\\|") in markdown  # every criterion is readable in REPORT.md
    assert report["summary"] == {"rows": len(rows), "agree": sum(r["agrees"] for r in rows)}
    figures = {r["figure"] for r in rows}
    assert {"fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "sensitivity"} <= figures
    assert report["mode"] == "quick"


@pytest.mark.slow
def test_quick_sizes_keep_the_zero_init_success_and_failure(quick_all):
    # Theorem 3.1 / Fig 4: p = 1/2 learns; Theorem 4.1 / Fig 5: p = 1 stays at chance with equal attention
    rows = {(r["figure"], r["claim"]): r for r in _json(quick_all / "report.json")["rows"]}
    for fig in ("fig4", "fig8"):
        assert all(r["agrees"] for (f, _), r in rows.items() if f == fig), fig
    assert all(r["agrees"] for (f, _), r in rows.items() if f == "fig5")


@pytest.mark.slow
def test_sensitivity_break_steps_match_the_saved_series(quick_all):
    sens = _json(quick_all / "sensitivity" / "sensitivity.json")
    assert len(sens["table"]) == 12  # μ ∈ {1, √M, M/2} × {float32, float64} × {computed, ideal Gram}
    for entry in sens["table"]:
        s = sens["series"][entry["choices"]]
        # independent recomputation of the first crossing of each threshold from the raw series
        spread = next((t for t, v in enumerate(s["attention_spread"]) if v > SPREAD_MAX), None)
        column = next((t for t, v in enumerate(s["v_column_residual"]) if v > V_COLUMN_MAX), None)
        assert (entry["spread_break"], entry["v_break"]) == (spread, column)
        assert entry["break_step"] == min((t for t in (spread, column) if t is not None), default=None)


@pytest.mark.slow
def test_figures_11_to_13_show_the_fig6_runs(quick_all):
    fig6 = _json(quick_all / "fig6" / "fig6.json")
    for name in ("fig11", "fig12", "fig13"):
        record = _json(quick_all / name / f"{name}.json")
        assert record["source"] == "fig6"
        for option in record["options"]:
            same = next(o for o in fig6["options"] if o["choices"] == option["choices"])
            assert option["runs"] == same["runs"]


@pytest.mark.slow
def test_same_command_gives_identical_files(quick_all, tmp_path):
    assert main(["reproduce", "fig4", "--quick", "--jobs", "1", "--out", str(tmp_path)]) == 0
    for rel in ("fig4/fig4.json", "fig4/fig4.png", "fig4/fig4_options.png"):
        assert (tmp_path / rel).read_bytes() == (quick_all / rel).read_bytes(), rel
    # the report covers exactly the figures present in the folder
    assert _json(tmp_path / "report.json")["figures"] == ["fig4"]
