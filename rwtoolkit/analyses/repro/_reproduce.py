"""``reproduce``: the figures asked for, then the report; one entry point for the CLI and the tests."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rwtoolkit.analyses.repro._experiments import FIGURE_NAMES, figure_specs
from rwtoolkit.analyses.repro._figures import build_figure
from rwtoolkit.analyses.repro._report import build_report
from rwtoolkit.analyses.repro._runner import Runner, default_jobs
from rwtoolkit.analyses.repro._sensitivity import build_sensitivity

#: Every target ``reproduce`` accepts; "all" is every figure followed by "sensitivity".
TARGETS = (*FIGURE_NAMES, "sensitivity", "all")


def expand_targets(targets: Sequence[str]) -> list[str]:
    """Validate and expand ``targets`` ("all" = every figure and the sensitivity study), in the paper's order.

    >>> expand_targets(["fig5", "fig4", "fig5"])
    ['fig4', 'fig5']
    """
    if not targets:
        raise ValueError(f"FIG: give at least one of {', '.join(TARGETS)}")
    for t in targets:
        if t not in TARGETS:
            raise ValueError(f"FIG={t!r} is not one of {', '.join(TARGETS)}")
    chosen = set(FIGURE_NAMES) | {"sensitivity"} if "all" in targets else set(targets)
    return [t for t in (*FIGURE_NAMES, "sensitivity") if t in chosen]


def reproduce(
    targets: Sequence[str],
    out: str | Path,
    quick: bool = False,
    jobs: int | None = None,
    progress: bool = True,
) -> dict:
    """Build ``targets`` under ``out`` (PNG + JSON per figure), then DIR/REPORT.md and DIR/report.json.

    Returns the report object; prints each target's wall time on stderr (times are not written to the
    output files, which stay identical from run to run).
    """
    names = expand_targets(targets)
    out = Path(out)
    specs = figure_specs(quick)
    with Runner(default_jobs() if jobs is None else jobs) as runner:
        for name in names:
            start = time.perf_counter()
            if name == "sensitivity":
                build_sensitivity(runner, out, quick, progress)
            else:
                build_figure(specs[name], runner, out, quick, progress)
            if progress:
                print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return build_report(out)
