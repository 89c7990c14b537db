"""Property: every invalid input the strategies generate on purpose is rejected with the documented error.

``strategies.invalid_inputs`` draws one bad argument at a time (circle-walk K, N, p; η, ε, μ, M per
embedding kind, loss names, learning-rate schedules, steps; ``derive``'s η, ε, μ, steps, loss; finite
tasks whose probabilities do not sum to 1 or are negative, or whose tokens, words or lengths are
wrong) together with the message the README documents; the call must raise ``ValueError`` with that
message on one line, never a traceback from deep inside torch or sympy. One test per kind, so each
kind is exercised on several distinct values.
"""

from __future__ import annotations

import pytest
from conftest import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check.strategies import INVALID_KINDS, InvalidCase, invalid_inputs


@pytest.mark.parametrize("kind", INVALID_KINDS)
@settings(max_examples=scaled(8))
@given(data=st.data())
def test_invalid_input_is_rejected_with_the_documented_error(kind: str, data: st.DataObject) -> None:
    case = data.draw(invalid_inputs(kinds=[kind]), label="case")
    assert case.kind == kind, f"asked for {kind!r}, drew {case.kind!r}"  # so each kind is really exercised
    case.check()  # raises unless a one-line ValueError matching the documented pattern


def _raise(message: str) -> None:
    raise ValueError(message)


@pytest.mark.parametrize(
    "call, why",
    [
        (lambda: None, "no ValueError was raised"),
        (lambda: _raise("x=1 is out of range"), "does not match"),
        (lambda: _raise("steps=-1 must be an integer >= 0\n  at line 3"), "is not one line"),
    ],
    ids=["no-error", "wrong-message", "two-lines"],
)
def test_the_documented_error_check_rejects_a_missing_wrong_or_multiline_error(call, why) -> None:
    """The property above is only as strong as ``InvalidCase.check``: it must fail on each kind of bad error."""
    case = InvalidCase("steps=-1", call, r"^steps=-1 must be an integer >= 0")
    with pytest.raises(AssertionError, match=why):
        case.check()
