"""The documentation's contracts that need no MkDocs: the README stays short, code cites the project's
own docs pages (never a file outside the repository) and every cited page and anchor exists, and the
generated references cover every CLI command, option and public name.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slug(text: str) -> str:
    """Python-Markdown's default heading id (toc extension's ``slugify``)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The ids a docs page defines: explicit ``{#id}`` attributes and the slugs of its other headings."""
    found = set()
    for line in page.read_text().splitlines():
        explicit = re.search(r"\{#([\w-]+)\}", line)
        if explicit:
            found.add(explicit.group(1))
        elif line.startswith("#"):
            found.add(_slug(line.lstrip("#").strip()))
    return found


def citations() -> list[tuple[str, str, str]]:
    """(file, page, anchor) for every ``docs/<page>.md#<anchor>`` cited in the files the mapping covers."""
    cite = _tool("cite_docs")
    pattern = re.compile(r"docs/([\w/-]+\.md)#([\w-]+)((?:, #[\w-]+)*)")
    found = []
    for path in cite.targets():
        for match in pattern.finditer((ROOT / path).read_text(encoding="utf-8")):
            for anchor in [match.group(2), *re.findall(r"#([\w-]+)", match.group(3))]:
                found.append((str(path), match.group(1), anchor))
    return found


def test_readme_is_at_most_8_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 8 * 1024, f"README.md is {size} bytes; move detail into docs/"


def test_no_file_cites_the_outside_specification():
    cite = _tool("cite_docs")
    offenders = [
        str(path)
        for path in [*cite.targets(), Path("README.md")]
        if "MATH.md" in (ROOT / path).read_text(encoding="utf-8")
    ]
    assert not offenders, f"run tools/cite_docs.py: these still cite MATH.md: {offenders}"


def test_the_citation_mapping_points_at_existing_anchors():
    cite = _tool("cite_docs")
    for target in cite.SECTIONS.values():
        page, anchor = target.split("#")
        assert anchor in anchors(ROOT / page), target


def test_every_cited_docs_page_and_anchor_exists():
    cited = citations()
    assert len(cited) > 50  # the code cites the docs throughout; an empty scan would test nothing
    missing = [
        c for c in cited if not (ROOT / "docs" / c[1]).is_file() or c[2] not in anchors(ROOT / "docs" / c[1])
    ]
    assert not missing, f"(file, page, anchor) with no such page or anchor: {missing[:10]}"


def test_readme_links_into_docs_exist():
    links = re.findall(r"\]\((docs/[^)#\s]*)", (ROOT / "README.md").read_text())
    assert links
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_cli_reference_lists_every_command_and_option():
    hooks = _tool("docs_hooks")
    page = hooks.cli_markdown()
    from rwtoolkit.cli.main import COMMANDS

    parser = hooks.cli_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == {name for name, _, _ in COMMANDS}
    for name, subparser in sub.choices.items():
        assert f"## `rw {name}`" in page
        for action in subparser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in page, f"rw {name} {option} is missing from the CLI reference"


@pytest.mark.parametrize("package", _tool("docs_hooks").api_packages())
def test_api_reference_has_every_public_name(package):
    pages = _tool("docs_hooks").api_pages()
    page = pages[f"api/{package}.md"]
    for name in importlib.import_module(package).__all__:
        assert f"::: {package}.{name}\n" in page
    assert f"api/{package}.md" in pages["api/index.md"] or f"({package}.md)" in pages["api/index.md"]


def test_benchmark_results_render_with_machine_and_date(tmp_path):
    hooks = _tool("docs_hooks")
    assert "make bench" in hooks.benchmarks_markdown(tmp_path / "none")
    record = {
        "benchmark": "gd_step.py",
        "date": "2026-01-02 03:04 UTC",
        "seconds": 12.5,
        "output": "| a | b |\n| --- | --- |\n| 1 | 2 |\n",
        "machine": {
            "cpus": 2,
            "platform": "Linux-x",
            "processor": "x86_64",
            "python": "3.11.7",
            "torch": "2.13.0",
            "sympy": "1.14",
            "load_average": [0.5, 0.4, 0.3],
        },
    }
    (tmp_path / "gd_step.json").write_text(json.dumps(record))
    page = hooks.benchmarks_markdown(tmp_path)
    assert "2026-01-02 03:04 UTC" in page and "2 CPU(s)" in page and "| 1 | 2 |" in page


def test_gallery_renders_the_report_or_says_how_to_make_it(tmp_path):
    hooks = _tool("docs_hooks")
    assert "make demo" in hooks.gallery_markdown(tmp_path)
    report = {
        "mode": "quick",
        "summary": {"agree": 1, "rows": 2},
        "rows": [
            {"figure": "fig4", "claim": "c|1", "paper": "p", "ours": "o", "agrees": True, "criterion": "k"},
            {"figure": "fig5", "claim": "c2", "paper": "p", "ours": "o", "agrees": False, "criterion": "k"},
        ],
        "options_reproducing_paper": {  # the form rwtoolkit.analyses.repro's build_report writes
            "fig4": [{"choices": "mu1_f32", "differs_from_main": "μ=1, float32"}],
            "fig5": [],
        },
    }
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "fig4").mkdir()
    (tmp_path / "fig4" / "fig4.png").write_bytes(b"\x89PNG")
    page = hooks.gallery_markdown(tmp_path)
    assert "1 of 2 claims agree" in page and "c\\|1" in page and "**no**" in page
    assert "| fig4 | μ=1, float32 (`mu1_f32`) |" in page and "| fig5 | none of the options tried |" in page
    assert "![fig4/fig4.png](gallery/fig4/fig4.png)" in page
