"""The zoo: the field's other models and tasks, and their published claims checked exactly (``rw zoo``).

``catalogue()`` lists every registered model (``rwtoolkit.models``) and task family (``rwtoolkit.tasks``) with the claims;
``run_claims(ids, quick)`` checks claims (``CLAIMS``, each a ``ZooClaim``: the one claim type ``rwtoolkit.io.Claim``
with the model, the task and the code that decides it), each an exact proof or counterexample at small sizes;
``write_report`` writes ZOO.md and zoo.json (docs/guide/zoo.md).

>>> list(CLAIMS)[:2]
['key_query_stuck', 'identical_heads']
"""

from rwtoolkit.analyses.zoo import _papers
from rwtoolkit.analyses.zoo._claims import (
    CLAIMS,
    Finding,
    ZooClaim,
    identical_heads_subspace,
    invariance_steps,
)
from rwtoolkit.analyses.zoo._report import (
    catalogue,
    render_catalogue,
    report_json,
    report_markdown,
    run_claims,
    write_report,
)

_papers.register_paper_rows()

__all__ = [
    "CLAIMS",
    "Finding",
    "ZooClaim",
    "catalogue",
    "identical_heads_subspace",
    "invariance_steps",
    "render_catalogue",
    "report_json",
    "report_markdown",
    "run_claims",
    "write_report",
]
