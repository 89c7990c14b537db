"""Executable certificates for the statements of docs/theory.md#statements (``rw proofs``).

Each module ``rwtoolkit/analyses/proofs/<statement>.py`` states one lemma or theorem in its docstring, its scope, and
``certify(quick) -> Certificate``: a symbolic proof, an exact verification over a declared finite range,
a certified ball-arithmetic computation or numeric evidence — labelled as such, with a witness when it fails.
"""

from rwtoolkit.analyses.proofs._certificate import METHODS, VERDICTS, Certificate
from rwtoolkit.analyses.proofs._runner import (
    MODULES,
    certificate_ids,
    render_markdown,
    run,
    run_one,
    write_report,
)

__all__ = [
    "METHODS",
    "MODULES",
    "VERDICTS",
    "Certificate",
    "certificate_ids",
    "render_markdown",
    "run",
    "run_one",
    "write_report",
]
