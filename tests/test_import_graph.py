"""The import graph of the installed packages has no cycle, and no module reaches into another's privates.

Issue 23 (the folders tell the layers). Every ``import`` and ``from … import`` of every module counts:
those inside functions (an import deferred into a function to dodge a cycle is still a dependency) and
those under ``if TYPE_CHECKING:`` (a cycle held together by annotations is still a cycle). Modules are
nodes; a package's ``__init__`` is the package's node. Two more rules keep the layers' faces honest:

* no private name (``_x``) is imported from another module: what two modules share has a public name;
* no module imports a private module (a path part ``_x``) of another component (``rwtoolkit.io``,
  ``rwtoolkit.engines.exact``, ``rwtoolkit.analyses.check``, ...): components talk through each other's
  ``__init__`` (``from rwtoolkit.engines.exact import make_loss``), or a public subpackage;
* no import runs up the layers (issue 40): runtime (0), io (1), tasks and models (2), engines (3), analyses (4),
  cli (5); a module imports only from its own layer or the layers below, so the check kit's numpy-only runtime
  (0) imports nothing of the toolkit: ``rw check --emit`` copies its folder as it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Every package under the one import root, found as setuptools finds them (folders with an __init__.py).
PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rwtoolkit").rglob("__init__.py")
)


#: The layers of the one import root, bottom up (docs/guide/architecture.md).
LAYERS = {
    "rwtoolkit.runtime": 0,
    "rwtoolkit.io": 1,
    "rwtoolkit.tasks": 2,
    "rwtoolkit.models": 2,
    "rwtoolkit.engines": 3,
    "rwtoolkit.analyses": 4,
    "rwtoolkit.cli": 5,
}


def component(module: str) -> str:
    """The unit packages talk to each other through: ``rwtoolkit.io``, ``rwtoolkit.engines.exact``, ...

    >>> component("rwtoolkit.engines.exact.engine._cost"), component("rwtoolkit.io._read"), component("pkg._a")
    ('rwtoolkit.engines.exact', 'rwtoolkit.io', 'pkg')
    """
    parts = module.split(".")
    if parts[0] != "rwtoolkit":
        return parts[0]
    return ".".join(parts[: 3 if len(parts) > 2 and parts[1] in ("engines", "analyses") else 2])


def layer(module: str) -> int:
    """The layer of a module (0 for the root package ``rwtoolkit`` itself)."""
    return max(
        (n for prefix, n in LAYERS.items() if module == prefix or module.startswith(prefix + ".")), default=0
    )


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package.replace(".", "/")).glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _imports(sources: dict[str, str], packages: set[str]):
    """(module, imported module, imported name or None) for every import of ``sources`` into ``sources``."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in sources:
                return ".".join(parts[:i])
        return None

    for module, text in sources.items():
        package = module if module in packages else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for a in node.names:
                    target = resolve(a.name)
                    if target is not None and target != module:
                        yield module, target, None
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    submodule = f"{base}.{a.name}"
                    if submodule in sources:
                        yield module, submodule, None  # a module, not a name
                    elif (target := resolve(base)) is not None and target != module:
                        yield module, target, a.name


def import_graph(sources: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports (names resolved to the longest known module)."""
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, target, _ in _imports(sources, packages):
        graph[module].add(target)
    return graph


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_reaches(sources: dict[str, str], packages: set[str]) -> list[str]:
    """Every import of a private name from another module, or of another top-level package's private module."""
    found = []
    for module, target, name in _imports(sources, packages):
        if name is not None and _private(name):
            found.append(f"{module} imports the private name {name} from {target}")
        if component(target) != component(module) and any(
            _private(p) for p in target[len(component(target)) :].split(".")
        ):
            found.append(f"{module} imports {target}, a private module of another package")
    return sorted(set(found))


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


def test_no_import_runs_up_the_layers():
    sources = {m: p.read_text(encoding="utf-8") for m, p in _modules().items()}
    upward = sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in import_graph(sources, set(PACKAGES)).items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_a_planted_cycle_is_found_also_through_a_function_level_import():
    sources = {
        "pkg": "",
        "pkg.a": "from pkg.b import x\n",
        "pkg.b": "def f():\n    from pkg.c import y\n",
        "pkg.c": "import pkg.a\n",
        "pkg.d": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import z\n",
        "pkg.e": "from . import d\n",
    }
    graph = import_graph(sources, {"pkg"})
    assert graph["pkg.d"] == {"pkg.e"} and graph["pkg.e"] == {"pkg.d"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]  # annotations count too


def test_no_module_reaches_into_another_modules_privates():
    sources = {m: p.read_text(encoding="utf-8") for m, p in _modules().items()}
    assert private_reaches(sources, set(PACKAGES)) == []


def test_a_planted_private_reach_is_found():
    sources = {
        "pkg": "from pkg._a import public\n",
        "pkg._a": "def public(): ...\ndef _helper(): ...\n",
        "pkg._b": "from pkg._a import _helper, public\n",  # a private name across modules
        "pkg._c": "from pkg import _a\n",  # a private module of its own package: allowed
        "other": "",
        "other._d": "from pkg._a import public\n",  # another package's private module
        "other._e": "def f():\n    from pkg import public\n",  # through the face: allowed
    }
    assert private_reaches(sources, {"pkg", "other"}) == [
        "other._d imports pkg._a, a private module of another package",
        "pkg._b imports the private name _helper from pkg._a",
    ]
