"""The result of one executable certificate: what was checked, how, over which range, and the verdict."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

#: The allowed methods, best first. Numeric evidence is never called a proof.
METHODS = (
    "symbolic proof",
    "exact verification over a finite range",
    "certified ball arithmetic",
    "numeric evidence",
)
#: "holds": the statement (as certified, see ``statement``) was verified / supported.
#: "fails": a counterexample was found (``witness`` holds it).
#: "corrected": the printed statement fails (counterexample in ``witness``) and the corrected statement
#: given in ``statement`` holds.
#: "inconclusive": a certified computation could not decide the statement (its balls are too wide); never a pass.
#: "error": the certificate could not run (the exception is in ``witness``); never a pass.
VERDICTS = ("holds", "fails", "corrected", "inconclusive", "error")


@dataclass
class Certificate:
    """An executable certificate for one statement of the paper (docs/theory.md#statements); JSON-able through ``to_json``.

    >>> c = Certificate("E.1", "Π0^K = I", "K = 3..5", "exact verification over a finite range",
    ...                 "holds", {"checked": 3})
    >>> c.passed, sorted(c.to_json())[:3]
    (True, ['details', 'id', 'method'])
    """

    id: str
    statement: str
    scope: str
    method: str
    verdict: str
    witness: Any = None  # the counterexample when something fails; the evidence summary otherwise
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # Raised, not asserted: a certificate with an unknown verdict must never pass under ``python -O``.
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is not one of {', '.join(map(repr, METHODS))}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict={self.verdict!r} is not one of {', '.join(map(repr, VERDICTS))}")

    @property
    def passed(self) -> bool:
        """True when the (possibly corrected) statement holds."""
        return self.verdict in ("holds", "corrected")

    def to_json(self) -> dict[str, Any]:
        """A dict of plain JSON types (SymPy objects become strings, floats stay floats)."""
        return _jsonable(asdict(self))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return _jsonable(float(value))
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    return str(value)


def timed(make: Callable[[], Certificate]) -> Certificate:
    """Run ``make`` and store its wall time in the certificate's ``seconds``."""
    start = time.perf_counter()
    cert = make()
    cert.seconds = round(time.perf_counter() - start, 3)
    json.dumps(cert.to_json())  # fail here, not in the writer, if something is not JSON-able
    return cert
