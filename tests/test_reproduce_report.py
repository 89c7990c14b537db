"""REPORT.md / report.json built from saved figure records: the reproducing-options list and quick marking.

The records are written by hand here (only the keys ``build_report`` reads), so these tests train nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from rwtoolkit.analyses.repro._report import build_report


def _row(figure: str, claim: str, agrees: bool) -> dict:
    return {
        "figure": figure,
        "claim": claim,
        "paper": "p",
        "ours": "o",
        "agrees": agrees,
        "criterion": f"c {claim}",
    }


def _option(choices: str, differs: str, agrees: bool, figure: str) -> dict:
    return {
        "choices": choices,
        "label": differs,
        "differs_from_main": differs,
        "reproduces_paper": agrees,
        "rows": [_row(figure, "claim A", agrees)],
        "runs": {},
    }


def _record(out: Path, figure: str, quick: bool, options: list[dict]) -> None:
    record = {
        "figure": figure,
        "title": f"title {figure}",
        "quick": quick,
        "settings": {"run": "setting"},
        "main": options[0]["choices"],
        "main_label": "main",
        "notes": "",
        "source": None,
        "rows": options[0]["rows"],
        "options": options,
        "panels": [f"{figure}.png"],
    }
    (out / figure).mkdir(parents=True)
    (out / figure / f"{figure}.json").write_text(json.dumps(record), encoding="utf-8")


def test_reproducing_options_with_commas_in_their_names_are_one_per_line(tmp_path):
    _record(
        tmp_path,
        "fig6",
        False,
        [
            _option("main_key", "main", False, "fig6"),
            _option("sum_seed1", "sum loss (η × train size), seed 1", True, "fig6"),
            _option("mu1_f32", "μ=1, float32", True, "fig6"),
        ],
    )
    _record(
        tmp_path,
        "fig9",
        False,
        [_option("m", "main", False, "fig9"), _option("f32", "float32", False, "fig9")],
    )
    report = build_report(tmp_path)
    assert report["options_reproducing_paper"] == {
        "fig6": [
            {"choices": "sum_seed1", "differs_from_main": "sum loss (η × train size), seed 1"},
            {"choices": "mu1_f32", "differs_from_main": "μ=1, float32"},
        ],
        "fig9": [],
    }
    lines = (tmp_path / "REPORT.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("- fig6:")
    assert lines[start + 1 : start + 4] == [
        "  - sum loss (η × train size), seed 1 (`sum_seed1`)",
        "  - μ=1, float32 (`mu1_f32`)",
        "- fig9: none of the options tried",
    ]


def test_mixed_quick_and_full_records_say_which_is_which(tmp_path):
    _record(tmp_path, "fig4", True, [_option("m", "main", True, "fig4")])
    _record(tmp_path, "fig5", False, [_option("m", "main", True, "fig5")])
    report = build_report(tmp_path)
    assert report["mode"].startswith("mixed")
    assert report["figure_modes"] == {"fig4": "quick", "fig5": "full"}
    md = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "| fig4 | **quick** (`--quick`: CI sizes) | `fig4/fig4.png` |" in md
    assert "| fig5 | full | `fig5/fig5.png` |" in md
    assert "| fig4 (quick) | claim A |" in md and "| fig5 | claim A |" in md  # claim rows marked too


def test_all_quick_records_are_not_marked_row_by_row(tmp_path):
    _record(tmp_path, "fig4", True, [_option("m", "main", True, "fig4")])
    assert build_report(tmp_path)["mode"] == "quick"
    md = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "(quick sizes)" in md and "| fig4 | claim A |" in md


def test_the_docs_gallery_renders_the_report_that_build_report_writes(tmp_path):
    """The docs site's gallery (tools/docs_hooks.py) reads out/report.json as build_report writes it: the
    reproducing options by their description and key, a figure without one said so (it crashed on the
    options' real form while its own fixture used plain strings)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "docs_hooks", Path(__file__).parents[1] / "tools" / "docs_hooks.py"
    )
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    _record(
        tmp_path,
        "fig6",
        False,
        [_option("main_key", "main", False, "fig6"), _option("f32", "float32", True, "fig6")],
    )
    _record(
        tmp_path, "fig9", False, [_option("m", "main", False, "fig9"), _option("g", "other", False, "fig9")]
    )
    build_report(tmp_path)
    page = hooks.gallery_markdown(tmp_path)
    assert "| fig6 | float32 (`f32`) |" in page
    assert "| fig9 | none of the options tried |" in page
