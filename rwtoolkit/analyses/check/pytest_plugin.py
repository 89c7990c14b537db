"""pytest plugin of ``rwtoolkit.analyses.check`` (entry point ``pytest11``): options for ``ConformanceTests`` subclasses.

``--rwcheck-steps T``, ``--rwcheck-examples N``, ``--rwcheck-dtype float64|float32``,
``--rwcheck-task circle|finite|any``. Only this module imports pytest; ``rwtoolkit.analyses.check`` itself does not.

Every pytest session where the toolkit is installed loads this plugin, so loading it imports nothing of
the kit (``rwtoolkit.analyses.check`` is lazy): the kit, hypothesis and the exact engine load when a test uses them, and
the options reach ``ConformanceTests`` then (``pytest_configure`` hands them over only when one is given
or the kit is already loaded).
"""

from __future__ import annotations

import sys

import pytest

#: The plugin's options, by their names in ``ConformanceTests`` (``--rwcheck-<name>``).
OPTIONS = ("steps", "examples", "dtype", "task")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(
        "rwtoolkit.analyses.check", "conformance checks of one-layer transformer implementations"
    )
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
    given = {name: config.getoption(f"rwcheck_{name}") for name in OPTIONS}
    given = {name: value for name, value in given.items() if value is not None}
    if not given and "rwtoolkit.analyses.check._testcase" not in sys.modules:
        return  # nothing to hand over: the kit stays unloaded (it reads no options until imported)
    from rwtoolkit.analyses.check._testcase import PLUGIN_OPTIONS

    PLUGIN_OPTIONS.clear()
    PLUGIN_OPTIONS.update(given)
