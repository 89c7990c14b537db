"""Every JSON Schema the toolkit ships, by one name each, through one loader: ``load_schema(name)``.

Every schema lives in one folder, ``rwtoolkit/schemas/`` (``metrics.schema.json`` describes the
``metrics.json`` of ``rw train``), and ``SCHEMAS`` names each by its file's stem. Reading one imports no
other package, so ``rwtoolkit.io`` stays the lowest layer of the import graph.

The loaders and path constants each package had before (``load_metrics_schema``, ``rwtoolkit.analyses.stability.schema``,
``REPORT_SCHEMA_PATH``, ...) keep working for one release through ``schema_deprecations``, with a
``DeprecationWarning`` naming the call that replaces them (docs/changelog.md).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

#: The folder of every schema the toolkit ships.
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
#: name -> the schema's file in ``SCHEMA_DIR``.
SCHEMAS: dict[str, str] = {
    name: f"{name}.schema.json"
    for name in (
        "certify",
        "metrics",
        "oracle",
        "oracle-v1",
        "oracle-v2",
        "report",
        "signal",
        "stability",
        "sweep",
        "task_spec",
        "zoo",
    )
}


def _check(name: object) -> str:
    if not isinstance(name, str) or name not in SCHEMAS:
        raise ValueError(f"schema name {name!r} is not one of the toolkit's: {', '.join(sorted(SCHEMAS))}")
    return name


def schema_path(name: str) -> Path:
    """The installed file of the schema ``name`` (one of ``SCHEMAS``).

    >>> schema_path("metrics").name
    'metrics.schema.json'
    """
    return SCHEMA_DIR / SCHEMAS[_check(name)]


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) ``name``, a fresh dict at each call (the caller may change it).

    >>> sorted(load_schema("sweep"))[:3]
    ['$defs', '$id', '$schema']
    >>> load_schema("metric")
    Traceback (most recent call last):
    ...
    ValueError: schema name 'metric' is not one of the toolkit's: certify, metrics, oracle, oracle-v1, oracle-v2, report, signal, stability, sweep, task_spec, zoo
    """
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def deprecated_attributes(
    package: str, table: dict[str, tuple[str, Callable[[], Any]]]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names kept one release: each access warns and names the replacement.

    ``table`` maps an old name to (its replacement, as the warning says it, and a function making its value).

    >>> getattr_ = deprecated_attributes("rwtoolkit.engines.numeric", {"load_metrics_schema": (
    ...     "rwtoolkit.io.load_schema('metrics')", lambda: lambda: load_schema("metrics"))})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     same = getattr_("load_metrics_schema")() == load_schema("metrics")
    >>> same, str(caught[0].message)
    (True, "rwtoolkit.engines.numeric.load_metrics_schema is deprecated: use rwtoolkit.io.load_schema('metrics')")
    """

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        replacement, value = table[name]
        warnings.warn(f"{package}.{name} is deprecated: use {replacement}", DeprecationWarning, stacklevel=2)
        return value()

    return __getattr__


def schema_deprecations(
    package: str, loaders: dict[str, str], paths: dict[str, str] | None = None
) -> Callable[[str], Any]:
    """``deprecated_attributes`` for a package's old schema loaders (old function -> schema name) and path
    constants (old constant -> schema name).

    >>> getattr_ = schema_deprecations("rwtoolkit.analyses.check", {"load_report_schema": "report"}, {"REPORT_SCHEMA_PATH": "report"})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     getattr_("REPORT_SCHEMA_PATH") == schema_path("report"), getattr_("load_report_schema")()["type"]
    (True, 'object')
    """
    table: dict[str, tuple[str, Callable[[], Any]]] = {}
    for old, name in loaders.items():
        table[old] = (f"rwtoolkit.io.load_schema({_check(name)!r})", partial(partial, load_schema, name))
    for old, name in (paths or {}).items():
        table[old] = (f"rwtoolkit.io.schema_path({_check(name)!r})", partial(schema_path, name))
    return deprecated_attributes(package, table)
