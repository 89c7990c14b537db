"""The result of one executable certificate: what was checked, how, over which range, and the verdict."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rwtoolkit.io import Claim, Verdict

#: The allowed methods, best first, each with the verdicts it can reach: when the statement holds, and when
#: a counterexample is found. Numeric evidence is never called a proof, nor its counterexample a refutation.
METHODS: dict[str, tuple[Verdict, Verdict]] = {
    "symbolic proof": (Verdict.PROVED, Verdict.REFUTED),
    "exact verification over a finite range": (Verdict.HOLDS, Verdict.REFUTED),
    "certified ball arithmetic": (Verdict.HOLDS, Verdict.REFUTED),
    "numeric evidence": (Verdict.HOLDS, Verdict.FAILS),
}
#: How proofs.json and PROOFS.md write a certificate's verdict (``Certificate.word``):
#: "holds": the statement (as certified, see ``statement``) is proved or holds at the sizes checked;
#: "fails": it is refuted, or does not hold at the sizes checked (``witness`` holds the counterexample);
#: "corrected": the printed statement fails (counterexample in ``witness``) and the corrected statement
#: given in ``statement`` holds;
#: "inconclusive": a certified computation could not decide the statement (its balls are too wide); never a pass;
#: "error": the certificate could not run (the exception is in ``witness``); never a pass.
VERDICTS = ("holds", "fails", "corrected", "inconclusive", "error")
#: Where the statements of the certificates are stated.
SOURCE = "docs/theory.md#statements"


@dataclass(kw_only=True)
class Certificate(Claim):
    """An executable certificate for one statement of the paper (docs/theory.md#statements): a ``Claim`` whose
    criterion is its method, decided over ``scope``; JSON-able through ``to_json``.

    >>> c = Certificate(id="E.1", statement="Π0^K = I", scope="K = 3..5",
    ...                 method="exact verification over a finite range", verdict=Verdict.HOLDS,
    ...                 witness={"checked": 3})
    >>> c.passed, c.word, c.command, sorted(c.to_json())[:3]
    (True, 'holds', 'rw proofs --only E.1', ['details', 'id', 'method'])
    """

    source: str = field(init=False, default=SOURCE)
    criterion: str = field(init=False, default="")
    command: str = field(init=False, default="")
    #: The range the statement is checked over, in one line.
    scope: str
    #: One of ``METHODS``.
    method: str
    #: The counterexample when something fails; the evidence summary otherwise.
    witness: Any = None
    details: dict[str, Any] = field(default_factory=dict)
    #: The printed statement fails and ``statement`` is its corrected form (shown as "corrected" when it passes).
    corrected: bool = False
    #: False when the certificate raised instead of deciding (shown as "error"; its verdict is inconclusive).
    ran: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        # Raised, not asserted: a certificate with an unknown method or verdict must never pass under ``python -O``.
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is not one of {', '.join(map(repr, METHODS))}")
        allowed = (*METHODS[self.method], Verdict.INCONCLUSIVE)
        if self.verdict not in allowed or (not self.ran and self.verdict is not Verdict.INCONCLUSIVE):
            raise ValueError(
                f"verdict={self.verdict.value!r} is not one of {', '.join(repr(v.value) for v in allowed)} "
                f"(method {self.method!r}{'' if self.ran else ', did not run: inconclusive'})"
            )
        self.criterion = self.method
        plain = re.fullmatch(r"[\w.=/-]+", self.id)  # what a shell reads as one word without quotes
        self.command = f"rw proofs --only {self.id}" if plain else f'rw proofs --only "{self.id}"'

    @property
    def word(self) -> str:
        """The verdict as proofs.json and PROOFS.md write it (one of ``VERDICTS``)."""
        if not self.ran:
            return "error"
        if self.verdict is Verdict.INCONCLUSIVE:
            return "inconclusive"
        if self.passed:
            return "corrected" if self.corrected else "holds"
        return "fails"

    def to_json(self) -> dict[str, Any]:
        """proofs.json's entry: plain JSON types (SymPy objects become strings, floats stay floats)."""
        return _jsonable(
            {
                "id": self.id,
                "statement": self.statement,
                "scope": self.scope,
                "method": self.method,
                "verdict": self.word,
                "witness": self.witness,
                "details": self.details,
                "seconds": self.seconds,
            }
        )


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
