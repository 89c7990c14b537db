"""`rw reproduce all --quick`: every figure's PNGs and raw series, the report's rows, reproducibility."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.analyses.repro import FIGURE_NAMES, REPORT_KEYS
from rwtoolkit.analyses.repro._claims import SPREAD_MAX, V_COLUMN_MAX
from rwtoolkit.cli.main import main

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
        assert all(
            isinstance(row[k], str) and row[k] for k in ("figure", "claim", "paper", "ours", "criterion")
        )
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


def _drawn(quick_all: Path, name: str, record: dict | None = None) -> dict:
    """The Figures of ``name`` redrawn from its saved record (or from ``record``), without training."""
    from rwtoolkit.analyses.repro._experiments import figure_specs
    from rwtoolkit.analyses.repro._figures import draw_figure

    return draw_figure(figure_specs(quick=True)[name], record or _json(quick_all / name / f"{name}.json"))


@pytest.mark.slow
def test_every_figure_keeps_legends_outside_the_data_and_says_it_is_quick(quick_all):
    from test_reproduce_plots import legend_outside_axes

    from rwtoolkit.analyses.repro._plots import QUICK_NOTE

    for name in FIGURE_NAMES:
        for png, fig in _drawn(quick_all, name).items():
            assert QUICK_NOTE in fig.get_suptitle(), png
            for ax in fig.axes:
                if ax.get_legend() is not None:
                    assert legend_outside_axes(fig, ax), (png, ax.get_title())
                if ax.get_images() or ax.get_label() == "<colorbar>":
                    continue
                assert ax.get_xlabel() and ax.get_ylabel(), (png, ax.get_title())


@pytest.mark.slow
def test_reference_lines_of_accuracy_panels_are_labelled_and_distinct(quick_all):
    for name, png in (
        ("fig4", "fig4.png"),
        ("fig4", "fig4_options.png"),
        ("fig7", "fig7.png"),
        ("fig10", "fig10.png"),
    ):
        ax = _drawn(quick_all, name)[png].axes[0]
        refs = [line for line in ax.lines if len(set(line.get_ydata())) == 1 and line.get_linestyle() != "-"]
        labels = [line.get_label() for line in refs]
        assert len(refs) == 2 and any("OPT" in t or "100 %" in t for t in labels), (png, labels)
        assert len({(line.get_linestyle(), line.get_color()) for line in refs}) == 2, png


@pytest.mark.slow
def test_fig11_rows_share_one_colour_scale(quick_all):
    fig = _drawn(quick_all, "fig11")["fig11.png"]
    grid = [ax for ax in fig.axes if ax.get_images()]
    record = _json(quick_all / "fig11" / "fig11.json")
    steps = len(record["options"][0]["runs"]["p=1/2"]["snapshots"])
    rows = [grid[i : i + steps] for i in range(0, len(grid), steps)]
    for row in rows:
        assert len({ax.get_images()[0].get_clim() for ax in row}) == 1
    # one colour bar per row, not one per panel
    assert sum(ax.get_label() == "<colorbar>" for ax in fig.axes) == len(rows)
    # the shared scale spans every panel of the row: the change over time stays visible
    V = [np.array(record["options"][0]["runs"]["p=1/2"]["snapshots"][t]["V"]) for t in ("100", "1000")]
    lo, hi = rows[0][0].get_images()[0].get_clim()
    assert lo <= min(v.min() for v in V) and hi >= max(v.max() for v in V)


@pytest.mark.slow
def test_disagreement_mark_follows_the_report_verdicts(quick_all):
    from rwtoolkit.analyses.repro._plots import DISAGREE_GID

    def marked(figs: dict) -> list[str]:
        return [
            " ".join(ax.get_title().split())
            for f in figs.values()
            for ax in f.axes  # titles are wrapped
            if ax.title.get_gid() == DISAGREE_GID
        ]

    for name in ("fig4", "fig5", "fig9", "fig7"):
        record = _json(quick_all / name / f"{name}.json")
        disagree = [r["claim"] for r in record["options"][0]["rows"] if not r["agrees"]]
        titles = marked(_drawn(quick_all, name, record))
        assert all(any(c in t for t in titles) for c in disagree), name  # every disagreeing claim is marked
        assert bool(titles) == bool(disagree), name
        for row in record["options"][0]["rows"]:  # the same record with every claim agreeing: no mark
            row["agrees"] = True
        assert marked(_drawn(quick_all, name, record)) == [], name
