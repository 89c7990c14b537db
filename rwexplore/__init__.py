"""Explore any finite task for an uninformative token average (docs/theory.md#signal, #qa-tasks): ``rw explore``.

>>> from rwtasks import parse_task_spec
>>> result = explore(parse_task_spec({"task": {"family": "permutation", "params": {"m": 2}}}))
>>> check = result.points[0].checks[0]
>>> result.points[0].signal.is_zero, check.exact_verdict, check.verdict
(True, 'stuck', 'stuck-repelling')
"""

from rwexplore._explore import GENERIC_VALUES, VERDICTS, ExploreResult, Point, PointCheck, explore
from rwexplore._report import EXPLORE_FORMAT, EXPLORE_FORMAT_VERSION, explore_json, write_report
from rwexplore._signal import SignalSummary, signal_summary
from rwexplore._stuck import Manifold, OneStep, manifold_check, mean_label, one_step_check
from rwexplore._train import TrainRun, reference_accuracies, train_configs, train_runs
from rwio import deprecated_attributes as _deprecated_attributes

__all__ = [
    "EXPLORE_FORMAT",
    "EXPLORE_FORMAT_VERSION",
    "GENERIC_VALUES",
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
    "manifold_check",
    "mean_label",
    "one_step_check",
    "reference_accuracies",
    "signal_summary",
    "train_configs",
    "train_runs",
    "write_report",
]

# Kept one release (docs/changelog.md): both are members of every task now (rwtasks.Task).
__getattr__ = _deprecated_attributes(
    "rwexplore",
    {
        "task_symbols": ("task.symbols (rwtasks.Task)", lambda: lambda task: list(task.symbols)),
        "substitute": (
            "task.substitute(values) (rwtasks.Task)",
            lambda: lambda task, values: task.substitute(values),
        ),
    },
)
