"""``rw reproduce FIG... --out DIR [--quick]``: the paper's figures, REPORT.md/report.json and the sensitivity study."""

from __future__ import annotations

import argparse
import os

from rwtoolkit.io import check_memory, check_output_dir

#: What FIG accepts, for the help text (checked against ``rwtoolkit.analyses.repro.TARGETS`` by the tests; the names are
#: validated by ``rwtoolkit.analyses.repro.expand_targets`` when the command runs, so torch is not loaded for --help).
FIG_HELP = (
    "one or more of: fig2, fig4, ..., fig13, sensitivity, all (all = every figure and the sensitivity study)"
)


def max_jobs() -> int:
    """Largest --jobs: four worker processes per core. Training is CPU bound, so workers beyond the
    cores only queue, and each holds its own runs in memory; four per core leaves room for runs that
    wait on I/O while refusing values that can only be typos (--jobs 1000000)."""
    return 4 * (os.cpu_count() or 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """FIG names, the output folder, --quick and --jobs."""
    parser.add_argument("figures", nargs="+", metavar="FIG", help=FIG_HELP)
    parser.add_argument(
        "--out", required=True, help="output folder (created): DIR/<fig>/*.png, *.json, DIR/REPORT.md"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smaller data sets and fewer options (CI); keeps each figure's qualitative result",
    )
    parser.add_argument(
        "--jobs",
        default=None,
        help=f"worker processes, 1..{max_jobs()} (4 per core; default: one per core, at most 2)",
    )


def parse_jobs(text: str | None) -> int | None:
    """``--jobs`` as an integer in 1..max_jobs(), or None for the default.

    >>> parse_jobs("0")
    Traceback (most recent call last):
    ValueError: --jobs=0 is out of range: must be in 1...
    """
    if text is None:
        return None
    try:
        jobs = int(text)
    except ValueError:
        raise ValueError(f"--jobs={text!r} is not an integer: must be in 1..{max_jobs()}") from None
    if not 1 <= jobs <= max_jobs():
        raise ValueError(
            f"--jobs={jobs} is out of range: must be in 1..{max_jobs()} (4 worker processes per core)"
        )
    return jobs


def _check_memory(figures: list[str], quick: bool, jobs: int | None) -> None:
    """Refuse before any run when the largest runs that train at the same time (one per worker) would
    not fit in the memory available; each run's estimate is ``rwtoolkit.engines.numeric.memory_estimate``."""
    from rwtoolkit.analyses.repro import default_jobs, expand_targets, figure_specs, sensitivity_runs
    from rwtoolkit.engines.numeric import memory_estimate

    specs = figure_specs(quick)
    planned = []
    for name in expand_targets(figures):
        if name == "sensitivity":
            run, grid = sensitivity_runs(quick)
            planned += [(run, choices) for choices in grid]
        else:
            planned += [(run, opt) for opt in specs[name].all_options() for run in specs[name].runs]
    sizes = sorted((sum(memory_estimate(*run.build(opt)).values()) for run, opt in planned), reverse=True)
    workers = min(default_jobs() if jobs is None else jobs, len(sizes))
    check_memory(
        sum(sizes[:workers]),
        f"rw reproduce with {workers} worker process(es)",
        "use fewer workers (--jobs 1) or --quick",
    )


def run(args: argparse.Namespace) -> int:
    """Reproduce the figures asked for and print the report's summary line."""
    jobs = parse_jobs(args.jobs)
    check_output_dir(args.out, "--out", files=("REPORT.md", "report.json"))
    from rwtoolkit.analyses.repro import reproduce  # torch and matplotlib load here, not for --help

    _check_memory(args.figures, args.quick, jobs)  # also refuses an unknown FIG before any run starts
    report = reproduce(args.figures, args.out, quick=args.quick, jobs=jobs)
    s = report["summary"]
    print(f"{args.out}/REPORT.md: {s['rows']} claims, {s['agree']} agree, {s['rows'] - s['agree']} disagree")
    return 0
