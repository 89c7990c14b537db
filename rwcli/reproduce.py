"""``rw reproduce FIG... --out DIR [--quick]``: the paper's figures, REPORT.md/report.json and the sensitivity study."""

from __future__ import annotations

import argparse
from pathlib import Path

from rwrepro import TARGETS, default_jobs, reproduce


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """FIG names, the output folder, --quick and --jobs."""
    parser.add_argument("figures", nargs="+", metavar="FIG",
                        help=f"one or more of: {', '.join(TARGETS)} (all = every figure and the sensitivity study)")  # fmt: skip
    parser.add_argument("--out", required=True, help="output folder (created): DIR/<fig>/*.png, *.json, DIR/REPORT.md")
    parser.add_argument("--quick", action="store_true",
                        help="smaller data sets and fewer options (CI); keeps each figure's qualitative result")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=None,
                        help=f"worker processes, >= 1 (default {default_jobs()}: one per core, at most 2)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Reproduce the figures asked for and print the report's summary line."""
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs={args.jobs} is out of range: must be >= 1")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"--out={args.out} exists and is not a folder")
    report = reproduce(args.figures, args.out, quick=args.quick, jobs=args.jobs)
    s = report["summary"]
    print(f"{args.out}/REPORT.md: {s['rows']} claims, {s['agree']} agree, {s['rows'] - s['agree']} disagree")
    return 0
