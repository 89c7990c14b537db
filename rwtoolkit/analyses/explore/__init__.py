"""Explore any finite task for an uninformative token average (docs/theory.md#signal, #qa-tasks): ``rw explore``.

>>> from rwtoolkit.tasks import parse_task_spec
>>> result = explore(parse_task_spec({"task": {"family": "permutation", "params": {"m": 2}}}))
>>> check = result.points[0].checks[0]
>>> result.points[0].signal.is_zero, check.exact_verdict, check.verdict
(True, 'stuck', 'stuck-repelling')
"""

from rwtoolkit.analyses.explore._explore import (
    EXPLORE_WORDS,
    GENERIC_VALUES,
    MODEL_CHECKS,
    ONE_LAYER_CHECKS,
    VERDICTS,
    ExploreResult,
    Point,
    PointCheck,
    explore,
    is_one_layer,
)
from rwtoolkit.analyses.explore._report import (
    EXPLORE_FORMAT,
    EXPLORE_FORMAT_VERSION,
    explore_json,
    model_lines,
    write_report,
)
from rwtoolkit.analyses.explore._signal import SignalSummary, signal_summary
from rwtoolkit.analyses.explore._stuck import Manifold, OneStep, manifold_check, mean_label, one_step_check
from rwtoolkit.analyses.explore._train import TrainRun, reference_accuracies, train_configs, train_runs
from rwtoolkit.io import deprecated_attributes as _deprecated_attributes

__all__ = [
    "EXPLORE_FORMAT",
    "EXPLORE_FORMAT_VERSION",
    "EXPLORE_WORDS",
    "GENERIC_VALUES",
    "MODEL_CHECKS",
    "ONE_LAYER_CHECKS",
    "VERDICTS",
    "ExploreResult",
    "Manifold",
    "OneStep",
    "Point",
    "PointCheck",
    "SignalSummary",
    "TrainRun",
    "explore",
    "explore_json",
    "is_one_layer",
    "manifold_check",
    "mean_label",
    "model_lines",
    "one_step_check",
    "reference_accuracies",
    "signal_summary",
    "train_configs",
    "train_runs",
    "write_report",
]

# Kept one release (docs/changelog.md): both are members of every task now (rwtoolkit.tasks.Task).
__getattr__ = _deprecated_attributes(
    "rwtoolkit.analyses.explore",
    {
        "task_symbols": ("task.symbols (rwtoolkit.tasks.Task)", lambda: lambda task: list(task.symbols)),
        "substitute": (
            "task.substitute(values) (rwtoolkit.tasks.Task)",
            lambda: lambda task, values: task.substitute(values),
        ),
    },
)
