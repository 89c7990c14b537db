"""pyproject.toml: the runtime dependencies are what the packages import, and package data names real files."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: Imported under another name than the distribution's, or pulled in by a declared dependency.
IMPORT_TO_DIST = {
    "mpmath": "sympy",  # a dependency of sympy, imported for its precision control
    "flint": "python-flint",
    "yaml": "pyyaml",
}
#: Declared although no package in this list imports it: none today (the public testing package imports
#: hypothesis itself, so it is checked like the rest).
IMPORTED_ELSEWHERE: set[str] = set()
#: Modules that only a host program loads, which brings the import with it: the pytest plugin runs
#: inside pytest, so pytest is not a runtime dependency of the toolkit.
HOSTED = {
    Path("rwtoolkit/analyses/check/pytest_plugin.py"): {"pytest"},
    # The frozen fixtures' test file: copied out by rw check --emit, run by pytest beside its runtime copy.
    Path("rwtoolkit/analyses/check/_fixture_test.py"): {"pytest", "rwcheck_runtime"},
    # The JAX tracer runs only on a JAX factory the user's own code built (JAX is the `jax` extra).
    Path("rwtoolkit/models/traced/_jax.py"): {"jax"},
}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower()


def _third_party_imports() -> set[str]:
    found = set()
    for path in (ROOT / "rwtoolkit").rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found |= names - HOSTED.get(path.relative_to(ROOT), set())
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("rwtoolkit", "__future__")}


def test_runtime_dependencies_are_exactly_what_the_packages_import():
    declared = {_name(r) for r in CONFIG["project"]["dependencies"]}
    imported = {IMPORT_TO_DIST.get(m, m) for m in _third_party_imports()}
    assert imported <= declared, f"imported but not declared: {sorted(imported - declared)}"
    assert declared - imported <= IMPORTED_ELSEWHERE, (
        f"declared but never imported: {sorted(declared - imported)}"
    )


def _extra(name: str) -> set[str]:
    """The distributions of an extra, its own references (``rwtoolkit[kit]``) expanded."""
    names = set()
    for requirement in CONFIG["project"]["optional-dependencies"][name]:
        own = re.fullmatch(r"rwtoolkit\[(\w+)\]", requirement)
        names |= _extra(own.group(1)) if own else {_name(requirement)}
    return names


def test_test_notebook_and_docs_packages_are_extras_only():
    declared = {_name(r) for r in CONFIG["project"]["dependencies"]}
    extras = CONFIG["project"]["optional-dependencies"]
    assert declared.isdisjoint(
        {"pytest", "nbclient", "nbformat", "ipykernel", "ruff", "mypy", "build", "mutmut"}
    )
    assert {"nbclient", "nbformat", "ipykernel"} <= {_name(r) for r in extras["notebooks"]}
    assert {"pytest", "ruff", "mypy", "build", "mutmut"} <= _extra("test")


def test_the_distribution_installs_one_import_root_with_every_package_under_it():
    """setuptools' automatic discovery ([tool.setuptools.packages.find]) finds every folder of rwtoolkit/ with
    an __init__.py, and nothing beside it (issue 40: one import root)."""
    from setuptools import find_packages

    found = find_packages(where=str(ROOT), **CONFIG["tool"]["setuptools"]["packages"]["find"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rwtoolkit").rglob("__init__.py")}
    assert set(found) == on_disk and {name.split(".")[0] for name in found} == {"rwtoolkit"}


def test_every_package_data_entry_names_an_existing_file():
    for package, names in CONFIG["tool"]["setuptools"]["package-data"].items():
        for name in names:
            assert list((ROOT / package.replace(".", "/")).glob(name)), (
                f"package-data {package}: {name!r} matches no file"
            )
