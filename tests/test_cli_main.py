"""The `rw` entry point: a negative number given as a separate value is a bad value, not an option."""

from __future__ import annotations

import pytest

from rwtoolkit.cli.main import main


@pytest.mark.parametrize(
    "argv,message",
    [
        (["signal", "--K", "3", "--N", "4", "--p", "-1/2"], r"p=-1/2 is outside [0, 1]"),
        (["derive", "--K", "3", "--N", "4", "--p", "-0.5", "--steps", "1"], r"p=-1/2 is outside [0, 1]"),
    ],
    ids=["signal", "derive"],
)
def test_negative_values_give_the_one_line_range_error(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
