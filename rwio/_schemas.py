"""Every JSON Schema the toolkit ships, by one name each, through one loader: ``load_schema(name)``.

A schema lives beside the package whose files it describes (``rwnumeric/metrics.schema.json`` beside the
writer of ``metrics.json``), and ``SCHEMAS`` names it by the file's stem. The path is found without
importing that package (``importlib.util.find_spec`` of the top-level package), so ``rwio`` stays the
lowest layer of the import graph.

The loaders and path constants each package had before (``load_metrics_schema``, ``rwstability.schema``,
``REPORT_SCHEMA_PATH``, ...) keep working for one release through ``schema_deprecations``, with a
``DeprecationWarning`` naming the call that replaces them (docs/changelog.md).
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

#: name -> the schema file, relative to the folder that holds the installed packages.
SCHEMAS: dict[str, str] = {
    "certify": "rwcertify/certify.schema.json",
    "metrics": "rwnumeric/metrics.schema.json",
    "oracle": "rwsymbolic/oracle/oracle.schema.json",
    "oracle-v1": "rwsymbolic/oracle/oracle-v1.schema.json",
    "oracle-v2": "rwsymbolic/oracle/oracle-v2.schema.json",
    "report": "rwcheck/report.schema.json",
    "signal": "rwsymbolic/analysis/signal.schema.json",
    "stability": "rwstability/stability.schema.json",
    "stability_generic": "rwstability/stability_generic.schema.json",
    "sweep": "rwsweep/sweep.schema.json",
    "task_spec": "rwtasks/task_spec.schema.json",
    "zoo": "rwzoo/zoo.schema.json",
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
    package, _, rest = SCHEMAS[_check(name)].partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"schema {name!r}: the package {package} is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / rest


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) ``name``, a fresh dict at each call (the caller may change it).

    >>> sorted(load_schema("sweep"))[:3]
    ['$defs', '$id', '$schema']
    >>> load_schema("metric")
    Traceback (most recent call last):
    ...
    ValueError: schema name 'metric' is not one of the toolkit's: certify, metrics, oracle, oracle-v1, oracle-v2, report, signal, stability, stability_generic, sweep, task_spec, zoo
    """
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def deprecated_attributes(
    package: str, table: dict[str, tuple[str, Callable[[], Any]]]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names kept one release: each access warns and names the replacement.

    ``table`` maps an old name to (its replacement, as the warning says it, and a function making its value).

    >>> getattr_ = deprecated_attributes("rwnumeric", {"load_metrics_schema": (
    ...     "rwio.load_schema('metrics')", lambda: lambda: load_schema("metrics"))})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     same = getattr_("load_metrics_schema")() == load_schema("metrics")
    >>> same, str(caught[0].message)
    (True, "rwnumeric.load_metrics_schema is deprecated: use rwio.load_schema('metrics')")
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

    >>> getattr_ = schema_deprecations("rwcheck", {"load_report_schema": "report"}, {"REPORT_SCHEMA_PATH": "report"})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     getattr_("REPORT_SCHEMA_PATH") == schema_path("report"), getattr_("load_report_schema")()["type"]
    (True, 'object')
    """
    table: dict[str, tuple[str, Callable[[], Any]]] = {}
    for old, name in loaders.items():
        table[old] = (f"rwio.load_schema({_check(name)!r})", partial(partial, load_schema, name))
    for old, name in (paths or {}).items():
        table[old] = (f"rwio.schema_path({_check(name)!r})", partial(schema_path, name))
    return deprecated_attributes(package, table)
