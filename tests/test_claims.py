"""The one claim type and the one verdict vocabulary (``rwtoolkit.io.Claim``, ``rwtoolkit.io.Verdict``).

Every format the toolkit wrote before the vocabulary keeps its words: each rendering (a ``Wording``) is
compared with the enum its JSON schema allows, which is the file format's own statement of its words, and
the combination rule with a table written out by hand.
"""

from __future__ import annotations

import itertools

import pytest

from rwtoolkit.analyses.explore import EXPLORE_WORDS, VERDICTS
from rwtoolkit.analyses.proofs import METHODS, Certificate
from rwtoolkit.analyses.proofs import VERDICTS as PROOFS_WORDS
from rwtoolkit.analyses.stability import STABILITY_WORDS, STABILITY_WORDS_GENERIC
from rwtoolkit.io import CERTIFIED_WORDS, DECISION_WORDS, STUCK_WORDS, Claim, Verdict, load_schema

P, R, H, F, U = (
    Verdict.PROVED,
    Verdict.REFUTED,
    Verdict.HOLDS,
    Verdict.FAILS,
    Verdict.INCONCLUSIVE,
)


def _enum(schema: dict, *path: str) -> list[str]:
    for key in path:
        schema = schema[key]
    return schema["enum"]


def test_the_vocabulary_is_the_five_verdicts_and_only_two_pass() -> None:
    assert [v.value for v in Verdict] == [
        "proved",
        "refuted",
        "holds at the sizes checked",
        "does not hold at the sizes checked",
        "inconclusive",
    ]
    assert {v for v in Verdict if v.passed} == {P, H}
    assert {v for v in Verdict if not v.decided} == {U}


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([P], P),
        ([P, P, P], P),
        ([P, R], R),
        ([U, R], R),  # a counterexample refutes whatever the others say
        ([P, U], U),
        ([H, U], U),
        ([H, F, U], U),
        ([H, H], H),
        ([P, H], H),  # a proof at one size and evidence at another: evidence
        ([H, F], F),
        ([F], F),
        ([], U),  # nothing checked is never a pass
    ],
    ids=lambda v: "-".join(x.name for x in v) if isinstance(v, list) else v.name,
)
def test_a_claims_verdict_combines_its_configurations(verdicts: list[Verdict], expected: Verdict) -> None:
    assert Verdict.combine(verdicts) is expected


def test_combining_never_passes_an_undecided_configuration() -> None:
    for n in (1, 2, 3):
        for verdicts in itertools.product(Verdict, repeat=n):
            if U in verdicts:
                assert not Verdict.combine(verdicts).passed, verdicts
            if Verdict.combine(verdicts).passed:
                assert all(v.passed for v in verdicts), verdicts


def test_a_claim_refuses_a_word_outside_the_vocabulary() -> None:
    claim = dict(id="c", statement="s", source="here", criterion="exact", command="rw zoo claims --claim c")
    assert Claim(**claim, verdict="refuted").verdict is R  # the vocabulary's own words are read back
    with pytest.raises(ValueError, match="verdict='holds' is not one of 'proved', 'refuted'"):
        Claim(**claim, verdict="holds")
    assert not Claim(**claim).passed  # undecided until checked


def test_every_file_format_keeps_its_words() -> None:
    stability = load_schema("stability")  # one schema: the reduced view's verdict and the generic view's
    assert sorted(STUCK_WORDS.words.values()) == sorted(
        _enum(stability, "properties", "stuck_proof", "properties", "verdict")
    )
    assert sorted(STABILITY_WORDS.words.values()) == sorted(
        _enum(stability, "$defs", "verdict", "properties", "kind")
    )
    assert sorted(STABILITY_WORDS_GENERIC.words.values()) == sorted(
        _enum(stability, "$defs", "model_verdict", "properties", "kind")
    )
    oracle = load_schema("oracle")["properties"]["steps"]["items"]["properties"]["verdict"][
        "additionalProperties"
    ]
    assert sorted(DECISION_WORDS.words.values()) == sorted(oracle["properties"]["outcome"]["enum"])
    certify = load_schema("certify")["properties"]["statements"]["items"]["properties"]["outcome"]["enum"]
    assert sorted(CERTIFIED_WORDS.words.values()) == sorted(certify)
    zoo = _enum(load_schema("zoo"), "properties", "claims", "items", "properties", "verdict")
    assert zoo == [v.value for v in Verdict]  # zoo.json writes the vocabulary as it is
    assert set(EXPLORE_WORDS.words.values()) < set(VERDICTS) and "informative" in VERDICTS


def test_the_words_are_read_back_to_their_verdicts() -> None:
    assert STUCK_WORDS.verdict("stuck for all t (proved)") is P
    assert STUCK_WORDS.verdict("stuck for T steps (evidence)") is H
    assert STUCK_WORDS.verdict("escapes") is R
    assert DECISION_WORDS.verdict("undecided") is U
    assert CERTIFIED_WORDS.verdict("verified") is H
    assert STABILITY_WORDS.verdict("neutral") is U  # within the neutral band nothing is decided
    with pytest.raises(ValueError, match="'proved' is not a verdict of stuck_proof"):
        STUCK_WORDS.verdict("proved")


@pytest.mark.parametrize(
    ("method", "verdict", "corrected", "ran", "word"),
    [
        ("symbolic proof", P, False, True, "holds"),
        ("symbolic proof", R, False, True, "fails"),
        ("exact verification over a finite range", H, False, True, "holds"),
        ("exact verification over a finite range", R, False, True, "fails"),
        ("certified ball arithmetic", U, False, True, "inconclusive"),
        ("numeric evidence", H, True, True, "corrected"),
        ("numeric evidence", F, True, True, "fails"),  # the corrected statement fails too
        ("numeric evidence", U, False, False, "error"),
    ],
)
def test_proofs_json_writes_each_verdict_in_its_own_words(
    method: str, verdict: Verdict, corrected: bool, ran: bool, word: str
) -> None:
    cert = Certificate(
        id="X", statement="s", scope="scope", method=method, verdict=verdict, corrected=corrected, ran=ran
    )
    assert cert.word == word and cert.word in PROOFS_WORDS and cert.to_json()["verdict"] == word
    assert cert.passed == (word in ("holds", "corrected"))
    assert verdict in (*METHODS[method], U)


def test_a_certificate_that_did_not_run_is_inconclusive() -> None:
    with pytest.raises(ValueError, match="did not run: inconclusive"):
        Certificate(id="X", statement="s", scope="not run", method="numeric evidence", verdict=H, ran=False)
