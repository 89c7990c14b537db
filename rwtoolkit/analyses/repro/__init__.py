"""Reproduce the paper's experiments (docs/reproduction.md#experiments): figures, a claim-by-claim report, and the sensitivity study.

``reproduce(["fig4", "fig5"], "out")`` trains the runs of each figure under its main option and under
every other value of the paper's unstated choices, draws the panels, writes the raw series as JSON
and rebuilds ``out/REPORT.md`` / ``out/report.json``. ``rw reproduce`` is the command-line front end.
"""

from rwtoolkit.analyses.repro._claims import (
    Row,
    accuracy_tolerance,
    first_step,
    first_step_staying,
    support_matches,
)
from rwtoolkit.analyses.repro._experiments import (
    FIGURE_NAMES,
    MU_OPTIONS,
    Choices,
    FigureSpec,
    RunSpec,
    figure_specs,
    sensitivity_runs,
)
from rwtoolkit.analyses.repro._report import REPORT_KEYS, build_report
from rwtoolkit.analyses.repro._reproduce import TARGETS, expand_targets, reproduce
from rwtoolkit.analyses.repro._runner import Runner, default_jobs, run_one
from rwtoolkit.analyses.repro._sensitivity import break_steps

__all__ = [
    "FIGURE_NAMES",
    "MU_OPTIONS",
    "REPORT_KEYS",
    "TARGETS",
    "Choices",
    "FigureSpec",
    "Row",
    "RunSpec",
    "Runner",
    "accuracy_tolerance",
    "break_steps",
    "build_report",
    "default_jobs",
    "expand_targets",
    "figure_specs",
    "first_step",
    "first_step_staying",
    "reproduce",
    "run_one",
    "sensitivity_runs",
    "support_matches",
]
