"""One loader for every JSON Schema the toolkit ships (issue 23, one vocabulary): ``rwio.load_schema(name)``.

The old per-package loaders and path constants keep working for one release, each with a
``DeprecationWarning`` that names its replacement, and give the same schema.
"""

from __future__ import annotations

import importlib
import tomllib
import warnings
from pathlib import Path

import jsonschema
import pytest

from rwio import SCHEMAS, load_schema, schema_path

ROOT = Path(__file__).resolve().parent.parent


def test_every_shipped_schema_has_one_name_and_is_a_valid_schema():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    shipped = {
        f"{package.replace('.', '/')}/{name}"
        for package, names in data["package-data"].items()
        for name in names
        if name.endswith(".schema.json")
    }
    assert shipped == set(SCHEMAS.values())  # no schema without a name, no name without a file
    for name in SCHEMAS:
        schema = load_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema_path(name).name == SCHEMAS[name].rpartition("/")[2]
    a = load_schema("metrics")
    a["type"] = "changed"
    assert load_schema("metrics")["type"] == "object"  # a fresh dict each call


def test_an_unknown_name_is_refused_with_the_names_there_are():
    with pytest.raises(
        ValueError, match=r"schema name 'oracle-v3' is not one of the toolkit's: certify, metrics"
    ):
        load_schema("oracle-v3")


OLD = [
    ("rwnumeric", "load_metrics_schema", "metrics"),
    ("rwcheck", "load_report_schema", "report"),
    ("rwstability", "schema", "stability"),
    ("rwstability", "generic_schema", "stability_generic"),
    ("rwtasks", "task_spec_schema", "task_spec"),
    ("rwsymbolic", "load_signal_schema", "signal"),
    ("rwsymbolic", "load_oracle_schema", "oracle"),
]
OLD_PATHS = [
    ("rwnumeric", "METRICS_SCHEMA_PATH", "metrics"),
    ("rwcheck", "REPORT_SCHEMA_PATH", "report"),
    ("rwsweep", "SCHEMA_PATH", "sweep"),
    ("rwsymbolic", "ORACLE_SCHEMA_PATH", "oracle"),
    ("rwsymbolic", "SIGNAL_SCHEMA_PATH", "signal"),
]


@pytest.mark.parametrize(("package", "old", "name"), OLD)
def test_an_old_loader_warns_and_gives_the_same_schema(package, old, name):
    module = importlib.import_module(package)
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{old} is deprecated: use rwio\.load_schema"):
        loader = getattr(module, old)
    assert loader() == load_schema(name)
    assert old not in module.__all__


@pytest.mark.parametrize(("package", "old", "name"), OLD_PATHS)
def test_an_old_path_constant_warns_and_gives_the_same_path(package, old, name):
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{old} is deprecated: use rwio\.schema_path"):
        assert getattr(importlib.import_module(package), old) == schema_path(name)


def test_the_old_oracle_loader_still_takes_a_version():
    import rwsymbolic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert rwsymbolic.load_oracle_schema(1) == load_schema("oracle-v1")


def test_a_missing_attribute_is_still_an_attribute_error():
    import rwnumeric

    with pytest.raises(AttributeError, match="module 'rwnumeric' has no attribute 'load_metric_schema'"):
        rwnumeric.load_metric_schema  # noqa: B018
