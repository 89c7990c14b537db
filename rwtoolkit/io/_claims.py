"""One claim type and one verdict vocabulary for every report the toolkit writes.

A claim is a statement, where it is stated (its source), the configurations it is checked at, the
criterion that decides it, its verdict, the evidence and the command that reproduces it (``Claim``).
``rw proofs``, ``rw zoo claims``, ``rw reproduce``, ``rw explore`` and ``rw stability`` decide claims, and
every verdict they reach is one of five (``Verdict``):

* ``proved``: for every value the claim quantifies over (an exact proof);
* ``refuted``: an exact or certified counterexample, with the argument that covers what the claim
  quantifies over;
* ``holds at the sizes checked`` / ``does not hold at the sizes checked``: exact, certified or numeric
  evidence at the listed configurations (and steps), not a proof for other sizes or later times;
* ``inconclusive``: not decided, or not run; never a pass.

Files written before the vocabulary keep their words: each such format renders the one vocabulary
through a ``Wording`` (``DECISION_WORDS``, ``STUCK_WORDS``, ``CERTIFIED_WORDS`` here; the others live with their
only writer), and docs/notation.md lists every format's words in one table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """The verdict of a claim; only ``PROVED`` and ``HOLDS`` are passes.

    >>> Verdict.PROVED.passed, Verdict.INCONCLUSIVE.passed, Verdict.FAILS.value
    (True, False, 'does not hold at the sizes checked')
    """

    PROVED = "proved"
    REFUTED = "refuted"
    HOLDS = "holds at the sizes checked"
    FAILS = "does not hold at the sizes checked"
    INCONCLUSIVE = "inconclusive"

    @property
    def passed(self) -> bool:
        """True for ``PROVED`` and ``HOLDS``: the claim (as checked) is true."""
        return self in (Verdict.PROVED, Verdict.HOLDS)

    @property
    def decided(self) -> bool:
        """False for ``INCONCLUSIVE`` only."""
        return self is not Verdict.INCONCLUSIVE

    @classmethod
    def combine(cls, verdicts: Iterable[Verdict]) -> Verdict:
        """The verdict of a claim from its configurations' verdicts.

        Proved when every configuration is proved; refuted when one is (a counterexample refutes the
        claim whatever the others say); else inconclusive when one is undecided, or when none was checked;
        else holds at the sizes checked when every configuration passes, and does not hold otherwise.

        >>> V = Verdict
        >>> V.combine([V.PROVED, V.PROVED]), V.combine([V.PROVED, V.INCONCLUSIVE, V.REFUTED])
        (<Verdict.PROVED: 'proved'>, <Verdict.REFUTED: 'refuted'>)
        >>> V.combine([V.HOLDS, V.INCONCLUSIVE, V.FAILS]).value, V.combine([V.PROVED, V.HOLDS]).value
        ('inconclusive', 'holds at the sizes checked')
        >>> V.combine([V.HOLDS, V.FAILS]).value, V.combine([]).value
        ('does not hold at the sizes checked', 'inconclusive')
        """
        found = [cls(v) for v in verdicts]
        if not found or (cls.INCONCLUSIVE in found and cls.REFUTED not in found):
            return cls.INCONCLUSIVE
        if all(v is cls.PROVED for v in found):
            return cls.PROVED
        if cls.REFUTED in found:
            return cls.REFUTED
        return cls.HOLDS if all(v.passed for v in found) else cls.FAILS


@dataclass(frozen=True)
class Wording:
    """How one file format writes the verdicts it can reach: one word per verdict, and back.

    >>> DECISION_WORDS.word(Verdict.INCONCLUSIVE), DECISION_WORDS.verdict("proved")
    ('undecided', <Verdict.PROVED: 'proved'>)
    >>> STUCK_WORDS.verdict("stuck")
    Traceback (most recent call last):
    ...
    ValueError: 'stuck' is not a verdict of stuck_proof; choose from 'stuck for all t (proved)', 'escapes', 'stuck for T steps (evidence)'
    """

    #: What writes these words (named in the refusal of a word that is not one of them).
    name: str
    words: Mapping[Verdict, str]

    def word(self, verdict: Verdict) -> str:
        """The format's word for ``verdict`` (a ``KeyError`` when the format cannot reach it)."""
        return self.words[Verdict(verdict)]

    def verdict(self, word: str) -> Verdict:
        """The verdict the format writes as ``word``."""
        for verdict, written in self.words.items():
            if written == word:
                return verdict
        raise ValueError(
            f"{word!r} is not a verdict of {self.name}; choose from {', '.join(map(repr, self.words.values()))}"
        )


#: An exact decision on one statement: the induction step (``rwtoolkit.engines.exact.Induction.outcome``), the
#: structure predicates and the ``verdict`` entries of an oracle file (``rw derive --verdict``).
DECISION_WORDS = Wording(
    "an exact decision",
    {Verdict.PROVED: "proved", Verdict.REFUTED: "refuted", Verdict.INCONCLUSIVE: "undecided"},
)
#: The claim "gradient descent from zero on this task stays at chance for every t"
#: (``rwtoolkit.engines.exact.stuck_proof``, read by rw explore, rw stability, rw proofs and rw zoo).
STUCK_WORDS = Wording(
    "stuck_proof",
    {
        Verdict.PROVED: "stuck for all t (proved)",
        Verdict.REFUTED: "escapes",
        Verdict.HOLDS: "stuck for T steps (evidence)",
    },
)


#: A certified (ball-arithmetic) check: the ``outcome`` of ``rw certify``'s statements (certify.json,
#: ``rwtoolkit.engines.balls.Statement.to_json``).
CERTIFIED_WORDS = Wording(
    "a certified check",
    {Verdict.HOLDS: "verified", Verdict.REFUTED: "refuted", Verdict.INCONCLUSIVE: "inconclusive"},
)


@dataclass(kw_only=True)
class Claim:
    """One claim and how it was decided: the record every claims report reads.

    A claim is created undecided (``verdict`` inconclusive, no evidence) and checked into a copy with its
    verdict, the configurations checked, one line of evidence per finding and the seconds it took.

    >>> c = Claim(id="demo", statement="Π0^K = I", source="docs/theory.md#statements",
    ...           criterion="exact comparison", command="rw proofs --only E.1")
    >>> c.verdict.value, c.passed
    ('inconclusive', False)
    """

    #: A short name, unique in its report.
    id: str
    #: What is claimed, in one sentence.
    statement: str
    #: Where it is stated: a paper, a figure, a section of the docs.
    source: str
    #: What decides the verdict.
    criterion: str
    #: The one command that reproduces the verdict.
    command: str
    verdict: Verdict = Verdict.INCONCLUSIVE
    #: The configurations checked, one dict each.
    configurations: list[dict[str, Any]] = field(default_factory=list)
    #: One line per configuration checked or per finding.
    evidence: list[str] = field(default_factory=list)
    #: Wall time of the check.
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # Raised, not asserted: an unknown verdict must never pass under ``python -O``.
        if self.verdict not in set(Verdict):
            raise ValueError(
                f"verdict={self.verdict!r} is not one of {', '.join(repr(v.value) for v in Verdict)}"
            )
        self.verdict = Verdict(self.verdict)

    @property
    def passed(self) -> bool:
        """True when the claim is proved or holds at the sizes checked."""
        return self.verdict.passed
