"""MkDocs hooks: pages generated at build time, so that the site never holds copies made by hand.

- ``cli.md``: the CLI reference, built from the argparse parsers of ``rwtoolkit.cli`` (``rwtoolkit.cli.main.COMMANDS``;
  each module's ``add_arguments``).
- ``api/index.md`` and ``api/<package>.md``: one API page per package of the import root ``rwtoolkit``, in
  the order of its layers (except ``rwtoolkit.cli``, whose public surface is the CLI), with one
  mkdocstrings directive per name in the package's ``__all__``. A name that cannot be collected fails
  the strict build.
- ``reproduction.md``: the text between the ``figure-gallery`` markers is replaced by the claim table,
  the options that reproduce each figure and every figure PNG of a generated ``out/`` (``make demo``
  or ``rw reproduce ... --out out``; another folder through the environment variable ``RW_DOCS_OUT``),
  or by a note saying how to generate them.
- ``benchmarks.md``: the text between the ``benchmark-results`` markers is replaced by the latest
  results written by ``tools/run_benchmarks.py`` (``make bench``) under ``benchmarks/results/``,
  with their machine and date, or by a note that there are none.

The page generators are plain functions (``cli_markdown``, ``api_pages``, ``benchmarks_markdown``) so
that the test suite can check them without MkDocs installed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Packages whose public surface is not a Python API: the root and the two grouping folders hold no names;
#: rwtoolkit.engines.exact.oracle: its public names are rwtoolkit.engines.exact's (documented on that page, once).
NOT_API = (
    "rwtoolkit",
    "rwtoolkit.engines",
    "rwtoolkit.analyses",
    "rwtoolkit.cli",
    "rwtoolkit.engines.exact.oracle",
)
#: The layers of the import root, bottom up: the order of the API pages (docs/guide/architecture.md).
LAYER_ORDER = (
    "rwtoolkit.runtime",
    "rwtoolkit.io",
    "rwtoolkit.tasks",
    "rwtoolkit.models",
    "rwtoolkit.engines",
    "rwtoolkit.analyses",
)
BENCH_MARKERS = ("<!-- benchmark-results -->", "<!-- /benchmark-results -->")
BENCH_RESULTS = ROOT / "benchmarks" / "results"
GALLERY_MARKERS = ("<!-- figure-gallery -->", "<!-- /figure-gallery -->")


def reproduce_out() -> Path:
    """The ``rw reproduce`` output folder the gallery is built from (``RW_DOCS_OUT``, default ``out/``)."""
    import os

    return Path(os.environ.get("RW_DOCS_OUT", ROOT / "out"))


def gallery_figures(out: Path) -> list[Path]:
    """Every figure PNG under ``out/<fig>/`` (figures and the sensitivity study), in a stable order."""
    return sorted(out.glob("*/*.png"), key=lambda p: (len(p.parent.name), p.parent.name, p.name))


def gallery_markdown(out: Path) -> str:
    """The claim table, the options reproducing each figure, and the figures of ``out/report.json``."""
    report_path = out / "report.json"
    if not report_path.is_file():
        return (
            "No `out/report.json` was found when this site was built. Run `make demo` (or "
            "`.venv/bin/rw reproduce all --out out`, add `--quick` for CI sizes) and rebuild the site "
            "with `make docs`: this section then shows the claim table and every figure."
        )
    report = json.loads(report_path.read_text())
    summary = report["summary"]
    lines = [
        (
            f"Built from `{out.name}/report.json` ({report['mode']} mode): {summary['agree']} of "
            f"{summary['rows']} claims agree with the paper under their stated criteria."
        ),
        "",
        "| figure | claim | paper | ours | agrees | criterion |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["rows"]:
        cells = [
            row["figure"],
            row["claim"],
            row["paper"],
            row["ours"],
            "yes" if row["agrees"] else "**no**",
            row["criterion"],
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += [
        "",
        "Options under which every claim of a figure is reproduced:",
        "",
        "| figure | options |",
        "| --- | --- |",
    ]
    for fig, options in report["options_reproducing_paper"].items():
        named = ", ".join(f"{o['differs_from_main']} (`{o['choices']}`)" for o in options)
        lines.append(f"| {fig} | {_cell(named) if options else 'none of the options tried'} |")
    lines.append("")
    for png in gallery_figures(out):
        rel = png.relative_to(out).as_posix()
        lines += [f"### `{rel}`", "", f"![{rel}](gallery/{rel})", ""]
    return "\n".join(lines)


def api_packages() -> list[str]:
    """The packages of ``rwtoolkit`` that have a Python API page, layer by layer (``LAYER_ORDER``)."""
    packages = [".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rwtoolkit").rglob("__init__.py")]

    def rank(name: str) -> tuple[int, str]:
        layer = next((i for i, prefix in enumerate(LAYER_ORDER) if name.startswith(prefix)), len(LAYER_ORDER))
        return layer, name

    return sorted((name for name in packages if name not in NOT_API), key=rank)


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if (doc or "").strip() else ""


def api_pages() -> dict[str, str]:
    """``{path: markdown}`` for ``api/index.md`` and one page per package, from each ``__all__``."""
    pages: dict[str, str] = {}
    rows = []
    for name in api_packages():
        package = importlib.import_module(name)
        names = list(package.__all__)
        rows.append(f"| [`{name}`]({name}.md) | {len(names)} | {_first_line(package.__doc__)} |")
        lines = [
            f"# `{name}`",
            "",
            f"::: {name}",
            "    options:",
            "      show_root_heading: false",
            "      members: false",
            "",
            f"Public names (`{name}.__all__`): " + ", ".join(f"[`{n}`](#{name}.{n})" for n in names) + ".",
            "",
        ]
        lines += [f"::: {name}.{item}\n" for item in names]
        pages[f"api/{name}.md"] = "\n".join(lines)
    pages["api/index.md"] = "\n".join(
        [
            "# API reference",
            "",
            "Rendered from the docstrings (numpy style) of every name in each package's `__all__`, layer by",
            "layer of the import root `rwtoolkit`. The `rw` command is documented in the",
            "[CLI reference](../cli.md).",
            "",
            "| package | public names | what it holds |",
            "| --- | --- | --- |",
            *rows,
            "",
        ]
    )
    return pages


def cli_parser() -> argparse.ArgumentParser:
    """The ``rw`` parser with every subcommand, built from ``rwtoolkit.cli.main.COMMANDS`` as ``rw`` builds it."""
    from rwtoolkit.cli.main import COMMANDS

    parser = argparse.ArgumentParser(
        prog="rw", description=importlib.import_module("rwtoolkit.cli.main").__doc__
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name, help_text in COMMANDS:
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _action_row(action: argparse.Action) -> str:
    if action.option_strings:
        flags = ", ".join(f"`{s}`" for s in action.option_strings)
    else:
        flags = f"`{action.metavar or action.dest}`"
    if action.nargs == 0:
        value = "flag"
    elif action.choices is not None:
        value = " \\| ".join(f"`{c}`" for c in action.choices)
    else:
        value = f"`{action.metavar or action.dest.upper()}`"
    default = action.default
    if action.nargs == 0 or default is None or default == argparse.SUPPRESS:
        default_text = "required" if action.required else ""
    else:
        default_text = f"`{default}`"
    help_text = (action.help or "") % {"default": action.default, "prog": "rw"} if action.help else ""
    return f"| {flags} | {value} | {default_text} | {_cell(help_text)} |"


def cli_markdown(width: int = 80) -> str:
    """The CLI reference page: for each subcommand its usage (argparse's own) and a table of arguments."""
    import os

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps usage to the terminal width: fix it
    try:
        parser = cli_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        out = [
            "# CLI reference",
            "",
            "Generated from the `rw` command's argparse parsers at build time (`tools/docs_hooks.py`),",
            "so it always matches the installed command. Bad values exit with code 2 and one line",
            "naming the argument and its allowed range.",
            "",
            "| command | what it does |",
            "| --- | --- |",
        ]
        helps = {a.dest: a.help for a in sub._choices_actions}
        out += [f"| [`rw {name}`](#rw-{name}) | {_cell(helps.get(name, ''))} |" for name in sub.choices]
        for name, subparser in sub.choices.items():
            out += ["", f"## `rw {name}` {{#rw-{name}}}", "", _cell(subparser.description or ""), ""]
            out += ["```text", subparser.format_usage().strip(), "```", ""]
            out += ["| argument | value | default | meaning |", "| --- | --- | --- | --- |"]
            out += [_action_row(a) for a in subparser._actions if not isinstance(a, argparse._HelpAction)]
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(out) + "\n"


def _benchmark_output(text: str) -> str:
    """A benchmark's printed output as Markdown: its tables kept whole, every other line a paragraph.

    >>> print(_benchmark_output("torch 2.13\\n| a |\\n| --- |\\n| 1 |\\ntotal: 3 s\\n"))
    torch 2.13
    <BLANKLINE>
    | a |
    | --- |
    | 1 |
    <BLANKLINE>
    total: 3 s
    """
    out: list[str] = []
    for line in text.strip().splitlines():
        in_table = line.lstrip().startswith("|")
        if out and not (in_table and out[-1].lstrip().startswith("|")):
            out.append("")
        out.append(line.strip() if not in_table else line)
    return "\n".join(out)


def benchmarks_markdown(results_dir: Path = BENCH_RESULTS) -> str:
    """The latest benchmark results (``tools/run_benchmarks.py``), each with its machine and date."""
    files = sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []
    if not files:
        return (
            "No results in this build: `benchmarks/results/` is empty. Run `make bench` and rebuild the "
            "site (`make docs`) to show them here."
        )
    out = []
    for path in files:
        record = json.loads(path.read_text())
        machine = record["machine"]
        out += [
            f"### `{record['benchmark']}`",
            "",
            (
                f"Run {record['date']} on {machine['cpus']} CPU(s), {machine['platform']}, Python "
                f"{machine['python']}, torch {machine['torch']}, sympy {machine['sympy']}; "
                f"load average at start {machine['load_average']}; wall time {record['seconds']:.1f} s."
            ),
            "",
            _benchmark_output(record["output"]),
            "",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- MkDocs events


def on_config(config):
    """Expand the nav entry ``API reference: api/index.md`` into one entry per package, and let
    mkdocstrings load every package first (re-exports across packages, e.g. ``rwtoolkit.io`` names in
    ``rwtoolkit.engines.numeric``, resolve only when their target package is loaded)."""
    options = config["plugins"]["mkdocstrings"].config["handlers"]["python"].setdefault("options", {})
    options["preload_modules"] = sorted(set(options.get("preload_modules", [])) | set(api_packages()))
    pages = [{"Overview": "api/index.md"}] + [{name: f"api/{name}.md"} for name in api_packages()]
    for i, item in enumerate(config["nav"] or []):
        if isinstance(item, dict) and item.get("API reference") == "api/index.md":
            config["nav"][i] = {"API reference": pages}
    return config


def on_files(files, config):
    """Add the generated pages (CLI and API reference) to the site."""
    from mkdocs.structure.files import File

    generated = {"cli.md": cli_markdown(), **api_pages()}
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    out = reproduce_out()
    if (out / "report.json").is_file():
        for png in gallery_figures(out):
            files.append(
                File.generated(config, f"gallery/{png.relative_to(out).as_posix()}", abs_src_path=str(png))
            )
    return files


def _fill(markdown: str, markers: tuple[str, str], content: str) -> str:
    start, end = markers
    head, rest = markdown.split(start, 1)
    _, tail = rest.split(end, 1)
    return head + start + "\n" + content + "\n" + end + tail


def on_page_markdown(markdown, page, config, files):
    """Fill the benchmark results into ``benchmarks.md`` and the gallery into ``reproduction.md``."""
    if page.file.src_uri == "benchmarks.md":
        return _fill(markdown, BENCH_MARKERS, benchmarks_markdown())
    if page.file.src_uri == "reproduction.md":
        return _fill(markdown, GALLERY_MARKERS, gallery_markdown(reproduce_out()))
    return markdown
