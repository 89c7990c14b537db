"""The import graph of the installed packages has no cycle (issue 23: the folders tell the layers).

Every ``import`` and ``from … import`` of every module counts, those inside functions included (an
import deferred into a function to dodge a cycle is still a dependency); only imports under
``if TYPE_CHECKING:`` (annotations, never executed) are left out. Modules are nodes; a package's
``__init__`` is the package's node.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
    "packages"
]


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package.replace(".", "/")).glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return skip


def import_graph(sources: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports (names resolved to the longest known module)."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in sources:
                return ".".join(parts[:i])
        return None

    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, text in sources.items():
        tree = ast.parse(text)
        skip = _type_checking_nodes(tree)
        package = module if module in packages else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            found: list[str | None] = []
            if isinstance(node, ast.Import):
                found = [resolve(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                found = [resolve(f"{base}.{a.name}") or resolve(base) for a in node.names]
            graph[module] |= {f for f in found if f is not None and f != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_the_installed_packages():
    sources = {m: p.read_text(encoding="utf-8") for m, p in _modules().items()}
    assert len(sources) > 100
    assert cycles(import_graph(sources, set(PACKAGES))) == []


def test_a_planted_cycle_is_found_also_through_a_function_level_import():
    sources = {
        "pkg": "",
        "pkg.a": "from pkg.b import x\n",
        "pkg.b": "def f():\n    from pkg.c import y\n",
        "pkg.c": "import pkg.a\n",
        "pkg.d": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import z\n",
        "pkg.e": "from . import d\n",
    }
    graph = import_graph(sources, {"pkg"})
    assert graph["pkg.d"] == set() and graph["pkg.e"] == {"pkg.d"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
