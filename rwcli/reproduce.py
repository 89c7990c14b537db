"""``rw reproduce FIG... --out DIR [--quick]``: the paper's figures, REPORT.md/report.json and the sensitivity study."""

from __future__ import annotations

import argparse
import os

from rwio import check_output_dir

#: What FIG accepts, for the help text (checked against ``rwrepro.TARGETS`` by the tests; the names are
#: validated by ``rwrepro.expand_targets`` when the command runs, so torch is not loaded for --help).
FIG_HELP = "one or more of: fig2, fig4, ..., fig13, sensitivity, all (all = every figure and the sensitivity study)"


def max_jobs() -> int:
    """Largest --jobs: four worker processes per core. Training is CPU bound, so workers beyond the
    cores only queue, and each holds its own runs in memory; four per core leaves room for runs that
    wait on I/O while refusing values that can only be typos (--jobs 1000000)."""
    return 4 * (os.cpu_count() or 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """FIG names, the output folder, --quick and --jobs."""
    parser.add_argument("figures", nargs="+", metavar="FIG", help=FIG_HELP)
    parser.add_argument("--out", required=True, help="output folder (created): DIR/<fig>/*.png, *.json, DIR/REPORT.md")
    parser.add_argument("--quick", action="store_true",
                        help="smaller data sets and fewer options (CI); keeps each figure's qualitative result")  # fmt: skip
    parser.add_argument("--jobs", default=None,
                        help=f"worker processes, 1..{max_jobs()} (4 per core; default: one per core, at most 2)")  # fmt: skip


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
        raise ValueError(f"--jobs={jobs} is out of range: must be in 1..{max_jobs()} (4 worker processes per core)")
    return jobs


def run(args: argparse.Namespace) -> int:
    """Reproduce the figures asked for and print the report's summary line."""
    jobs = parse_jobs(args.jobs)
    check_output_dir(args.out, "--out", files=("REPORT.md", "report.json"))
    from rwrepro import expand_targets, reproduce  # torch and matplotlib load here, not for --help

    expand_targets(args.figures)  # an unknown FIG is refused before any run starts
    report = reproduce(args.figures, args.out, quick=args.quick, jobs=jobs)
    s = report["summary"]
    print(f"{args.out}/REPORT.md: {s['rows']} claims, {s['agree']} agree, {s['rows'] - s['agree']} disagree")
    return 0
