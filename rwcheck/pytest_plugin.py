"""pytest plugin of ``rwcheck`` (entry point ``pytest11``): options for ``ConformanceTests`` subclasses.

``--rwcheck-steps T``, ``--rwcheck-examples N``, ``--rwcheck-dtype float64|float32``,
``--rwcheck-task circle|finite|any``. Only this module imports pytest; ``rwcheck`` itself does not.
"""

from __future__ import annotations

import pytest

from rwcheck._testcase import PLUGIN_OPTIONS


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rwcheck", "conformance checks of one-layer transformer implementations")
    group.addoption(
        "--rwcheck-steps", type=int, default=None, help="GD steps T checked (t = 0..T; default 2, at most 4)"
    )
    group.addoption(
        "--rwcheck-examples", type=int, default=None, help="hypothesis examples per property (default 10)"
    )
    group.addoption(
        "--rwcheck-dtype", choices=("float64", "float32"), default=None, help="dtype (default float64)"
    )
    group.addoption(
        "--rwcheck-task",
        choices=("circle", "finite", "any"),
        default=None,
        help="configurations drawn: circle walks (default), small finite tasks, or either",
    )


def pytest_configure(config: pytest.Config) -> None:
    PLUGIN_OPTIONS.clear()
    for name in ("steps", "examples", "dtype", "task"):
        value = config.getoption(f"rwcheck_{name}")
        if value is not None:
            PLUGIN_OPTIONS[name] = value
