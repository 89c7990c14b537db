"""Each package's ``__all__`` is exactly its public surface (equinox/hypothesis habit)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Every package of the import root but the CLI (whose public surface is the ``rw`` command).
PACKAGES = sorted(
    name
    for name in (
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rwtoolkit").rglob("__init__.py")
    )
    if not name.startswith("rwtoolkit.cli")
)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name):
    package = importlib.import_module(name)
    exported = set(package.__all__)
    assert all(hasattr(package, item) for item in exported), "__all__ names a missing attribute"
    public = {
        item
        for item, value in vars(package).items()
        if not item.startswith("_") and not inspect.ismodule(value) and item != "annotations"
    }
    assert public == exported


def _lazy_and_type_checked(path: Path) -> tuple[set[str], set[str]]:
    """The names a package's ``_LAZY`` table loads on first use, and those it imports under ``TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    lazy: set[str] = set()
    checked: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_LAZY" for t in node.targets):
            lazy = set(eval(compile(ast.Expression(node.value), str(path), "eval")))  # a literal table
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for item in ast.walk(node):
                if isinstance(item, ast.ImportFrom):
                    checked |= {alias.asname or alias.name for alias in item.names}
    return lazy, checked


@pytest.mark.parametrize("name", PACKAGES)
def test_lazy_names_are_visible_to_static_readers(name):
    """The API reference (mkdocstrings reads the source, never imports it) finds a lazily loaded name only through
    its ``TYPE_CHECKING`` import: a name missing there fails the docs build (``rwtoolkit.models.BALL_ENGINE`` once did)."""
    path = ROOT.joinpath(*name.split("."), "__init__.py")
    lazy, checked = _lazy_and_type_checked(path)
    assert lazy <= checked, sorted(lazy - checked)
