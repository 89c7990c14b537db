"""Each package's ``__all__`` is exactly its public surface (equinox/hypothesis habit)."""

from __future__ import annotations

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
