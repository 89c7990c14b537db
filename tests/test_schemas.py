"""One loader for every JSON Schema the toolkit ships (issue 23, one vocabulary): ``rwtoolkit.io.load_schema(name)``.

The old per-package loaders and path constants keep working for one release, each with a
``DeprecationWarning`` that names its replacement, and give the same schema.
"""

from __future__ import annotations

import importlib
import warnings

import jsonschema
import pytest

from rwtoolkit.io import SCHEMAS, load_schema, schema_path


def test_every_shipped_schema_has_one_name_and_is_a_valid_schema():
    shipped = {path.name for path in schema_path("metrics").parent.glob("*.schema.json")}
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
    ("rwtoolkit.engines.numeric", "load_metrics_schema", "metrics"),
    ("rwtoolkit.analyses.check", "load_report_schema", "report"),
    ("rwtoolkit.analyses.stability", "schema", "stability"),
    ("rwtoolkit.analyses.stability", "generic_schema", "stability"),  # merged into the one stability schema
    ("rwtoolkit.tasks", "task_spec_schema", "task_spec"),
    ("rwtoolkit.engines.exact", "load_signal_schema", "signal"),
    ("rwtoolkit.engines.exact", "load_oracle_schema", "oracle"),
]
OLD_PATHS = [
    ("rwtoolkit.engines.numeric", "METRICS_SCHEMA_PATH", "metrics"),
    ("rwtoolkit.analyses.check", "REPORT_SCHEMA_PATH", "report"),
    ("rwtoolkit.analyses.sweep", "SCHEMA_PATH", "sweep"),
    ("rwtoolkit.engines.exact", "ORACLE_SCHEMA_PATH", "oracle"),
    ("rwtoolkit.engines.exact", "SIGNAL_SCHEMA_PATH", "signal"),
]


@pytest.mark.parametrize(("package", "old", "name"), OLD)
def test_an_old_loader_warns_and_gives_the_same_schema(package, old, name):
    module = importlib.import_module(package)
    with pytest.warns(
        DeprecationWarning, match=rf"{package}\.{old} is deprecated: use rwtoolkit.io\.load_schema"
    ):
        loader = getattr(module, old)
    assert loader() == load_schema(name)
    assert old not in module.__all__


@pytest.mark.parametrize(("package", "old", "name"), OLD_PATHS)
def test_an_old_path_constant_warns_and_gives_the_same_path(package, old, name):
    with pytest.warns(
        DeprecationWarning, match=rf"{package}\.{old} is deprecated: use rwtoolkit.io\.schema_path"
    ):
        assert getattr(importlib.import_module(package), old) == schema_path(name)


def test_the_old_oracle_loader_still_takes_a_version():
    import rwtoolkit.engines.exact

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert rwtoolkit.engines.exact.load_oracle_schema(1) == load_schema("oracle-v1")


def test_a_missing_attribute_is_still_an_attribute_error():
    import rwtoolkit.engines.numeric

    with pytest.raises(
        AttributeError, match="module 'rwtoolkit.engines.numeric' has no attribute 'load_metric_schema'"
    ):
        rwtoolkit.engines.numeric.load_metric_schema  # noqa: B018
