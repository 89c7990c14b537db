"""The rows that check the papers' claims on the papers' own models (``examples/papers/``, issue 42), each placed
in ``CLAIMS`` right after the row that checks the same claim on this toolkit's simplified model (its proxy).

Each row is one module ``_paper_<name>`` exporting ``CLAIM`` (a ``ZooClaim``) and ``figure`` (its figure, which
``rwtoolkit.analyses.zoo._figures.FIGURES`` lists).
"""

from __future__ import annotations

from rwtoolkit.analyses.zoo import _paper_edelman, _paper_makkuva, _paper_nichani
from rwtoolkit.analyses.zoo._claims import CLAIMS

#: Each paper row, keyed by the id of its proxy row (the same claim on this toolkit's simplified model).
PAPER_ROWS = {
    "makkuva_tied_unigram": _paper_makkuva,
    "edelman_stages": _paper_edelman,
    "nichani_parent_attention": _paper_nichani,
}


def register_paper_rows() -> None:
    """Insert each paper row into ``CLAIMS`` after its proxy row (once; the report's order).

    >>> list(CLAIMS).index("nichani_parent_attention_paper") - list(CLAIMS).index("nichani_parent_attention")
    1
    """
    if all(module.CLAIM.id in CLAIMS for module in PAPER_ROWS.values()):
        return
    ordered = {}
    for claim_id, claim in CLAIMS.items():
        ordered[claim_id] = claim
        if claim_id in PAPER_ROWS:
            row = PAPER_ROWS[claim_id].CLAIM
            ordered[row.id] = row
    CLAIMS.clear()
    CLAIMS.update(ordered)
