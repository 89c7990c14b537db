"""Run the certificates (all, or one by id) and write PROOFS.md and proofs.json atomically."""

from __future__ import annotations

import importlib
import json
import os
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from rwtoolkit.analyses.proofs._certificate import Certificate, timed
from rwtoolkit.io import Verdict, write_text_atomic

#: One module per statement, in the order of docs/theory.md#statements.
MODULES: tuple[str, ...] = (
    "rwtoolkit.analyses.proofs.lemma_b1_gradients",
    "rwtoolkit.analyses.proofs.invariant_w_token_columns",
    "rwtoolkit.analyses.proofs.gram_dependence",
    "rwtoolkit.analyses.proofs.lemma_c1_first_value_step",
    "rwtoolkit.analyses.proofs.lemma_c2_circulant",
    "rwtoolkit.analyses.proofs.lemma_c3_largest_entry",
    "rwtoolkit.analyses.proofs.lemma_c5_parent_attention",
    "rwtoolkit.analyses.proofs.lemma_c7_value_decomposition",
    "rwtoolkit.analyses.proofs.lemma_d1_balanced_visits",
    "rwtoolkit.analyses.proofs.lemma_d3_invariant_manifold",
    "rwtoolkit.analyses.proofs.theorem_4_1_failure",
    "rwtoolkit.analyses.proofs.theorem_4_1_paper_scale",
    "rwtoolkit.analyses.proofs.theorem_4_1_linear_instability",
    "rwtoolkit.analyses.proofs.stuck_theorem_4_1",
    "rwtoolkit.analyses.proofs.stuck_k4_half",
    "rwtoolkit.analyses.proofs.stuck_catalogue",
    "rwtoolkit.analyses.proofs.identical_heads",
    "rwtoolkit.analyses.proofs.lemma_e1_shift_identities",
    "rwtoolkit.analyses.proofs.lemma_e2_e3_power_mixing",
    "rwtoolkit.analyses.proofs.lemma_e4_gamma_diagonal",
    "rwtoolkit.analyses.proofs.lemma_e5_sine_embeddings",
    "rwtoolkit.analyses.proofs.signal_vanishing_set",
    "rwtoolkit.analyses.proofs.theorem_3_1_accuracy",
    "rwtoolkit.analyses.proofs.theorem_3_1_f_direction",
    "rwtoolkit.analyses.proofs.theorem_3_1_v_direction",
    "rwtoolkit.analyses.proofs.theorem_3_1_attention",
)


def certificate_ids() -> dict[str, str]:
    """Map each statement id (e.g. ``"C.1"``) to its module name."""
    return {importlib.import_module(name).ID: name for name in MODULES}


def run_one(module_name: str, quick: bool) -> Certificate:
    """Run one certificate; an exception becomes an "error" certificate (inconclusive: never a pass)."""
    module = importlib.import_module(module_name)
    try:
        return timed(lambda: module.certify(quick=quick))
    except Exception as err:  # noqa: BLE001 - reported in the table, not swallowed
        return Certificate(
            id=module.ID,
            statement=module.STATEMENT,
            scope="not run",
            method="numeric evidence",
            verdict=Verdict.INCONCLUSIVE,
            ran=False,
            witness={"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc(limit=4)},
        )


def run(
    quick: bool = False,
    only: Iterable[str] | None = None,
    progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
) -> list[Certificate]:
    """Run the selected certificates (``only``: statement ids) in the order of docs/theory.md#statements."""
    ids = certificate_ids()
    if only:
        unknown = [i for i in only if i not in ids]
        if unknown:
            raise ValueError(f"--only {unknown[0]!r} is not a statement id; choose from {', '.join(ids)}")
        chosen = [ids[i] for i in ids if i in set(only)]
    else:
        chosen = list(MODULES)
    names = progress(chosen) if progress else chosen
    return [run_one(name, quick) for name in names]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(certs: list[Certificate], quick: bool) -> str:
    """The PROOFS.md table: id, statement, scope, method, verdict, time."""
    lines = [
        f"# Certificates ({'quick' if quick else 'full'} run)",
        "",
        "Verdicts: holds = verified as stated; corrected = the printed statement fails (counterexample in",
        "proofs.json) and the corrected statement shown here holds; fails = counterexample found;",
        "inconclusive = a certified (ball-arithmetic) computation could not decide; error = the certificate did",
        "not run. Neither is a pass. Numeric evidence is not a proof.",
        "",
        "| id | statement | scope | method | verdict | time (s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in certs:
        lines.append(
            f"| {_cell(c.id)} | {_cell(c.statement)} | {_cell(c.scope)} | {_cell(c.method)} | "
            f"**{c.word}** | {c.seconds:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_report(certs: list[Certificate], out_dir: str | os.PathLike, quick: bool) -> tuple[Path, Path]:
    """Write ``out_dir/PROOFS.md`` and ``out_dir/proofs.json`` (each atomically)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "PROOFS.md", out / "proofs.json"
    write_text_atomic(render_markdown(certs, quick), md)
    payload = {"quick": quick, "certificates": [c.to_json() for c in certs]}
    write_text_atomic(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True) + "\n", js)
    return md, js
