"""Check your own implementation of the one-layer transformer against the exact trajectory.

``check(factory)`` runs every property (what ``rw check MODULE:FACTORY`` prints);
``assert_matches_exact(factory, config, steps)`` compares one configuration step by step;
``ConformanceTests`` is the test class to subclass under pytest; ``rwtoolkit.analyses.check.strategies`` holds the
hypothesis strategies. The model protocol is described in ``rwtoolkit.analyses.check._protocol`` and docs/check.md;
``CheckOptions(model="key_query", head_dim=d)`` (``rw check --model key_query``) checks an implementation
of another model of ``rwtoolkit.models`` against the generic exact engine (``rwtoolkit.analyses.check._models`` says what it must expose).

>>> import torch
>>> from rwtoolkit.analyses.check import Mismatch, assert_matches_exact, build_config
>>> from rwtoolkit.tasks import CircleWalk
>>> def frozen(config):  # a training loop that never moves: wrong from V(1) on
...     while True:
...         yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)
>>> cfg = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
>>> try:
...     assert_matches_exact(frozen, cfg, steps=1)
... except Mismatch as err:
...     print(err.divergence.describe())
V[0, 1] at t=1: expected 0.83333333333333337, got 0 (scaled error 0.833 > rtol 5.68e-14)

Importing ``rwtoolkit.analyses.check`` loads none of its modules: each name is imported from the module that defines it
on first use (PEP 562), so the pytest plugin (``rwtoolkit.analyses.check.pytest_plugin``, loaded by every pytest session
where the toolkit is installed) costs nothing until a test uses the kit.
"""

import importlib as _importlib
import typing as _typing

from rwtoolkit.io import schema_deprecations as _schema_deprecations

if _typing.TYPE_CHECKING:
    from rwtoolkit.analyses.check._check import (
        CheckEstimate,
        PropertyResult,
        Report,
        check,
        estimate_check,
        tolerance_rule,
        write_report,
    )
    from rwtoolkit.analyses.check._compare import (
        Divergence,
        Mismatch,
        Tolerance,
        assert_matches_exact,
        exact_trajectory,
        own_positions,
        tolerance,
    )
    from rwtoolkit.analyses.check._config import CheckConfig, build_config, for_model
    from rwtoolkit.analyses.check._emit import (
        DEFAULT_SPECS,
        FixtureSpec,
        emit_fixtures,
        estimate_fixtures,
        read_specs,
    )
    from rwtoolkit.analyses.check._properties import (
        PROPERTIES,
        CheckOptions,
        ImplementationCrash,
        first_value_step_closed_form,
    )
    from rwtoolkit.analyses.check._protocol import QUANTITIES, ImplementationError, Readouts, probe, run
    from rwtoolkit.analyses.check._settings import MODEL_CHECK_SETTINGS, CheckSettings, check_settings
    from rwtoolkit.analyses.check._testcase import ConformanceTests
    from rwtoolkit.runtime import (
        POSITION_ASSUMPTIONS,
        PROTOCOLS,
        Floats,
        Functional,
        PositionCheck,
        Supervised,
        check_positions,
        load_factory,
    )

#: The public names by the module that defines them (a module of this package, or the kit's numpy-only runtime
#: ``rwtoolkit.runtime``): each imported from there on first use.
_NAMES = {
    "_check": (
        "CheckEstimate",
        "PropertyResult",
        "Report",
        "check",
        "estimate_check",
        "tolerance_rule",
        "write_report",
    ),
    "_compare": (
        "Divergence",
        "Mismatch",
        "Tolerance",
        "assert_matches_exact",
        "exact_trajectory",
        "own_positions",
        "tolerance",
    ),
    "_config": ("CheckConfig", "build_config", "for_model"),
    "_emit": ("DEFAULT_SPECS", "FixtureSpec", "emit_fixtures", "estimate_fixtures", "read_specs"),
    "_properties": ("PROPERTIES", "CheckOptions", "ImplementationCrash", "first_value_step_closed_form"),
    "_protocol": ("QUANTITIES", "ImplementationError", "Readouts", "probe", "run"),
    "rwtoolkit.runtime": (
        "POSITION_ASSUMPTIONS",
        "PROTOCOLS",
        "Floats",
        "Functional",
        "PositionCheck",
        "Supervised",
        "check_positions",
        "load_factory",
    ),
    "_settings": ("MODEL_CHECK_SETTINGS", "CheckSettings", "check_settings"),
    "_testcase": ("ConformanceTests",),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names}

__all__ = [
    "DEFAULT_SPECS",
    "MODEL_CHECK_SETTINGS",
    "CheckEstimate",
    "CheckSettings",
    "POSITION_ASSUMPTIONS",
    "PROTOCOLS",
    "Floats",
    "Functional",
    "PositionCheck",
    "Supervised",
    "check_positions",
    "own_positions",
    "PROPERTIES",
    "QUANTITIES",
    "CheckConfig",
    "CheckOptions",
    "ConformanceTests",
    "Divergence",
    "FixtureSpec",
    "ImplementationCrash",
    "ImplementationError",
    "Mismatch",
    "PropertyResult",
    "Readouts",
    "Report",
    "Tolerance",
    "assert_matches_exact",
    "build_config",
    "check",
    "check_settings",
    "emit_fixtures",
    "estimate_check",
    "estimate_fixtures",
    "exact_trajectory",
    "first_value_step_closed_form",
    "for_model",
    "load_factory",
    "probe",
    "read_specs",
    "run",
    "tolerance",
    "tolerance_rule",
    "write_report",
]

# Kept one release (docs/changelog.md): the schema is rwtoolkit.io.load_schema("report").
_deprecated = _schema_deprecations(
    "rwtoolkit.analyses.check", {"load_report_schema": "report"}, {"REPORT_SCHEMA_PATH": "report"}
)


def __getattr__(name: str) -> _typing.Any:
    """A public name, imported from its module on first use (PEP 562); else a deprecated one."""
    module = _HOME.get(name)
    if module is None:
        return _deprecated(name)
    home = module if module.startswith("rwtoolkit.") else f"rwtoolkit.analyses.check.{module}"
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
