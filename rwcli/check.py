"""``rw check MODULE:FACTORY``: check your own implementation against the exact trajectory (rwcheck)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw check``; numbers are read as strings so that bad values give one-line errors."""
    parser.add_argument(
        "target",
        metavar="MODULE:FACTORY",
        help="the factory config -> implementation, as module:name or path/to/file.py:name",
    )
    parser.add_argument("--steps", default="2", help="GD steps T checked, t = 0..T (0..4, default 2)")
    parser.add_argument(
        "--examples", default="10", help="hypothesis examples per property (>= 1, default 10)"
    )
    parser.add_argument(
        "--dtype", default="float64", choices=("float64", "float32"), help="dtype (default float64)"
    )
    parser.add_argument(
        "--task",
        default="circle",
        choices=("circle", "finite", "any"),
        help="configurations drawn: circle walks (K 3..5, N 2..5; default), small finite tasks, or either",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the report as JSON (rwcheck/report.schema.json)"
    )


def run(args: argparse.Namespace) -> int:
    """Validate the options, probe the implementation, run every property, print the report; exit 0/1/2."""
    from rwcli._task_args import parse_int
    from rwio import check_output_file

    if args.json:
        check_output_file(args.json, "--json")  # before any work
    steps = parse_int(args.steps, "steps", 0)
    examples = parse_int(args.examples, "examples", 1)
    from tqdm import tqdm

    from rwcheck import PROPERTIES, CheckOptions, check, load_factory, write_report

    options = CheckOptions(steps=steps, examples=examples, dtype=args.dtype, task=args.task)
    factory = load_factory(args.target)
    bar = tqdm(total=len(PROPERTIES), disable=not sys.stderr.isatty(), desc="rw check", unit="property")

    def progress(pid: str) -> None:  # called as each property starts
        if pid != PROPERTIES[0].id:
            bar.update(1)
        bar.set_postfix_str(pid)

    try:
        report = check(factory, options, args.target, progress=progress)
        bar.update(bar.total - bar.n)
    finally:
        bar.close()
    print(report.render())
    if args.json:
        print(f"\nwrote {write_report(report, args.json)}")
    return report.exit_code
