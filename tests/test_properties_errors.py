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

from rwcheck.strategies import INVALID_KINDS, invalid_inputs


@pytest.mark.parametrize("kind", INVALID_KINDS)
@settings(max_examples=scaled(8))
@given(data=st.data())
def test_invalid_input_is_rejected_with_the_documented_error(kind: str, data: st.DataObject) -> None:
    case = data.draw(invalid_inputs(kinds=[kind]), label="case")
    message = case.check()  # raises unless a one-line ValueError matching the documented pattern
    assert message
