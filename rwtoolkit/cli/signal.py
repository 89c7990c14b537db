"""``rw signal``: the token-average signal C of docs/theory.md#signal, its factorisation and exact vanishing set."""

from __future__ import annotations

import argparse

from rwtoolkit.cli._task_args import add_task_arguments, task_from_args
from rwtoolkit.io import check_output_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw signal``; numbers are read as strings so that bad values give one-line errors."""
    add_task_arguments(
        parser,
        "circle: clockwise probability in [0, 1] such as 7/10, or a symbol name; "
        "omitted = the symbol p (factorised entries and vanishing set in p)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also write the result as JSON (rwtoolkit/schemas/signal.schema.json)",
    )


def run(args: argparse.Namespace) -> int:
    """Build the task, print ``SignalReport.render()``, and write JSON if asked."""
    if args.json:
        check_output_file(args.json, "--json")
    task = task_from_args(args)
    from rwtoolkit.engines.exact import signal_report, write_signal_json  # SymPy loads here, not for --help

    report = signal_report(task)
    print(report.render())
    if args.json:
        path = write_signal_json(report, args.json)
        print(f"\nwrote {path}")
    return 0
