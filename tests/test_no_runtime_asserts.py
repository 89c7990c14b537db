"""No runtime validation through ``assert`` in the installed packages: ``python -O`` strips every assert.

The only asserts allowed are type narrowings ``assert x is not None`` (and conjunctions of them), which
tell the type checker what the surrounding code already guarantees; any other check must raise.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Every package under the one import root, found as setuptools finds them (folders with an __init__.py).
PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rwtoolkit").rglob("__init__.py")
)


def _is_narrowing(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_is_narrowing(v) for v in test.values)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def runtime_asserts(source: str, name: str = "<source>") -> list[str]:
    """``file:line`` of every assert in ``source`` that is not a type narrowing."""
    return [
        f"{name}:{node.lineno}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assert) and not _is_narrowing(node.test)
    ]


def test_the_scan_flags_checks_and_allows_narrowings():
    assert runtime_asserts("assert x is not None\nassert a is not None and b.c is not None\n") == []
    assert runtime_asserts("assert x > 0\nassert y in Z, y\nassert x is not None or y\n") == [
        "<source>:1",
        "<source>:2",
        "<source>:3",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_validate_without_assert(package):
    found = [
        hit
        for path in sorted((ROOT / package.replace(".", "/")).glob("*.py"))
        for hit in runtime_asserts(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == [], f"assert used for a runtime check (stripped by python -O): {found}"
