"""``rw explore SPEC``: is a task's token average informative, and does GD stay stuck? (docs/theory.md#signal, #qa-tasks)."""

from __future__ import annotations

import argparse
import sys

from rwexplore import explore, write_report
from rwtasks import load_task_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw explore``; the task and its settings live in the JSON spec file."""
    parser.add_argument("spec", metavar="SPEC",
                        help="task specification file (JSON, schema rwtasks/task_spec.schema.json)")  # fmt: skip
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for REPORT.md, explore.json and plots (created if missing)")  # fmt: skip
    parser.add_argument("--train", action="store_true",
                        help="also train numerically from zero and from Gaussian init (sigmas in the spec)")  # fmt: skip
    parser.add_argument("--steps", help="exact GD steps of the stuck-manifold check, 1..8 (overrides the spec)")


def run(args: argparse.Namespace) -> int:
    """Parse the spec, run ``rwexplore.explore`` and write the report atomically."""
    spec = load_task_spec(args.spec)
    if args.steps is not None:
        try:
            steps = int(args.steps)
        except ValueError:
            raise ValueError(f"--steps={args.steps!r} is not an integer: steps must be in 1..8") from None
        if not 1 <= steps <= 8:
            raise ValueError(f"--steps={steps} is out of range: steps must be in 1..8")
        spec.explore["steps"] = steps
    result = explore(spec, train=args.train, progress=sys.stderr.isatty())
    written = write_report(result, args.out)
    for point in result.points:
        for check in point.checks:
            values = ", ".join(f"{k}={v}" for k, v in {**point.params, **check.values}.items())
            print(f"{spec.name} {values or '(as given)'}: {check.verdict} ({check.reason})")
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return 0
