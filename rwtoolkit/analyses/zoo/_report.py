"""The zoo's two outputs: the catalogue of models and tasks, and the claims report (ZOO.md and zoo.json)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rwtoolkit.analyses.zoo._claims import CLAIMS, ZooClaim

#: The version of zoo.json's layout (``rwtoolkit/schemas/zoo.schema.json``).
FORMAT = 2


def catalogue() -> dict[str, list[dict[str, str]]]:
    """Every registered model and every task family, each with its one-line description.

    >>> sorted(catalogue())
    ['claims', 'models', 'tasks']
    """
    from rwtoolkit.models import model_names, model_summary
    from rwtoolkit.tasks import FAMILIES

    return {
        "models": [{"name": n, "summary": model_summary(n)} for n in model_names()],
        "tasks": [{"name": f.name, "summary": f.description} for f in FAMILIES.values()],
        "claims": [{"name": c.id, "summary": c.statement} for c in CLAIMS.values()],
    }


def render_catalogue() -> str:
    """The catalogue as the text ``rw zoo list`` prints."""
    lines = []
    for section, rows in catalogue().items():
        lines.append(f"{section}:")
        width = max(len(r["name"]) for r in rows)
        lines += [f"  {r['name']:<{width}}  {r['summary']}" for r in rows]
    return "\n".join(lines)


def run_claims(
    ids: Iterable[str] | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    figures: str | Path | None = None,
) -> list[ZooClaim]:
    """Check the claims ``ids`` (default: every claim), in report order; with ``figures`` (a folder), write
    each claim's figure there (``<id>.png``, atomic) right after its verdict. Returns the checked claims.

    A claim's ``seconds`` run from before its set-up to its verdict, and to its figure when one is drawn.
    ``progress`` hears one line per stage, each starting ``<id>: ``: ``checking``, each configuration as it
    starts, the verdict as the figure is drawn and each run the figure adds, then the verdict and the seconds.
    """
    import time

    wanted = list(CLAIMS) if ids is None else list(ids)
    unknown = [i for i in wanted if i not in CLAIMS]
    if unknown:
        raise ValueError(f"--claim {unknown[0]!r} is not a claim id; choose from {', '.join(CLAIMS)}")
    tell = progress or (lambda message: None)

    def prefixed(claim_id: str) -> Callable[[str], None]:
        return lambda message: tell(f"{claim_id}: {message}")

    if figures is not None:
        from rwtoolkit.analyses.zoo._figures import write_figure
    results = []
    for claim_id in [i for i in CLAIMS if i in wanted]:
        step = prefixed(claim_id)
        step("checking")
        claim = CLAIMS[claim_id].check(quick, step)
        if figures is not None:
            step(f"{claim.verdict}; drawing its figure")
            start = time.perf_counter()
            write_figure(claim, figures, step)
            claim.seconds += time.perf_counter() - start
        step(f"{claim.verdict}, done in {claim.seconds:.1f} s")
        results.append(claim)
    return results


def report_json(results: list[ZooClaim], quick: bool) -> dict[str, Any]:
    """zoo.json: one row per checked claim (the claim, its paper and criterion, the verdict and its evidence).

    No timings: the same claims give the same bytes (``rw zoo claims`` prints the seconds)."""
    return {
        "format": FORMAT,
        "quick": quick,
        "claims": [
            {
                "id": claim.id,
                "paper": claim.source,
                "statement": claim.statement,
                "model": claim.model,
                "proxy": claim.proxy,
                "task": claim.task,
                "criterion": claim.criterion,
                "vacuous": claim.vacuous or None,
                "verdict": claim.verdict.value,
                "evidence": claim.evidence,
                "configurations": claim.configurations,
                "command": claim.command,
            }
            for claim in results
        ],
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report_markdown(data: dict[str, Any], figures: str | None = "figures") -> str:
    """ZOO.md: the claims table, then each claim's evidence, its figure (``figures``/<id>.png, a path
    relative to ZOO.md; None: no figures) and the command that reproduces it."""
    lines = [
        "# Claims of the field, checked exactly",
        "",
        "Each row: the claim, where it is stated, the model and task it is checked on, and the verdict with",
        "its criterion. proved = for every t by an exact proof; refuted = an exact counterexample with the",
        "argument covering what the claim quantifies over; inconclusive = not decided (never a pass).",
        "A **proxy** row checks the paper's claim on this toolkit's simplified model, not on the paper's own;",
        "a **vacuous** verdict follows from the model class alone, and the row says why.",
        f"{'Quick run (the smallest configurations).' if data['quick'] else 'Full run.'}",
        "",
        "| claim | paper | model | verdict | criterion |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in data["claims"]:
        criterion = row["criterion"] + (f" **Vacuous:** {row['vacuous']}." if row["vacuous"] else "")
        model = ("**proxy** (this toolkit's simplified model): " if row["proxy"] else "") + row["model"]
        lines.append(
            f"| `{row['id']}`: {_cell(row['statement'])} | {_cell(row['paper'])} | {_cell(model)} "
            f"| **{row['verdict']}** | {_cell(criterion)} |"
        )
    for row in data["claims"]:
        lines += ["", f"## {row['id']}: {row['verdict']}", "", f"`{row['command']}`", ""]
        lines += [f"- {_cell(e)}" for e in row["evidence"]]
        if figures is not None:
            lines += ["", f"![{row['id']}]({figures}/{row['id']}.png)"]
    return "\n".join(lines) + "\n"


def write_report(
    results: list[ZooClaim], out: str | Path, quick: bool, figures: str | Path | None = None
) -> tuple[Path, Path]:
    """Write OUT/ZOO.md and OUT/zoo.json atomically (both or neither); ZOO.md shows each claim's figure
    from the folder ``figures`` (where ``run_claims`` wrote them; None: no figures)."""
    import json
    import os

    import jsonschema

    from rwtoolkit.io import load_schema, write_files_atomic

    data = report_json(results, quick)
    jsonschema.validate(data, load_schema("zoo"))
    out = Path(out)
    relative = None if figures is None else Path(os.path.relpath(Path(figures), out)).as_posix()
    texts = {
        "ZOO.md": report_markdown(data, relative),
        "zoo.json": json.dumps(data, indent=1, ensure_ascii=False) + "\n",
    }

    def writer(text: str) -> Callable[[str], None]:
        def write(tmp: str) -> None:
            Path(tmp).write_text(text, encoding="utf-8")

        return write

    md, js = out / "ZOO.md", out / "zoo.json"
    write_files_atomic({md: writer(texts["ZOO.md"]), js: writer(texts["zoo.json"])})
    return md, js
