"""pytest options of a frozen fixture folder (copied there as conftest.py by ``rw check --emit``)."""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("rwfixture", "frozen exact oracles of rw check --emit")
    group.addoption(
        "--rwfixture-factory",
        default=None,
        help="the implementation: MODULE:FACTORY or path/to/file.py:FACTORY (or RWFIXTURE_FACTORY)",
    )
    group.addoption(
        "--rwfixture-dtype",
        default=None,
        choices=("float64", "float32"),
        help="dtype the implementation runs in (default float64; or RWFIXTURE_DTYPE)",
    )
